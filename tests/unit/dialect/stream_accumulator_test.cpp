#include <tokenradar/dialect/stream_accumulator.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

// Feeds a decoded fixture with event i at t = 1000 * (i + 1) ns.
StreamAccumulator accumulate(Api api, const std::string& fixture) {
    auto d = decode_stream(api, read_fixture(fixture));
    EXPECT_TRUE(d.ok) << fixture;
    StreamAccumulator acc;
    for (std::size_t i = 0; i < d.events.size(); ++i) {
        acc.on_event(static_cast<std::int64_t>(1000 * (i + 1)), d.events[i]);
    }
    acc.on_end(1000 * 100);
    return acc;
}

TEST(StreamAccumulator, OpenAiRoleChunkIsFirstChunkNotFirstToken) {
    auto acc = accumulate(Api::openai, "openai/stream_basic.sse");
    EXPECT_EQ(acc.times().first_chunk, 1000);
    EXPECT_EQ(acc.times().first_token, 2000);
    EXPECT_EQ(acc.times().first_answer, 2000);
    EXPECT_EQ(acc.times().last_token, 4000);
    EXPECT_EQ(acc.times().done, 7000);  // [DONE], not end of body
    EXPECT_EQ(acc.events(), 7u);
    EXPECT_EQ(acc.output_events(), 3u);
    EXPECT_EQ(acc.chunk_gaps_ns(), (std::vector<std::int64_t>{1000, 1000}));
    EXPECT_EQ(acc.usage().output_tokens, 12);
    EXPECT_EQ(acc.usage().cached_prompt_tokens, 1024);
    EXPECT_EQ(acc.finish_reason(), FinishReason::stop);
    EXPECT_TRUE(acc.saw_done());
    EXPECT_FALSE(acc.error());
}

TEST(StreamAccumulator, ReasoningCountsAsTokenButNotAnswer) {
    auto acc = accumulate(Api::openai, "openai/stream_reasoning.sse");
    // Event 1 is the role chunk with empty reasoning_content.
    EXPECT_EQ(acc.times().first_token, 2000);
    EXPECT_EQ(acc.times().first_answer, 5000);
    EXPECT_EQ(acc.answer_events(), 2u);
    EXPECT_EQ(acc.output_events(), 5u);
    EXPECT_EQ(acc.usage().reasoning_tokens, 37);
}

TEST(StreamAccumulator, ToolArgumentsAreOutput) {
    auto acc = accumulate(Api::anthropic, "anthropic/stream_tool_use.sse");
    EXPECT_EQ(acc.times().first_token, 4000);  // the text delta after the ping
    EXPECT_EQ(acc.times().last_token, 9000);   // last input_json_delta
    EXPECT_EQ(acc.output_events(), 3u);        // empty partial_json does not count
    EXPECT_EQ(acc.finish_reason(), FinishReason::tool_calls);
    EXPECT_EQ(acc.usage().prompt_tokens, 377);  // from message_start, kept after message_delta
    EXPECT_EQ(acc.usage().output_tokens, 65);
}

TEST(StreamAccumulator, GeminiCumulativeUsageTakesLastValue) {
    auto acc = accumulate(Api::gemini, "gemini/stream_basic.sse");
    EXPECT_EQ(acc.usage().output_tokens, 26);
    EXPECT_EQ(acc.usage().prompt_tokens, 1200);
    EXPECT_EQ(acc.output_events(), 3u);
    EXPECT_EQ(acc.times().done, 3000);
    auto think = accumulate(Api::gemini, "gemini/stream_thinking.sse");
    EXPECT_EQ(think.times().first_token, 1000);
    EXPECT_EQ(think.times().first_answer, 2000);
    EXPECT_EQ(think.usage().output_tokens, 75);
}

TEST(StreamAccumulator, InStreamErrorAndEndOfBody) {
    auto acc = accumulate(Api::anthropic, "anthropic/stream_error.sse");
    ASSERT_TRUE(acc.error());
    EXPECT_EQ(acc.error()->code, Errc::overloaded);
    EXPECT_EQ(acc.error()->message, "Overloaded");
    EXPECT_FALSE(acc.saw_done());
    EXPECT_EQ(acc.times().done, 100000);  // end of body
    EXPECT_FALSE(acc.finish_reason());
}

TEST(StreamAccumulator, ClassifiesEachEvent) {
    auto d = decode_stream(Api::openai, read_fixture("openai/stream_reasoning.sse"));
    ASSERT_TRUE(d.ok);
    StreamAccumulator acc;
    std::vector<EventClass> got;
    for (std::size_t i = 0; i < d.events.size(); ++i) {
        got.push_back(acc.on_event(static_cast<std::int64_t>(i), d.events[i]));
        EXPECT_EQ(got.back(), classify(d.events[i]));
    }
    ASSERT_EQ(got.size(), 8u);
    EXPECT_EQ(got[0], (EventClass{false, false, false}));  // role chunk, empty reasoning
    EXPECT_EQ(got[1], (EventClass{true, false, false}));   // reasoning
    EXPECT_EQ(got[4], (EventClass{true, true, false}));    // answer
    EXPECT_EQ(got[7], (EventClass{false, false, true}));   // [DONE]
}

TEST(StreamAccumulator, EventWithoutDeltasStillCountsAsChunk) {
    StreamAccumulator acc;
    acc.on_event(5, {});
    EXPECT_EQ(acc.times().first_chunk, 5);
    EXPECT_FALSE(acc.times().first_token);
    EXPECT_EQ(acc.output_bytes(), 0u);
}

}  // namespace
}  // namespace tokenradar::dialect
