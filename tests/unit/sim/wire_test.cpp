#include "../../../src/sim/wire.hpp"

#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/dialect/codec.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace tokenradar::sim {
namespace {

namespace http = boost::beast::http;
using dialect::Api;

net::Request post(std::string target, std::vector<std::pair<std::string, std::string>> headers) {
    net::Request request(http::verb::post, target, 11);
    for (auto& [name, value] : headers) request.set(name, value);
    request.body() = "{}";
    return request;
}

TEST(RouteRequest, AnthropicTakesTheKeyAsXApiKeyOrBearerAsTheRealApiDoes) {
    const std::string version = "2023-06-01";
    auto with_x_api_key = route_request(
        post("/v1/messages", {{"x-api-key", "k"}, {"anthropic-version", version}}), "k");
    ASSERT_TRUE(with_x_api_key);
    EXPECT_EQ(with_x_api_key->api, Api::anthropic);

    // What @anthropic-ai/sdk sends when given an auth token: no x-api-key.
    auto with_bearer = route_request(
        post("/v1/messages", {{"authorization", "Bearer k"}, {"anthropic-version", version}}), "k");
    ASSERT_TRUE(with_bearer) << with_bearer.error().message;
    EXPECT_EQ(with_bearer->api, Api::anthropic);

    auto wrong_bearer = route_request(
        post("/v1/messages", {{"authorization", "Bearer nope"}, {"anthropic-version", version}}),
        "k");
    ASSERT_FALSE(wrong_bearer);
    EXPECT_EQ(wrong_bearer.error().code, Errc::unauthorized);

    // x-api-key wins when both are sent.
    auto both = route_request(post("/v1/messages", {{"x-api-key", "nope"},
                                                    {"authorization", "Bearer k"},
                                                    {"anthropic-version", version}}),
                              "k");
    EXPECT_FALSE(both);

    auto none = route_request(post("/v1/messages", {{"anthropic-version", version}}), "");
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, Errc::unauthorized);
    EXPECT_EQ(none.error().api, Api::anthropic);

    auto basic = route_request(
        post("/v1/messages", {{"authorization", "Basic k"}, {"anthropic-version", version}}), "");
    EXPECT_FALSE(basic);
}

TEST(RouteRequest, ResponsesIsAPostWithOpenAisBearerKey) {
    auto route = route_request(post("/v1/responses", {{"authorization", "Bearer k"}}), "k");
    ASSERT_TRUE(route) << route.error().message;
    EXPECT_EQ(route->api, Api::openai_responses);
    EXPECT_EQ(route->kind, Route::Kind::completion);

    auto no_key = route_request(post("/v1/responses", {}), "");
    ASSERT_FALSE(no_key);
    EXPECT_EQ(no_key.error().code, Errc::unauthorized);
    EXPECT_EQ(no_key.error().api, Api::openai_responses);

    net::Request get(http::verb::get, "/v1/responses", 11);
    get.set("authorization", "Bearer k");
    auto refused = route_request(get, "");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::method_not_allowed);
}

TEST(ParseWireRequest, ResponsesRequestsAlwaysReportUsage) {
    auto request = post("/v1/responses", {{"authorization", "Bearer k"}, {"x-sim-seed", "3"}});
    request.body() = R"({"model":"m","input":"hi","stream":true})";
    auto route = route_request(request, "");
    ASSERT_TRUE(route);
    auto wire = parse_wire_request(request, *route);
    ASSERT_TRUE(wire) << wire.error().message;
    EXPECT_EQ(wire->api, Api::openai_responses);
    EXPECT_TRUE(wire->chat.stream);
    EXPECT_TRUE(wire->chat.include_usage) << "response.completed always carries usage";
    EXPECT_EQ(wire->sim_headers.size(), 1u);
    EXPECT_TRUE(new_response_id(Api::openai_responses).starts_with("resp_"));
}

// The legacy text completions: OpenAI's path, key and errors; the prompt is the request's.
TEST(RouteRequest, LegacyCompletionsAreAnOpenAiPostWithAPrompt) {
    auto request = post("/v1/completions", {{"authorization", "Bearer k"}});
    request.body() = R"({"model":"m","prompt":"Once upon","max_tokens":5,"stream":true,)"
                     R"("stream_options":{"include_usage":true}})";
    auto route = route_request(request, "k");
    ASSERT_TRUE(route) << route.error().message;
    EXPECT_EQ(route->api, Api::openai);
    EXPECT_EQ(route->kind, Route::Kind::completion);
    EXPECT_TRUE(route->text_completion);
    auto wire = parse_wire_request(request, *route);
    ASSERT_TRUE(wire) << wire.error().message;
    EXPECT_TRUE(wire->text_completion);
    EXPECT_EQ(wire->chat.max_tokens, 5);
    EXPECT_TRUE(wire->chat.stream);
    EXPECT_TRUE(wire->chat.include_usage);
    EXPECT_EQ(canonical_prompt(wire->chat), "user: Once upon\n");
    EXPECT_TRUE(new_response_id(Api::openai, true).starts_with("cmpl-"));

    request.body() = R"({"model":"m","prompt":["a","b"]})";
    auto defaults = parse_wire_request(request, *route);
    ASSERT_TRUE(defaults);
    EXPECT_EQ(defaults->chat.max_tokens, 16) << "OpenAI's default for this endpoint";
    EXPECT_EQ(canonical_prompt(defaults->chat), "user: a\nuser: b\n");

    request.body() = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
    auto chat_body = parse_wire_request(request, *route);
    ASSERT_FALSE(chat_body);
    EXPECT_NE(chat_body.error().message.find("prompt"), std::string::npos);

    auto no_key = route_request(post("/v1/completions", {}), "");
    ASSERT_FALSE(no_key);
    EXPECT_EQ(no_key.error().code, Errc::unauthorized);
    EXPECT_EQ(no_key.error().api, Api::openai);
}

TEST(RouteRequest, AnthropicModelsListWithBearerAndVersionIsAnthropicShaped) {
    net::Request request(http::verb::get, "/v1/models", 11);
    request.set("authorization", "Bearer k");
    request.set("anthropic-version", "2023-06-01");
    auto route = route_request(request, "k");
    ASSERT_TRUE(route);
    EXPECT_EQ(route->api, Api::anthropic);
    EXPECT_EQ(route->kind, Route::Kind::models);
}

TEST(RouteRequest, OneModelPerApi) {
    net::Request openai(http::verb::get, "/v1/models/gpt-4o", 11);
    openai.set("authorization", "Bearer k");
    auto route = route_request(openai, "");
    ASSERT_TRUE(route);
    EXPECT_EQ(route->kind, Route::Kind::model);
    EXPECT_EQ(route->api, Api::openai);
    EXPECT_EQ(route->model, "gpt-4o");

    net::Request anthropic(http::verb::get, "/v1/models/claude-3-5-sonnet-latest", 11);
    anthropic.set("x-api-key", "k");
    route = route_request(anthropic, "");
    ASSERT_TRUE(route);
    EXPECT_EQ(route->api, Api::anthropic);

    net::Request gemini(http::verb::get, "/v1beta/models/gemini-1.5-pro?key=k", 11);
    route = route_request(gemini, "");
    ASSERT_TRUE(route);
    EXPECT_EQ(route->kind, Route::Kind::model);
    EXPECT_EQ(route->api, Api::gemini);
    EXPECT_EQ(route->model, "gemini-1.5-pro");

    // A POST without :method is still not a route.
    net::Request post_gemini(http::verb::post, "/v1beta/models/gemini-1.5-pro?key=k", 11);
    route = route_request(post_gemini, "");
    ASSERT_FALSE(route);
    EXPECT_EQ(route.error().code, Errc::not_found);

    Profile profile;
    profile.models = {"gpt-4o"};
    EXPECT_EQ(
        model_json(Api::openai, profile, "gpt-4o"),
        R"({"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"tokenradar-sim"})");
    EXPECT_EQ(model_json(Api::openai, profile, "nope"), std::nullopt);
}

TEST(CountTokens, IsAnAnthropicRouteCountingWhatMessagesWouldBill) {
    const std::string version = "2023-06-01";
    auto route = route_request(
        post("/v1/messages/count_tokens", {{"x-api-key", "k"}, {"anthropic-version", version}}),
        "k");
    ASSERT_TRUE(route) << route.error().message;
    EXPECT_EQ(route->api, Api::anthropic);
    EXPECT_EQ(route->kind, Route::Kind::count_tokens);
    auto no_version = route_request(post("/v1/messages/count_tokens", {{"x-api-key", "k"}}), "k");
    ASSERT_FALSE(no_version);
    EXPECT_EQ(no_version.error().code, Errc::bad_request);

    Profile profile;
    profile.models = {"claude"};
    const std::string body =
        R"({"model":"claude","system":"Be brief.","messages":[{"role":"user","content":"Hello there"}]})";
    auto counted = count_tokens_json(body, profile);
    ASSERT_TRUE(counted) << counted.error().message << " (max_tokens is optional here)";
    auto chat = dialect::parse_request(
        Api::anthropic,
        R"({"model":"claude","max_tokens":9,"system":"Be brief.","messages":[{"role":"user","content":"Hello there"}]})");
    ASSERT_TRUE(chat);
    EXPECT_EQ(*counted,
              fmt::format(R"({{"input_tokens":{}}})", estimate_tokens(canonical_prompt(*chat))));

    auto unknown = count_tokens_json(R"({"model":"nope","messages":[]})", profile);
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, Errc::not_found);
    auto bad = count_tokens_json(R"({"model":"claude","messages":7})", profile);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("messages"), std::string::npos) << bad.error().message;
}

TEST(RouteRequest, ControlTakesTheKeyInEveryApisShapeAndOnlyItsMethods) {
    auto control = [](http::verb verb, std::string target,
                      std::vector<std::pair<std::string, std::string>> headers) {
        net::Request request(verb, target, 11);
        for (auto& [name, value] : headers) request.set(name, value);
        return route_request(request, "sk-sim");
    };
    for (auto verb : {http::verb::get, http::verb::post, http::verb::delete_}) {
        SCOPED_TRACE(std::string(http::to_string(verb)));
        for (auto [name, value] : {std::pair{"authorization", "Bearer sk-sim"},
                                   {"x-api-key", "sk-sim"},
                                   {"x-goog-api-key", "sk-sim"}}) {
            auto route = control(verb, "/sim/control", {{name, value}});
            ASSERT_TRUE(route) << name << ": " << route.error().message;
            EXPECT_EQ(route->kind, Route::Kind::control);
        }
        EXPECT_TRUE(control(verb, "/sim/control?key=sk-sim", {}));
        // Any shape carrying the right key will do, even beside a wrong one.
        EXPECT_TRUE(control(verb, "/sim/control",
                            {{"x-api-key", "nope"}, {"authorization", "Bearer sk-sim"}}));
    }
    auto none = control(http::verb::post, "/sim/control", {});
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().code, Errc::unauthorized);
    EXPECT_EQ(none.error().api, Api::openai);
    EXPECT_NE(none.error().message.find("needs the sim's key"), std::string::npos);
    auto wrong = control(http::verb::get, "/sim/control", {{"authorization", "Bearer nope"}});
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code, Errc::unauthorized);
    EXPECT_FALSE(control(http::verb::get, "/sim/control", {{"authorization", "Basic sk-sim"}}));

    auto put = control(http::verb::put, "/sim/control", {{"x-api-key", "sk-sim"}});
    ASSERT_FALSE(put);
    EXPECT_EQ(put.error().code, Errc::method_not_allowed);

    // Without a required key any non-empty key is accepted, as on the API routes.
    net::Request any(http::verb::get, "/sim/control", 11);
    any.set("x-api-key", "whatever");
    EXPECT_TRUE(route_request(any, ""));
    net::Request empty(http::verb::get, "/sim/control", 11);
    EXPECT_FALSE(route_request(empty, ""));
}

}  // namespace
}  // namespace tokenradar::sim
