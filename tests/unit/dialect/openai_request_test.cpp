#include <tokenradar/dialect/openai.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;

TEST(OpenAiRequest, ParsesBasic) {
    auto req = parse_openai_request(read_fixture("openai/request_basic.json"));
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->model, "gpt-4o");
    ASSERT_EQ(req->messages.size(), 2u);
    EXPECT_EQ(req->messages[0].role, Role::system);
    EXPECT_EQ(req->messages[1].content[0].text, "Say hello.");
    EXPECT_EQ(req->max_tokens, 64);
    EXPECT_EQ(req->temperature, 0.2);
    EXPECT_EQ(req->top_p, 0.9);
    EXPECT_EQ(req->stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(req->stream);
    EXPECT_TRUE(req->include_usage);
    EXPECT_EQ(req->original.at("user").as_string(), "u-123");  // passthrough keeps extras
}

TEST(OpenAiRequest, OriginalKeepsTheParseArenaThroughCopies) {
    auto req = parse_openai_request(read_fixture("openai/request_basic.json"));
    ASSERT_TRUE(req) << req.error().message;
    // One shared arena, not the default heap: an assignment into the default-heap member
    // would have deep-copied the DOM key by key.
    EXPECT_TRUE(req->original.storage().is_shared());
    const ChatRequest moved = std::move(*req);
    const ChatRequest copy = moved;
    EXPECT_EQ(copy.original.storage().get(), moved.original.storage().get());
    EXPECT_EQ(copy.original.at("user").as_string(), "u-123");
    EXPECT_EQ(moved.original.at("model").as_string(), "gpt-4o");
}

TEST(OpenAiRequest, ParsesToolsImagesAndResults) {
    auto req = parse_openai_request(read_fixture("openai/request_tools.json"));
    ASSERT_TRUE(req) << req.error().message;
    ASSERT_EQ(req->messages.size(), 4u);
    const auto& user = req->messages[1].content;
    ASSERT_EQ(user.size(), 3u);
    EXPECT_EQ(user[1].kind, ContentPart::Kind::image_url);
    EXPECT_EQ(user[1].url, "https://example.com/cat.png");
    EXPECT_EQ(user[2].kind, ContentPart::Kind::image_base64);
    EXPECT_EQ(user[2].media_type, "image/png");
    EXPECT_EQ(user[2].data, "iVBORw0KGgo=");
    const auto& asst = req->messages[2];
    EXPECT_TRUE(asst.content.empty());
    ASSERT_EQ(asst.tool_calls.size(), 1u);
    EXPECT_EQ(asst.tool_calls[0].id, "call_1");
    EXPECT_EQ(asst.tool_calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(req->messages[3].role, Role::tool);
    EXPECT_EQ(req->messages[3].tool_call_id, "call_1");
    ASSERT_EQ(req->tools.size(), 1u);
    EXPECT_EQ(req->tools[0].name, "get_weather");
    EXPECT_NE(req->tools[0].parameters.find("\"location\""), std::string::npos);
    EXPECT_EQ(req->max_tokens, 256);  // max_completion_tokens
    EXPECT_EQ(req->stop, std::vector<std::string>{"END"});
    EXPECT_FALSE(req->stream);
}

TEST(OpenAiRequest, RoundTrips) {
    for (const char* f : {"openai/request_basic.json", "openai/request_tools.json"}) {
        auto req = parse_openai_request(read_fixture(f));
        ASSERT_TRUE(req) << f;
        auto body = emit_openai_request(*req);
        ASSERT_TRUE(body);
        auto again = parse_openai_request(*body);
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_EQ(*again, *req) << f << "\n" << *body;
    }
}

TEST(OpenAiRequest, ErrorsNameTheFieldPath) {
    struct Case {
        const char* body;
        const char* message;
    } cases[] = {
        {R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"robot","content":"c"}]})",
         "messages[2].role: expected one of system, user, assistant, tool"},
        {R"({"messages":[]})", "model: required"},
        {R"({"model":"m"})", "messages: required"},
        {R"({"model":"m","messages":{}})", "messages: expected an array"},
        {R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
         "messages[0].content[0].text: required"},
        {R"({"model":"m","messages":[{"role":"user","content":[{"type":"audio"}]}]})",
         "messages[0].content[0].type: expected one of text, image_url"},
        {R"({"model":"m","messages":[{"role":"user","content":5}]})",
         "messages[0].content: expected a string or an array of content parts"},
        {R"({"model":"m","messages":[{"role":"tool","content":"x"}]})",
         "messages[0].tool_call_id: required"},
        {R"({"model":"m","messages":[],"max_tokens":"many"})", "max_tokens: expected an integer"},
        {R"({"model":"m","messages":[],"stop":[1]})", "stop[0]: expected a string"},
        {R"({"model":"m","messages":[],"tools":[{"type":"function"}]})",
         "tools[0].function: required"},
        {R"({"model":"m","messages":[],"stream_options":{"include_usage":"yes"}})",
         "stream_options.include_usage: expected true or false"},
        {R"([1])", "body: expected a JSON object"},
    };
    for (const auto& c : cases) {
        auto r = parse_openai_request(c.body);
        ASSERT_FALSE(r) << c.body;
        EXPECT_EQ(r.error().message, c.message);
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
    }
    auto bad = parse_openai_request("{not json");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message.rfind("body: invalid JSON", 0), 0u);
}

TEST(OpenAiRequest, GeminiThoughtSignatureInExtraContentRoundTrips) {
    const char* body = R"({"model":"m","messages":[{"role":"assistant","content":null,
        "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},
        "extra_content":{"google":{"thought_signature":"c2ln"}}}]}]})";
    auto req = parse_openai_request(body);
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->messages.at(0).tool_calls.at(0).signature, "c2ln");
    auto out = emit_openai_request(*req);
    ASSERT_TRUE(out);
    auto again = parse_openai_request(*out);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *req) << *out;
    auto bad = parse_openai_request(R"({"model":"m","messages":[{"role":"assistant",
        "tool_calls":[{"id":"c","function":{"name":"f"},"extra_content":{"google":[]}}]}]})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message,
              "messages[0].tool_calls[0].extra_content.google: expected an "
              "object");
}

TEST(OpenAiRequest, CacheControlIsReadAndEmittedWhereTheClientPutIt) {
    auto req = parse_openai_request(R"({"model":"m","tools":[{"type":"function",
        "function":{"name":"f"},"cache_control":{"type":"ephemeral"}}],"messages":[
        {"role":"system","content":"rules","cache_control":{"type":"ephemeral","ttl":"1h"}},
        {"role":"user","content":[{"type":"text","text":"a"},
          {"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]})");
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->tools[0].cache_control, R"({"type":"ephemeral"})");
    EXPECT_EQ(req->messages[0].content[0].cache_control, R"({"type":"ephemeral","ttl":"1h"})");
    EXPECT_TRUE(req->messages[1].content[0].cache_control.empty());
    EXPECT_EQ(req->messages[1].content[1].cache_control, R"({"type":"ephemeral"})");
    auto emitted = emit_openai_request(*req);
    ASSERT_TRUE(emitted) << emitted.error().message;
    auto again = parse_openai_request(*emitted);
    ASSERT_TRUE(again) << *emitted;
    EXPECT_EQ(*again, *req) << *emitted;  // cache_control is part of equality
    req->messages[1].content[1].cache_control.clear();
    EXPECT_NE(*again, *req);
}

}  // namespace
}  // namespace tokenradar::dialect
