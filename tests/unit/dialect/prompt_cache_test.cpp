#include <tokenradar/dialect/prompt_cache.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::dialect {
namespace {

constexpr std::string_view kMark = kEphemeralCacheControl;

Message text_message(Role role, std::string text) {
    Message m;
    m.role = role;
    m.content.push_back(ContentPart::make_text(std::move(text)));
    return m;
}

ToolDefinition tool(std::string name, std::size_t schema_bytes) {
    ToolDefinition t;
    t.name = std::move(name);
    t.parameters = std::string(schema_bytes, 's');
    return t;
}

// `bytes` of text: bytes / 4 tokens.
std::string text_of(std::size_t bytes) { return std::string(bytes, 'x'); }

TEST(PromptCache, ParsesTheConfigValues) {
    EXPECT_EQ(parse_prompt_cache("off"), PromptCache::off);
    EXPECT_EQ(parse_prompt_cache("auto"), PromptCache::automatic);
    EXPECT_FALSE(parse_prompt_cache("on"));
    EXPECT_FALSE(parse_prompt_cache(""));
    EXPECT_EQ(to_string(PromptCache::automatic), "auto");
    EXPECT_EQ(to_string(PromptCache::off), "off");
}

TEST(PromptCache, LongToolsAndSystemGetABreakpointEach) {
    ChatRequest req;
    req.tools = {tool("a", 100), tool("b", 4096)};
    req.messages = {text_message(Role::system, "short rules"),
                    text_message(Role::user, "question")};
    EXPECT_FALSE(has_cache_control(req));
    EXPECT_EQ(add_prompt_cache_breakpoints(req), 2);
    EXPECT_TRUE(req.tools[0].cache_control.empty());
    EXPECT_EQ(req.tools[1].cache_control, kMark);
    EXPECT_EQ(req.messages[0].content[0].cache_control, kMark);
    // A single user turn: nothing before it but tools and system.
    EXPECT_TRUE(req.messages[1].content[0].cache_control.empty());
    EXPECT_TRUE(has_cache_control(req));
}

TEST(PromptCache, TheThresholdIsTheEstimatedPrefix) {
    // 4,092 bytes = 1,023 tokens: one short of Anthropic's minimum; 4,093 bytes round up.
    ChatRequest short_req;
    short_req.messages = {text_message(Role::system, text_of(4092)), text_message(Role::user, "q")};
    EXPECT_EQ(add_prompt_cache_breakpoints(short_req), 0);
    EXPECT_FALSE(has_cache_control(short_req));
    ChatRequest long_req;
    long_req.messages = {text_message(Role::system, text_of(4093)), text_message(Role::user, "q")};
    EXPECT_EQ(add_prompt_cache_breakpoints(long_req), 1);
    EXPECT_EQ(long_req.messages[0].content[0].cache_control, kMark);
    // The tools count toward the system's prefix (Anthropic caches tools, then system).
    ChatRequest both;
    both.tools = {tool("t", 2048)};
    both.messages = {text_message(Role::system, text_of(2048)), text_message(Role::user, "q")};
    EXPECT_EQ(add_prompt_cache_breakpoints(both), 1);
    EXPECT_TRUE(both.tools[0].cache_control.empty());
    EXPECT_EQ(both.messages[0].content[0].cache_control, kMark);
    // A lower minimum (a model with another threshold).
    ChatRequest custom;
    custom.messages = {text_message(Role::system, text_of(400)), text_message(Role::user, "q")};
    EXPECT_EQ(add_prompt_cache_breakpoints(custom, 100), 1);
}

TEST(PromptCache, AClientsOwnMarksStandAlone) {
    ChatRequest req;
    req.tools = {tool("a", 8000)};
    req.messages = {text_message(Role::system, text_of(8000)), text_message(Role::user, "q")};
    req.messages[1].content[0].cache_control = R"({"type":"ephemeral","ttl":"1h"})";
    EXPECT_EQ(add_prompt_cache_breakpoints(req), 0);
    EXPECT_TRUE(req.tools[0].cache_control.empty());
    EXPECT_TRUE(req.messages[0].content[0].cache_control.empty());
    EXPECT_EQ(req.messages[1].content[0].cache_control, R"({"type":"ephemeral","ttl":"1h"})");
}

TEST(PromptCache, MultiTurnMarksTheLastBlockBeforeTheFinalUserTurn) {
    ChatRequest req;
    req.messages = {text_message(Role::system, "be brief"), text_message(Role::user, text_of(5000)),
                    text_message(Role::assistant, "answer one"),
                    text_message(Role::user, "and then?")};
    EXPECT_EQ(add_prompt_cache_breakpoints(req), 1);  // the system prompt alone is short
    EXPECT_TRUE(req.messages[0].content[0].cache_control.empty());
    EXPECT_TRUE(req.messages[1].content[0].cache_control.empty());
    EXPECT_EQ(req.messages[2].content[0].cache_control, kMark);
    EXPECT_TRUE(req.messages[3].content[0].cache_control.empty());

    // The conversation before the final turn is short: no mark.
    ChatRequest short_req;
    short_req.messages = {text_message(Role::user, "hi"), text_message(Role::assistant, "hello"),
                          text_message(Role::user, "bye")};
    EXPECT_EQ(add_prompt_cache_breakpoints(short_req), 0);
}

TEST(PromptCache, AToolLoopMarksTheLastBlockThatIsSent) {
    // user, assistant calling a tool (content "" beside the call, which Anthropic does not get),
    // the tool's result: the final turn is the result; the assistant turn has no block to mark,
    // so the mark goes on the user's question before it.
    ChatRequest req;
    Message call = text_message(Role::assistant, "");
    call.tool_calls.push_back(ToolCall{"c1", "lookup", R"({"id":"7"})", ""});
    Message result = text_message(Role::tool, "found");
    result.tool_call_id = "c1";
    req.messages = {text_message(Role::user, text_of(6000)), call, result};
    EXPECT_EQ(add_prompt_cache_breakpoints(req), 1);
    EXPECT_EQ(req.messages[0].content[0].cache_control, kMark);
    EXPECT_TRUE(req.messages[1].content[0].cache_control.empty());
    EXPECT_TRUE(req.messages[2].content[0].cache_control.empty());
}

TEST(PromptCache, ImagesCountNothingTowardThePrefix) {
    ChatRequest req;
    Message user;
    user.role = Role::user;
    ContentPart image;
    image.kind = ContentPart::Kind::image_base64;
    image.media_type = "image/png";
    image.data = text_of(100000);
    user.content.push_back(image);
    req.messages = {user, text_message(Role::assistant, "a cat"), text_message(Role::user, "more")};
    EXPECT_EQ(add_prompt_cache_breakpoints(req), 0);
}

}  // namespace
}  // namespace tokenradar::dialect
