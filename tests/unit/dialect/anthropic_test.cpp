#include <tokenradar/dialect/anthropic.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

TEST(AnthropicResponse, ParsesAndRoundTrips) {
    auto resp = parse_anthropic_response(read_fixture("anthropic/response_basic.json"));
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_EQ(resp->text, "Hi! My name is Claude.");
    EXPECT_EQ(resp->finish_reason, FinishReason::stop);
    EXPECT_EQ(resp->usage.prompt_tokens, 2095 + 2048);  // input_tokens excludes cache reads
    EXPECT_EQ(resp->usage.cached_prompt_tokens, 2048);
    EXPECT_EQ(resp->usage.cache_creation_tokens, 0);
    EXPECT_EQ(resp->usage.output_tokens, 503);
    auto again = parse_anthropic_response(emit_anthropic_response(*resp));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *resp);

    auto tools = parse_anthropic_response(read_fixture("anthropic/response_tool_use.json"));
    ASSERT_TRUE(tools);
    EXPECT_EQ(tools->reasoning, "Need the weather tool.");
    EXPECT_EQ(tools->finish_reason, FinishReason::tool_calls);
    ASSERT_EQ(tools->tool_calls.size(), 1u);
    auto again2 = parse_anthropic_response(emit_anthropic_response(*tools));
    ASSERT_TRUE(again2);
    EXPECT_EQ(*again2, *tools);
}

TEST(AnthropicStream, BasicWithPingAndCacheRead) {
    auto d = decode_stream(Api::anthropic, read_fixture("anthropic/stream_basic.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.events.size(), 8u);
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "msg_01Xk3QkZ9");
    EXPECT_EQ(d.events[2][0].kind, K::ignorable);  // ping
    EXPECT_EQ(d.text(), "Hello! How can I help?");
    auto usage = d.of(K::usage);
    ASSERT_EQ(usage.size(), 2u);
    EXPECT_EQ(usage[0].usage.prompt_tokens, 12 + 2048);
    EXPECT_EQ(usage[0].usage.cached_prompt_tokens, 2048);
    EXPECT_EQ(usage[1].usage.output_tokens, 9);
    EXPECT_FALSE(usage[1].usage.prompt_tokens.has_value());
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::stop);
    EXPECT_EQ(d.flat().back().kind, K::done);
}

TEST(AnthropicStream, ThinkingThenText) {
    auto d = decode_stream(Api::anthropic, read_fixture("anthropic/stream_thinking.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.text(K::reasoning), "Let me work out 27 * 453.\n27 * 453 = 12231.");
    EXPECT_EQ(d.text(), "27 * 453 = 12,231");
    EXPECT_EQ(d.of(K::usage).at(0).usage.cache_creation_tokens, 1500);
    EXPECT_EQ(d.of(K::usage).at(0).usage.prompt_tokens, 1540);
}

TEST(AnthropicStream, ToolUse) {
    auto d = decode_stream(Api::anthropic, read_fixture("anthropic/stream_tool_use.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0].index, 0);  // first tool call, although content block 1
    EXPECT_EQ(calls[0].id, "toolu_01NRLabsLyVH");
    EXPECT_EQ(calls[0].name, "get_weather");
    std::string args;
    for (const auto& c : calls) args += c.arguments;
    EXPECT_EQ(args, R"({"location": "Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(AnthropicStream, ErrorEvent) {
    auto d = decode_stream(Api::anthropic, read_fixture("anthropic/stream_error.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto e = d.of(K::error);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].error_type, "overloaded_error");
    EXPECT_EQ(e[0].error_code, Errc::overloaded);
    EXPECT_EQ(e[0].text, "Overloaded");
}

TEST(AnthropicStream, EncoderFromOpenAiOrderedDeltas) {
    // What an OpenAI upstream decodes to: role, reasoning, text, tool call, finish, usage, done.
    auto src = decode_stream(Api::openai, read_fixture("openai/stream_reasoning.sse"));
    ASSERT_TRUE(src.ok);
    std::string bytes =
        encode_all(Api::anthropic, src.flat(), StreamMeta{"msg_1", "claude-x", 0, true});
    EXPECT_EQ(bytes.rfind("event: message_start\n", 0), 0u) << bytes;
    auto d = decode_stream(Api::anthropic, bytes);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.text(), src.text());
    EXPECT_EQ(d.text(K::reasoning), src.text(K::reasoning));
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::stop);
    // Usage arrived after finish upstream; it still reaches message_delta.
    EXPECT_EQ(d.of(K::usage).back().usage.output_tokens, 42);
    EXPECT_EQ(d.of(K::usage).back().usage.prompt_tokens, 18);
    EXPECT_EQ(d.flat().back().kind, K::done);
    // Block indexes: thinking block 0, text block 1.
    EXPECT_NE(
        bytes.find(R"({"type":"content_block_start","index":1,"content_block":{"type":"text")"),
        std::string::npos);
}

TEST(AnthropicStream, EncoderReencodesItsOwnFixtures) {
    for (const auto& f : stream_fixtures("anthropic")) {
        auto src = decode_stream(Api::anthropic, read_fixture(f));
        ASSERT_TRUE(src.ok) << f;
        auto d = decode_stream(Api::anthropic, encode_all(Api::anthropic, src.flat()));
        ASSERT_TRUE(d.ok) << f << d.error;
        EXPECT_EQ(d.text(), src.text()) << f;
        EXPECT_EQ(d.text(K::reasoning), src.text(K::reasoning)) << f;
        EXPECT_EQ(tool_summary(d), tool_summary(src)) << f;
        EXPECT_EQ(d.of(K::error).size(), src.of(K::error).size()) << f;
    }
}

}  // namespace
}  // namespace tokenradar::dialect
