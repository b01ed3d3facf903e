#include "../../../src/sim/answer.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/sim/profile.hpp>
#include <tokenradar/sim/tokens.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tokenradar::sim {
namespace {

namespace json = boost::json;
using dialect::ToolChoice;

constexpr std::string_view kWeather = R"({"type":"object","properties":{
    "location":{"type":"string","description":"City"},
    "unit":{"type":"string","enum":["celsius","fahrenheit"]},
    "days":{"type":"integer","minimum":2,"maximum":7},
    "detailed":{"type":"boolean"},
    "when":{"type":"string","format":"date"}},
  "required":["location","unit","days","when"],"additionalProperties":false})";

json::object parse_object(const std::string& text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    EXPECT_FALSE(ec) << text;
    EXPECT_TRUE(v.is_object()) << text;
    return v.is_object() ? v.get_object() : json::object{};
}

TEST(ExampleJson, RequiredPropertiesGetValuesOfTheirTypeAndTheFreeStringTheFiller) {
    std::size_t at = 0;
    const std::string text = example_json(kWeather, "Hello \"world\"", at);
    const json::object o = parse_object(text);
    EXPECT_EQ(o.at("location").as_string(), "Hello \"world\"");
    EXPECT_EQ(o.at("unit").as_string(), "celsius");
    EXPECT_EQ(o.at("days").as_int64(), 2);
    EXPECT_EQ(o.at("when").as_string(), "2024-01-01");
    EXPECT_FALSE(o.contains("detailed")) << "only required properties";
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(text.substr(at, 15), R"(Hello \"world\")");
}

TEST(ExampleJson, WithoutARequiredFreeStringTheFirstDeclaredOneCarriesTheFiller) {
    std::size_t at = 0;
    const auto o = parse_object(example_json(
        R"({"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":3},"q":{"type":"string"}},"required":["n"]})",
        "words", at));
    EXPECT_EQ(o.at("q").as_string(), "words");
    EXPECT_GT(o.at("n").to_number<double>(), 3);
}

TEST(ExampleJson, NoFreeStringLeavesTheFillerOutAndStaysValid) {
    std::size_t at = 0;
    const auto o = parse_object(example_json(
        R"({"type":"object","properties":{"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string","enum":["a"]},"minItems":2},"kind":{"const":"x"},"opt":{"type":["null","object"],"properties":{"deep":{"type":"string","maxLength":2}},"required":["deep"]}},"required":["n","tags","kind","opt"]})",
        "words", at));
    EXPECT_EQ(at, std::string::npos);
    EXPECT_EQ(o.at("n").as_int64(), 1);
    EXPECT_EQ(json::serialize(o.at("tags")), R"(["a","a"])");
    EXPECT_EQ(o.at("kind").as_string(), "x");
    EXPECT_EQ(o.at("opt").at("deep").as_string(), "si");
}

TEST(ExampleJson, AnythingButASchemaObjectGivesAnObject) {
    for (std::string_view schema : {"", "not json", "[1,2]", "{\"type\":\"object\"}", "true"}) {
        std::size_t at = 0;
        SCOPED_TRACE(schema);
        parse_object(example_json(schema, "x", at));
    }
}

TEST(ExampleJson, ALongRequiredListWithRepeatsIsOneKeyEach) {
    std::string required;
    for (int i = 0; i < 20000; ++i) required += "\"k" + std::to_string(i % 10000) + "\",";
    required.pop_back();
    std::size_t at = 0;
    const auto o =
        parse_object(example_json(R"({"type":"object","required":[)" + required + "]}", "w", at));
    EXPECT_EQ(o.size(), 10000u);
    EXPECT_EQ(o.at("k0").as_string(), "w");
}

TEST(ExampleJson, DeepSchemasStopAtNull) {
    std::string schema = R"({"type":"string"})";
    for (int i = 0; i < 40; ++i) {
        schema = R"({"type":"object","properties":{"a":)" + schema + R"(},"required":["a"]})";
    }
    std::size_t at = 0;
    parse_object(example_json(schema, "x", at));
}

class AnswerTest : public ::testing::Test {
  protected:
    RequestPlan plan(std::int64_t tokens, int per_chunk, std::uint64_t seed = 1) {
        PlanInput in;
        in.prompt_tokens = 10;
        in.max_tokens = tokens;
        in.request_seed = seed;
        in.overrides.tokens_per_chunk = per_chunk;
        return model_.plan(in);
    }

    static dialect::ChatRequest request_with_tools() {
        dialect::ChatRequest r;
        r.model = "m";
        r.messages.push_back(
            {dialect::Role::user, {dialect::ContentPart::make_text("weather?")}, {}, {}, {}});
        r.tools.push_back({"get_weather", "Weather of a city", std::string(kWeather), false, {}});
        r.tools.push_back(
            {"get_time",
             "",
             R"({"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]})",
             false,
             {}});
        return r;
    }

    static std::string joined(const Answer& a, const RequestPlan& p) {
        std::string s;
        for (std::size_t c = 0; c < p.chunks.size(); ++c) s += a.piece(c);
        return s;
    }

    LatencyModel model_{parse_profile("name = \"t\"\nmodels = [\"m\"]\n", "t.toml")};
    AnswerParams never_;
};

TEST_F(AnswerTest, TextIsThePlansWords) {
    const RequestPlan p = plan(9, 2);
    const Answer a = Answer::make(request_with_tools(), p, never_, std::nullopt, "call_");
    EXPECT_EQ(a.kind(), Answer::Kind::text);
    EXPECT_EQ(joined(a, p), join_tokens(p.tokens));
    EXPECT_EQ(a.finish_reason(), dialect::FinishReason::length);
}

TEST_F(AnswerTest, AToolCallsArgumentsArriveChunkByChunkAndParseToTheSchema) {
    const RequestPlan p = plan(30, 3);
    auto request = request_with_tools();
    request.tool_choice = ToolChoice{ToolChoice::Mode::function, "get_weather"};
    const Answer a = Answer::make(request, p, never_, std::nullopt, "call_");
    ASSERT_EQ(a.kind(), Answer::Kind::tool_call);
    EXPECT_EQ(a.call().name, "get_weather");
    EXPECT_TRUE(a.call().id.starts_with("call_"));
    EXPECT_EQ(a.call().id.size(), 5u + 24u);
    EXPECT_EQ(joined(a, p), a.whole());
    for (std::size_t c = 0; c < p.chunks.size(); ++c) EXPECT_FALSE(a.piece(c).empty()) << c;
    const auto args = parse_object(a.whole());
    EXPECT_EQ(args.at("location").as_string(), join_tokens(p.tokens));
    EXPECT_EQ(a.finish_reason(), dialect::FinishReason::tool_calls);
}

TEST_F(AnswerTest, ToolChoiceDecidesBeforeTheOverrideAndTheRate) {
    const RequestPlan p = plan(5, 1);
    AnswerParams always;
    always.tool_call_rate = 1;
    auto request = request_with_tools();

    EXPECT_EQ(Answer::make(request, p, always, std::nullopt, "").kind(), Answer::Kind::tool_call);
    EXPECT_EQ(Answer::make(request, p, never_, std::nullopt, "").kind(), Answer::Kind::text);
    EXPECT_EQ(Answer::make(request, p, never_, ToolCallMode::always, "").kind(),
              Answer::Kind::tool_call);
    EXPECT_EQ(Answer::make(request, p, always, ToolCallMode::never, "").kind(), Answer::Kind::text);

    request.tool_choice = ToolChoice{ToolChoice::Mode::none, {}};
    EXPECT_EQ(Answer::make(request, p, always, ToolCallMode::always, "").kind(),
              Answer::Kind::text);
    request.tool_choice = ToolChoice{ToolChoice::Mode::required, {}};
    EXPECT_EQ(Answer::make(request, p, never_, ToolCallMode::never, "").kind(),
              Answer::Kind::tool_call);

    // After a tool result the model answers in text, unless told to call again.
    request.tool_choice.reset();
    request.messages.push_back(
        {dialect::Role::tool, {dialect::ContentPart::make_text("20 C")}, {}, "call_1", {}});
    EXPECT_EQ(Answer::make(request, p, always, std::nullopt, "").kind(), Answer::Kind::text);
    EXPECT_EQ(Answer::make(request, p, never_, ToolCallMode::always, "").kind(),
              Answer::Kind::tool_call);

    // No tools, no call.
    request.tools.clear();
    EXPECT_EQ(Answer::make(request, p, always, ToolCallMode::always, "").kind(),
              Answer::Kind::text);
}

TEST_F(AnswerTest, TheRateIsAProbabilityPerRequestAndTheToolIsDrawnAmongTheDeclaredOnes) {
    AnswerParams half;
    half.tool_call_rate = 0.5;
    int calls = 0;
    std::set<std::string> names;
    for (std::uint64_t seed = 0; seed < 200; ++seed) {
        const RequestPlan p = plan(3, 1, seed);
        const Answer a = Answer::make(request_with_tools(), p, half, std::nullopt, "");
        if (a.kind() == Answer::Kind::tool_call) {
            ++calls;
            names.insert(a.call().name);
            EXPECT_TRUE(a.call().id.empty());
        }
    }
    EXPECT_GT(calls, 70);
    EXPECT_LT(calls, 130);
    EXPECT_EQ(names, (std::set<std::string>{"get_time", "get_weather"}));
}

TEST_F(AnswerTest, ResponseFormatGivesCompleteJsonText) {
    const RequestPlan p = plan(12, 5);
    dialect::ChatRequest request;
    request.model = "m";
    request.response_format =
        dialect::ResponseFormat{dialect::ResponseFormat::Kind::json_object, {}, {}, false};
    const Answer object = Answer::make(request, p, never_, std::nullopt, "");
    ASSERT_EQ(object.kind(), Answer::Kind::json);
    EXPECT_EQ(joined(object, p), object.whole());
    EXPECT_EQ(parse_object(object.whole()).at("answer").as_string(), join_tokens(p.tokens));
    EXPECT_EQ(object.finish_reason(), dialect::FinishReason::stop) << "the JSON is whole";

    request.response_format = dialect::ResponseFormat{
        dialect::ResponseFormat::Kind::json_schema, "n",
        R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})", true};
    const Answer numbers = Answer::make(request, p, never_, std::nullopt, "");
    EXPECT_EQ(joined(numbers, p), numbers.whole());
    EXPECT_EQ(parse_object(numbers.whole()).at("n").as_int64(), 1);
}

TEST_F(AnswerTest, APlanWithoutTokensStillHasTheWholeJson) {
    const RequestPlan p = plan(0, 1);
    auto request = request_with_tools();
    const Answer a = Answer::make(request, p, never_, ToolCallMode::always, "toolu_");
    ASSERT_EQ(a.kind(), Answer::Kind::tool_call);
    parse_object(a.whole());
}

}  // namespace
}  // namespace tokenradar::sim
