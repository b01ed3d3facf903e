#include <tokenradar/keys/key_spec.hpp>

#include <gtest/gtest.h>

namespace tokenradar::keys {
namespace {

std::string error_of(std::string_view body) {
    auto spec = parse_key_spec(body);
    if (spec) return "(parsed)";
    EXPECT_EQ(spec.error().code, Errc::bad_request);
    return spec.error().message;
}

TEST(KeySpec, ReadsEveryField) {
    auto spec =
        parse_key_spec(R"({"name":"team-a","models":["fast","gpt-4o"],"rpm":60,"tpm":100000,)"
                       R"("budget_tokens":5000000,"budget_period":"month"})");
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_EQ(spec->name, "team-a");
    EXPECT_EQ(spec->models, (std::vector<std::string>{"fast", "gpt-4o"}));
    EXPECT_EQ(spec->rpm, 60);
    EXPECT_EQ(spec->tpm, 100000);
    EXPECT_EQ(spec->budget_tokens, 5000000);
    EXPECT_EQ(spec->budget_period, BudgetPeriod::month);
    // What key_spec_json writes reads back the same.
    auto again = parse_key_spec(key_spec_json(*spec));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, *spec);
}

TEST(KeySpec, OnlyTheNameIsRequired) {
    auto spec = parse_key_spec(R"({"name":"ci"})");
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_TRUE(spec->models.empty());
    EXPECT_EQ(spec->rpm, 0);
    EXPECT_EQ(spec->budget_period, BudgetPeriod::none);
    EXPECT_TRUE(parse_key_spec(key_spec_json(*spec)));
}

TEST(KeySpec, RefusalsNameTheField) {
    EXPECT_NE(error_of(R"({})").find("name: required"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a b"})").find("name: expected 1-64"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":7})").find("name:"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","rmp":5})").find("rmp: unknown field"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","rpm":-1})").find("rpm: expected an integer"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","rpm":1.5})").find("rpm:"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","tpm":"5"})").find("tpm:"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","tpm":1000000000001})").find("tpm:"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","budget_tokens":5})").find("budget_period: required"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","budget_period":"day"})").find("without budget_tokens"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","budget_tokens":5,"budget_period":"week"})")
                  .find("budget_period: expected"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","models":"fast"})").find("models: expected an array"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","models":["x","x"]})").find("listed twice"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","models":[""]})").find("models:"), std::string::npos);
    EXPECT_NE(error_of("[1]").find("expected a JSON object"), std::string::npos);
    EXPECT_NE(error_of("{\"name\":").find("expected a JSON object"), std::string::npos);
    EXPECT_NE(error_of(R"({"name":"a","models":[[[[["deep"]]]]]})").find("body:"),
              std::string::npos);
}

TEST(KeySpec, ManyModelsAreBounded) {
    std::string body = R"({"name":"a","models":[)";
    for (std::size_t i = 0; i <= kMaxModels; ++i) {
        if (i > 0) body += ',';
        body += "\"m" + std::to_string(i) + "\"";
    }
    body += "]}";
    EXPECT_NE(error_of(body).find("at most 256"), std::string::npos);
}

}  // namespace
}  // namespace tokenradar::keys
