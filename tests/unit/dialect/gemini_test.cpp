#include <tokenradar/dialect/gemini.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

TEST(GeminiResponse, ParsesAndRoundTrips) {
    auto resp = parse_gemini_response(read_fixture("gemini/response_basic.json"));
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_EQ(resp->text, "Hello! How can I help you today?");
    EXPECT_EQ(resp->id, "resp-basic-1");
    EXPECT_EQ(resp->model, "gemini-2.0-flash");
    EXPECT_EQ(resp->usage.prompt_tokens, 5);
    EXPECT_EQ(resp->usage.output_tokens, 9);
    auto again = parse_gemini_response(emit_gemini_response(*resp));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *resp);
}

TEST(GeminiStream, MultiTokenChunksWithCumulativeUsage) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_basic.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.events.size(), 3u);
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "mGRMaOaXHqKwz7IP-ps0");
    EXPECT_EQ(d.text(),
              "The quick brown fox jumps over the lazy dog. It was a bright, cold day in April, "
              "and the clocks were striking thirteen.");
    auto usage = d.of(K::usage);
    ASSERT_EQ(usage.size(), 3u);  // repeated on every chunk, growing
    EXPECT_EQ(usage[0].usage.output_tokens, 4);
    EXPECT_EQ(usage[2].usage.output_tokens, 26);
    EXPECT_EQ(usage[2].usage.prompt_tokens, 1200);
    EXPECT_EQ(usage[2].usage.cached_prompt_tokens, 1024);
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::stop);
    EXPECT_EQ(d.flat().back().kind, K::done);
}

TEST(GeminiStream, ThoughtParts) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_thinking.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.text(K::reasoning), "**Comparing decimals**\n\nI need to compare 9.11 and 9.8.");
    EXPECT_EQ(d.text(), "9.8 is larger than 9.11.");
    auto last = d.of(K::usage).back().usage;
    EXPECT_EQ(last.output_tokens, 9 + 66);  // candidates + thoughts
    EXPECT_EQ(last.reasoning_tokens, 66);
    EXPECT_EQ(d.of(K::usage).front().usage.output_tokens, 66);
}

TEST(GeminiStream, FunctionCall) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_function_call.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].index, 0);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(GeminiStream, ErrorObject) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_error.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto e = d.of(K::error);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].error_type, "UNAVAILABLE");
    EXPECT_EQ(e[0].error_code, Errc::overloaded);
}

TEST(GeminiStream, EncoderFromOpenAiToolCallDeltas) {
    auto src = decode_stream(Api::openai, read_fixture("openai/stream_tool_calls.sse"));
    ASSERT_TRUE(src.ok);
    std::string bytes = encode_all(Api::gemini, src.flat());
    auto d = decode_stream(Api::gemini, bytes);
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 2u) << bytes;
    EXPECT_EQ(calls[0].name, "list_files");
    EXPECT_EQ(calls[0].id, "call_files");
    EXPECT_EQ(calls[0].arguments, R"({"path":"."})");
    EXPECT_EQ(calls[1].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(GeminiStream, EncoderReencodesItsOwnFixtures) {
    for (const auto& f : stream_fixtures("gemini")) {
        auto src = decode_stream(Api::gemini, read_fixture(f));
        ASSERT_TRUE(src.ok) << f;
        auto d = decode_stream(Api::gemini, encode_all(Api::gemini, src.flat()));
        ASSERT_TRUE(d.ok) << f << d.error;
        EXPECT_EQ(d.text(), src.text()) << f;
        EXPECT_EQ(d.text(K::reasoning), src.text(K::reasoning)) << f;
        EXPECT_EQ(tool_summary(d), tool_summary(src)) << f;
        if (!src.of(K::usage).empty() && src.of(K::error).empty()) {
            EXPECT_EQ(d.of(K::usage).back().usage, src.of(K::usage).back().usage) << f;
        }
    }
}

TEST(GeminiStream, BlockedPromptEndsTheStream) {
    auto d = decode_stream(Api::gemini,
                           "data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},"
                           "\"usageMetadata\":{\"promptTokenCount\":7},\"responseId\":\"x\"}\n\n");
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.of(K::finish).size(), 1u);
    EXPECT_EQ(d.of(K::finish)[0].finish_reason, FinishReason::content_filter);
    EXPECT_EQ(d.of(K::done).size(), 1u);
    auto resp = parse_gemini_response(R"({"promptFeedback":{"blockReason":"SAFETY"}})");
    ASSERT_TRUE(resp);
    EXPECT_EQ(resp->finish_reason, FinishReason::content_filter);
}

// A 200 in another API's shape is not an empty answer with 0 tokens.
TEST(GeminiResponse, ABodyWithoutCandidatesOrBlockReasonIsAProtocolError) {
    for (std::string_view body :
         {R"({})", R"({"object":"chat.completion","choices":[]})", R"({"candidates":[]})"}) {
        auto resp = parse_gemini_response(body);
        ASSERT_FALSE(resp) << body;
        EXPECT_EQ(resp.error().code, make_error_code(Errc::protocol_error));
        EXPECT_NE(resp.error().message.find("candidates"), std::string::npos);
    }
}

}  // namespace
}  // namespace tokenradar::dialect
