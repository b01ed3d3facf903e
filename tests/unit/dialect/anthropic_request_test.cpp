#include <tokenradar/dialect/anthropic.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;

TEST(AnthropicRequest, ParsesSystemToolsImagesAndResults) {
    auto req = parse_anthropic_request(read_fixture("anthropic/request_tools.json"));
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->model, "claude-sonnet-4-20250514");
    EXPECT_EQ(req->max_tokens, 512);
    EXPECT_TRUE(req->include_usage);
    ASSERT_EQ(req->messages.size(), 4u);
    EXPECT_EQ(req->messages[0].role, Role::system);
    EXPECT_EQ(req->messages[0].content[0].text, "Use tools.");
    const auto& user = req->messages[1].content;
    ASSERT_EQ(user.size(), 3u);
    EXPECT_EQ(user[1].kind, ContentPart::Kind::image_base64);
    EXPECT_EQ(user[2].kind, ContentPart::Kind::image_url);
    const auto& asst = req->messages[2];
    EXPECT_EQ(asst.content[0].text, "Checking.");
    ASSERT_EQ(asst.tool_calls.size(), 1u);
    EXPECT_EQ(asst.tool_calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(req->messages[3].role, Role::tool);
    EXPECT_EQ(req->messages[3].tool_call_id, "toolu_01A");
    EXPECT_EQ(req->messages[3].content[0].text, "18C, cloudy");
    ASSERT_EQ(req->tools.size(), 1u);
    // cache_control survives in the original for passthrough, and in the neutral model for
    // translation (RoundTrips emits it back).
    EXPECT_TRUE(req->original.at("system").as_array()[0].as_object().contains("cache_control"));
    EXPECT_EQ(req->messages[0].content[0].cache_control, R"({"type":"ephemeral"})");
    EXPECT_TRUE(req->messages[1].content[0].cache_control.empty());
}

TEST(AnthropicRequest, RoundTrips) {
    for (const char* f : {"anthropic/request_basic.json", "anthropic/request_tools.json"}) {
        auto req = parse_anthropic_request(read_fixture(f));
        ASSERT_TRUE(req) << f << ": " << req.error().message;
        auto body = emit_anthropic_request(*req);
        ASSERT_TRUE(body) << body.error().message;
        auto again = parse_anthropic_request(*body);
        ASSERT_TRUE(again) << again.error().message << "\n" << *body;
        EXPECT_EQ(*again, *req) << *body;
    }
}

TEST(AnthropicRequest, ErrorsNameTheFieldPath) {
    struct Case {
        const char* body;
        const char* message;
    } cases[] = {
        {R"({"model":"m","messages":[]})", "max_tokens: required"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})",
         "messages[0].role: expected one of user, assistant"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file"}}]}]})",
         "messages[0].content[0].source.type: expected one of base64, url"},
        {R"({"model":"m","max_tokens":5,"messages":[{"role":"user"}]})",
         "messages[0].content: required"},
        {R"({"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[]})",
         "system[0].type: expected text"},
        {R"({"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"f"}]})",
         "tools[0].input_schema: required"},
        {R"({"model":"m","max_tokens":-1,"messages":[]})",
         "max_tokens: expected an integer of at least 1"},
        {R"({"model":"m","max_tokens":5,"temperature":1e999,"messages":[]})",
         "temperature: expected a number from 0 to 1"},
        {R"({"model":"m","max_tokens":5,"top_p":-1e999,"messages":[]})",
         "top_p: expected a number from 0 to 1"},
    };
    for (const auto& c : cases) {
        auto r = parse_anthropic_request(c.body);
        ASSERT_FALSE(r) << c.body;
        EXPECT_EQ(r.error().message, c.message);
    }
}

TEST(AnthropicRequest, EmitFromOpenAiShape) {
    ChatRequest req;
    req.model = "claude";
    Message sys;
    sys.role = Role::system;
    sys.content.push_back(ContentPart::make_text("be nice"));
    Message user;
    user.content.push_back(ContentPart::make_text("hi"));
    Message asst;
    asst.role = Role::assistant;
    asst.tool_calls.push_back({"call_1", "f", "not json", {}});
    req.messages = {sys, user, asst};
    auto bad = emit_anthropic_request(req);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "messages[2].tool_calls[0].arguments: expected a JSON object");
    req.messages[2].tool_calls[0].arguments = R"({"x":1})";
    Message t1;
    t1.role = Role::tool;
    t1.tool_call_id = "call_1";
    t1.content.push_back(ContentPart::make_text("r1"));
    req.messages.push_back(t1);
    auto body = emit_anthropic_request(req);
    ASSERT_TRUE(body);
    // The cache prefix (tools, system, messages) first, max_tokens after it.
    EXPECT_EQ(
        *body,
        R"({"model":"claude","system":"be nice","messages":[{"role":"user","content":"hi"},)"
        R"({"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"f","input":{"x":1}}]},)"
        R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"r1"}]}],)"
        R"("max_tokens":4096})");
}

TEST(AnthropicRequest, ToolResultsMayHoldImagesAndEmptyTextIsNotSent) {
    auto req = parse_anthropic_request(R"({"model":"c","max_tokens":9,"messages":[
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[
            {"type":"text","text":"shot:"},
            {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}]})");
    ASSERT_TRUE(req) << req.error().message;
    ASSERT_EQ(req->messages.size(), 1u);
    EXPECT_EQ(req->messages[0].role, Role::tool);
    ASSERT_EQ(req->messages[0].content.size(), 2u);
    EXPECT_EQ(req->messages[0].content[1].kind, ContentPart::Kind::image_base64);
    // OpenAI clients send content "" beside tool calls; Anthropic rejects empty text blocks.
    auto oa = parse_request(Api::openai, R"({"model":"m","messages":[{"role":"assistant",
        "content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"f",
        "arguments":"{}"}}]}]})");
    ASSERT_TRUE(oa);
    auto body = emit_anthropic_request(*oa);
    ASSERT_TRUE(body);
    EXPECT_NE(body->find(R"("content":[{"type":"tool_use")"), std::string::npos) << *body;
}

}  // namespace
}  // namespace tokenradar::dialect
