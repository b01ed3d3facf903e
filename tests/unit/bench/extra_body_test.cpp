#include <tokenradar/bench/extra_body.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::bench {
namespace {

using ::testing::HasSubstr;

boost::json::object object(std::string_view text) { return boost::json::parse(text).as_object(); }

TEST(ExtraBody, ParseAcceptsOnlyAJsonObject) {
    auto ok = parse_extra_body(R"( {"ignore_eos": true, "min_tokens": 100} )");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(*ok, object(R"({"ignore_eos":true,"min_tokens":100})"));
    EXPECT_THAT(parse_extra_body(R"({"ignore_eos": tru})").error().message,
                HasSubstr("not valid JSON"));
    EXPECT_THAT(parse_extra_body("").error().message, HasSubstr("not valid JSON"));
    EXPECT_THAT(parse_extra_body("[1]").error().message, HasSubstr("expected a JSON object"));
    EXPECT_THAT(parse_extra_body("[1]").error().message, HasSubstr("got an array"));
    EXPECT_THAT(parse_extra_body("true").error().message, HasSubstr("got a boolean"));
}

TEST(ExtraBody, TargetFieldsGoOverTheWorkloadsAndObjectsMergeKeyByKey) {
    const auto workload = object(R"({"min_tokens":10,"ignore_eos":false,"opts":{"a":1,"b":2}})");
    const auto target = object(R"({"ignore_eos":true,"opts":{"b":3,"c":4}})");
    EXPECT_EQ(effective_extra_body(workload, target),
              object(R"({"min_tokens":10,"ignore_eos":true,"opts":{"a":1,"b":3,"c":4}})"));
    EXPECT_EQ(effective_extra_body({}, target), target);
    EXPECT_EQ(effective_extra_body(workload, {}), workload);
}

TEST(ExtraBody, NewTopLevelFieldsAreAppendedToTheDialectsBytes) {
    // The dialect's bytes (its number format included) stay as they are.
    const std::string body = R"({"model":"m","temperature":0.5,"stream":true})";
    auto merged = merge_extra_body(body, object(R"({"ignore_eos":true,"min_tokens":100})"));
    ASSERT_TRUE(merged) << merged.error().message;
    EXPECT_EQ(
        *merged,
        R"({"model":"m","temperature":0.5,"stream":true,"ignore_eos":true,"min_tokens":100})");
    EXPECT_EQ(*merge_extra_body("{}", object(R"({"k":"v"})")), R"({"k":"v"})");
    EXPECT_EQ(*merge_extra_body(body, {}), body);
}

TEST(ExtraBody, FieldsGoInsideTheBodysObjects) {
    const std::string body = R"({"model":"m","stream_options":{"include_usage":true}})";
    auto merged = merge_extra_body(
        body, object(R"({"stream_options":{"continuous_usage_stats":true},"x":1})"));
    ASSERT_TRUE(merged) << merged.error().message;
    EXPECT_EQ(
        boost::json::parse(*merged),
        boost::json::parse(
            R"({"model":"m","stream_options":{"include_usage":true,"continuous_usage_stats":true},"x":1})"));
}

TEST(ExtraBody, ChangingAFieldBenchSetsIsAnErrorNamingItsPath) {
    const std::string body =
        R"({"model":"m","stream":true,"stream_options":{"include_usage":true}})";
    auto stream = merge_extra_body(body, object(R"({"ignore_eos":true,"stream":false})"));
    ASSERT_FALSE(stream);
    EXPECT_THAT(stream.error().message, HasSubstr("extra body field 'stream'"));
    EXPECT_THAT(stream.error().message, HasSubstr("(to true)"));
    auto nested = merge_extra_body(body, object(R"({"stream_options":{"include_usage":false}})"));
    ASSERT_FALSE(nested);
    EXPECT_THAT(nested.error().message, HasSubstr("'stream_options.include_usage'"));
    // Same value or not: bench's own fields are not the extra fields' to set.
    EXPECT_FALSE(merge_extra_body(body, object(R"({"model":"m"})")));
    EXPECT_FALSE(merge_extra_body(body, object(R"({"stream_options":1})")));
}

}  // namespace
}  // namespace tokenradar::bench
