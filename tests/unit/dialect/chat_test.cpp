#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

TEST(Usage, MergeKeepsKnownFieldsAndTakesLaterValues) {
    Usage u;
    u.prompt_tokens = 10;
    u.output_tokens = 1;
    Usage later;
    later.output_tokens = 7;
    u.merge(later);
    EXPECT_EQ(u.prompt_tokens, 10);
    EXPECT_EQ(u.output_tokens, 7);
    EXPECT_FALSE(u.empty());
    EXPECT_TRUE(Usage{}.empty());
}

TEST(StreamDelta, CarriesOutputOnlyWhenNonEmpty) {
    EXPECT_FALSE(StreamDelta::make_text("").carries_output());
    EXPECT_TRUE(StreamDelta::make_text("a").carries_output());
    StreamDelta tc = StreamDelta::make(StreamDelta::Kind::tool_call);
    tc.name = "f";
    EXPECT_FALSE(tc.carries_output());
    tc.arguments = "{";
    EXPECT_TRUE(tc.carries_output());
    EXPECT_FALSE(StreamDelta::make(StreamDelta::Kind::usage).carries_output());
}

TEST(ChatRequest, EqualityIgnoresOriginal) {
    ChatRequest a, b;
    a.model = b.model = "m";
    a.original["x"] = 1;
    EXPECT_EQ(a, b);
    EXPECT_EQ(to_string(Role::tool), "tool");
    EXPECT_EQ(to_string(FinishReason::tool_calls), "tool_calls");
}

}  // namespace
}  // namespace tokenradar::dialect
