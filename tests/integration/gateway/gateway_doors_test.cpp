// The gateway's doors for clients of other dialects (dialect/egress.hpp): an Anthropic
// Messages or a Gemini generateContent client -> tokenradar serve -> sims of every dialect. The
// answer is checked event by event in the client's dialect, against what the OpenAI door says for
// the same prompt, and on the records the gateway writes.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::gateway {
namespace {

namespace json = boost::json;
using dialect::Api;
using testing::GatewayFixture;
using testing::SimFixture;
using testing::three_dialects_config;

constexpr std::string_view kPrompt = "Tell me about latency.";

std::string messages_body(std::string_view model, bool stream, int max_tokens) {
    json::object o{{"model", model},
                   {"max_tokens", max_tokens},
                   {"system", "Be brief."},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", kPrompt}}}}};
    if (stream) o["stream"] = true;
    return json::serialize(o);
}

std::string chat_body(std::string_view model, bool stream, int max_tokens) {
    json::object o{
        {"model", model},
        {"max_tokens", max_tokens},
        {"messages", json::array{json::object{{"role", "system"}, {"content", "Be brief."}},
                                 json::object{{"role", "user"}, {"content", kPrompt}}}}};
    if (stream) o["stream"] = true;
    return json::serialize(o);
}

std::string header(const testing::Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

// What an Anthropic stream said, read as the Anthropic SDK reads it: the event names in order,
// the text, the stop reason and usage (message_start's, then message_delta's), and whether every
// payload is JSON whose "type" names its event.
struct AnthropicStream {
    std::vector<std::string> events;
    std::string text;
    std::string stop_reason;
    std::optional<std::int64_t> output_tokens;
    std::optional<std::int64_t> input_tokens;
    bool types_match = true;
    std::optional<json::object> error;
};
AnthropicStream read_anthropic_stream(const std::string& body) {
    AnthropicStream s;
    sse::SseParser parser;
    (void)parser.feed(body, [&](const sse::SseEvent& e) {
        s.events.emplace_back(e.event);
        boost::system::error_code ec;
        auto v = json::parse(e.data, ec);
        if (ec || !v.is_object() || !v.as_object().contains("type") ||
            v.as_object().at("type").as_string() != e.event) {
            s.types_match = false;
            return;
        }
        const auto& o = v.as_object();
        if (e.event == "content_block_delta") {
            const auto& delta = o.at("delta").as_object();
            if (delta.at("type").as_string() == "text_delta")
                s.text += delta.at("text").as_string();
        } else if (e.event == "message_start") {
            const auto& usage = o.at("message").as_object().at("usage").as_object();
            s.input_tokens = usage.at("input_tokens").to_number<std::int64_t>();
        } else if (e.event == "message_delta") {
            s.stop_reason = o.at("delta").as_object().at("stop_reason").as_string();
            const auto& usage = o.at("usage").as_object();
            s.output_tokens = usage.at("output_tokens").to_number<std::int64_t>();
            // Cumulative: an upstream that reports input tokens at the end (OpenAI, Gemini)
            // has them here, not in message_start.
            if (const auto* input = usage.if_contains("input_tokens")) {
                s.input_tokens = input->to_number<std::int64_t>();
            }
        } else if (e.event == "error") {
            s.error = o.at("error").as_object();
        }
    });
    return s;
}

// The OpenAI door's text for the same prompt: the reference the Anthropic door must match.
std::string openai_door_text(GatewayFixture& gw, std::string_view model, int max_tokens) {
    auto f =
        testing::post_json(gw.url("/v1/chat/completions"), chat_body(model, false, max_tokens));
    auto response = dialect::parse_response(Api::openai, f.body);
    return response ? response->text : "(no answer: " + f.body + ")";
}

const std::vector<std::string> kModels{"via-openai", "via-anthropic", "via-gemini"};

// One streamed and one whole request per model, each measured like the OpenAI door's: the
// first record is a stream with its first token.
void expect_streamed_door_records(GatewayFixture& gw) {
    auto records = gw.records().wait_for(6);
    ASSERT_EQ(records.size(), 6u);
    for (const auto& m : records) {
        EXPECT_EQ(m.status, RequestStatus::ok);
        EXPECT_EQ(m.output_tokens, 25);
        EXPECT_EQ(m.token_source, TokenSource::usage);
    }
    EXPECT_TRUE(records[0].labels.stream);
    EXPECT_TRUE(records[0].t.first_token.has_value());
}

TEST(AnthropicDoor, StreamsFromEveryUpstreamDialectAsAnthropicEvents) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto f = testing::post_json(gw.url("/v1/messages"), messages_body(model, true, 25));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "text/event-stream");
        EXPECT_FALSE(header(f, "x-tokenradar-request-id").empty());
        const auto s = read_anthropic_stream(f.body);
        EXPECT_TRUE(s.types_match) << f.body;
        ASSERT_GE(s.events.size(), 6u) << f.body;
        EXPECT_EQ(s.events.front(), "message_start");
        EXPECT_EQ(s.events[1], "content_block_start");
        EXPECT_EQ(s.events[2], "content_block_delta");
        EXPECT_EQ(s.events[s.events.size() - 3], "content_block_stop");
        EXPECT_EQ(s.events[s.events.size() - 2], "message_delta");
        EXPECT_EQ(s.events.back(), "message_stop");
        EXPECT_EQ(s.text, openai_door_text(gw, model, 25));
        EXPECT_FALSE(s.text.empty());
        EXPECT_EQ(s.stop_reason, "max_tokens");
        EXPECT_EQ(s.output_tokens, 25);
        EXPECT_GT(s.input_tokens.value_or(0), 0);
        EXPECT_FALSE(s.error.has_value());
    }
    expect_streamed_door_records(gw);
}

TEST(AnthropicDoor, AnswersWholeMessages) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto f = testing::post_json(gw.url("/v1/messages"), messages_body(model, false, 12));
        ASSERT_EQ(f.status, 200u) << f.body;
        const auto v = json::parse(f.body).as_object();
        EXPECT_EQ(v.at("type").as_string(), "message");
        EXPECT_EQ(v.at("role").as_string(), "assistant");
        auto response = dialect::parse_anthropic_response(f.body);
        ASSERT_TRUE(response) << f.body;
        EXPECT_EQ(response->text, openai_door_text(gw, model, 12));
        EXPECT_EQ(response->usage.output_tokens, 12);
        EXPECT_EQ(response->finish_reason, dialect::FinishReason::length);
    }
}

TEST(AnthropicDoor, ErrorsComeInAnthropicShape) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const auto error_type = [](const testing::Fetched& f) {
        boost::system::error_code ec;
        auto v = json::parse(f.body, ec);
        if (ec || !v.is_object() || v.as_object().if_contains("type") == nullptr ||
            v.as_object().at("type") != "error") {
            return std::string("(not an Anthropic error: " + f.body + ")");
        }
        return std::string(v.at("error").at("type").as_string());
    };
    auto unknown = testing::post_json(gw.url("/v1/messages"), messages_body("nope", false, 5));
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_EQ(error_type(unknown), "not_found_error");
    auto bad = testing::post_json(gw.url("/v1/messages"),
                                  R"({"model":"via-openai","max_tokens":5,"messages":7})");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_EQ(error_type(bad), "invalid_request_error");
    EXPECT_NE(bad.body.find("messages"), std::string::npos) << bad.body;  // names the field
    auto get = testing::fetch(boost::beast::http::verb::get, gw.url("/v1/messages"));
    EXPECT_EQ(get.status, 405u);
    EXPECT_EQ(error_type(get), "invalid_request_error");
}

// POST /v1/messages/count_tokens: forwarded to an Anthropic upstream (the sim counts as it bills
// /v1/messages), a 400 in Anthropic's shape naming why for a model without one.
TEST(AnthropicDoor, CountTokensIsForwardedToAnthropicUpstreamsOnly) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    json::object request{
        {"model", "via-anthropic"},
        {"system", "Be brief."},
        {"messages", json::array{json::object{{"role", "user"}, {"content", kPrompt}}}}};
    auto counted =
        testing::post_json(gw.url("/v1/messages/count_tokens"), json::serialize(request));
    ASSERT_EQ(counted.status, 200u) << counted.body;
    EXPECT_EQ(header(counted, "x-tokenradar-upstream"), "sim-anthropic/claude-3-5-sonnet-latest");
    const auto input_tokens = json::parse(counted.body).at("input_tokens").as_int64();
    // What the same request costs when asked: the Messages usage of that upstream.
    auto answered =
        testing::post_json(gw.url("/v1/messages"), messages_body("via-anthropic", false, 5));
    ASSERT_EQ(answered.status, 200u) << answered.body;
    EXPECT_EQ(json::parse(answered.body).at("usage").at("input_tokens").as_int64(), input_tokens);

    request["model"] = "via-openai";
    auto refused =
        testing::post_json(gw.url("/v1/messages/count_tokens"), json::serialize(request));
    EXPECT_EQ(refused.status, 400u) << refused.body;
    const auto error = json::parse(refused.body);
    EXPECT_EQ(error.at("type"), "error") << refused.body;
    EXPECT_NE(refused.body.find("no Anthropic upstream"), std::string::npos) << refused.body;

    request["model"] = "nope";
    auto unknown =
        testing::post_json(gw.url("/v1/messages/count_tokens"), json::serialize(request));
    EXPECT_EQ(unknown.status, 404u) << unknown.body;
    EXPECT_EQ(json::parse(unknown.body).at("error").at("type"), "not_found_error");
}

// The three dialects behind a listener that wants the client key "tr-client-key".
std::string keyed_config(const SimFixture& sim) {
    std::string config = three_dialects_config(sim.base_url());
    const std::string keyed = R"(
[auth]
mode = "keys"
[[auth.keys]]
name = "team"
sha256 = ")" + net::hash_api_key("tr-client-key") +
                              "\"\n";
    config.replace(config.find("[auth]\nmode = \"none\"\n"), 21, keyed);
    return config;
}

TEST(AnthropicDoor, TakesTheClientKeyAsXApiKey) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    const std::string body = messages_body("via-anthropic", false, 5);
    auto none = testing::post_json(gw.url("/v1/messages"), body);
    EXPECT_EQ(none.status, 401u);
    EXPECT_NE(none.body.find("authentication_error"), std::string::npos) << none.body;
    auto wrong = testing::post_json(gw.url("/v1/messages"), body, {{"x-api-key", "tr-wrong"}});
    EXPECT_EQ(wrong.status, 401u);
    auto right = testing::post_json(gw.url("/v1/messages"), body, {{"x-api-key", "tr-client-key"}});
    EXPECT_EQ(right.status, 200u) << right.body;
    auto bearer = testing::post_json(gw.url("/v1/messages"), body,
                                     {{"authorization", "Bearer tr-client-key"}});
    EXPECT_EQ(bearer.status, 200u) << bearer.body;
}

// --- The Gemini door ---

std::string generate_body(int max_tokens) {
    return json::serialize(json::object{
        {"systemInstruction",
         json::object{{"parts", json::array{json::object{{"text", "Be brief."}}}}}},
        {"contents",
         json::array{json::object{{"role", "user"},
                                  {"parts", json::array{json::object{{"text", kPrompt}}}}}}},
        {"generationConfig", json::object{{"maxOutputTokens", max_tokens}}}});
}

net::Url gemini_url(GatewayFixture& gw, std::string_view model, bool stream) {
    return gw.url(dialect::gemini_path(model, stream));
}

// A Gemini stream as the Google GenAI SDK reads it: every event's data is a
// GenerateContentResponse; the text, the last chunk's finish reason and usage.
struct GeminiStream {
    std::size_t chunks = 0;
    std::string text;
    std::string finish_reason;
    std::optional<std::int64_t> output_tokens;
    std::optional<std::int64_t> prompt_tokens;
    std::vector<json::object> calls;
    bool all_responses = true;  // every chunk has candidates[0].content.parts
    std::optional<json::object> error;
};
GeminiStream read_gemini_stream(const std::string& body) {
    GeminiStream s;
    sse::SseParser parser;
    (void)parser.feed(body, [&](const sse::SseEvent& e) {
        ++s.chunks;
        boost::system::error_code ec;
        auto v = json::parse(e.data, ec);
        if (ec || !v.is_object()) {
            s.all_responses = false;
            return;
        }
        const auto& o = v.as_object();
        if (const auto* error = o.if_contains("error")) {
            s.error = error->as_object();
            return;
        }
        const auto* candidates = o.if_contains("candidates");
        if (candidates == nullptr || !candidates->is_array() || candidates->as_array().empty()) {
            s.all_responses = false;
            return;
        }
        const auto& candidate = candidates->as_array()[0].as_object();
        for (const auto& part : candidate.at("content").at("parts").as_array()) {
            if (const auto* text = part.as_object().if_contains("text"))
                s.text += text->as_string();
            if (const auto* call = part.as_object().if_contains("functionCall"))
                s.calls.push_back(call->as_object());
        }
        if (const auto* finish = candidate.if_contains("finishReason"))
            s.finish_reason = finish->as_string();
        if (const auto* usage = o.if_contains("usageMetadata")) {
            const auto& u = usage->as_object();
            s.prompt_tokens = u.at("promptTokenCount").to_number<std::int64_t>();
            if (const auto* out = u.if_contains("candidatesTokenCount"))
                s.output_tokens = out->to_number<std::int64_t>();
        }
    });
    return s;
}

// {"code", "message", "status"} of a Gemini error body, or a status naming what came instead.
std::string gemini_status(const testing::Fetched& f) {
    boost::system::error_code ec;
    auto v = json::parse(f.body, ec);
    const json::value* error = ec || !v.is_object() ? nullptr : v.as_object().if_contains("error");
    if (error == nullptr || !error->is_object() || !error->as_object().contains("status") ||
        error->as_object().at("code") != static_cast<std::int64_t>(f.status)) {
        return "(not a Gemini error: " + f.body + ")";
    }
    return std::string(error->at("status").as_string());
}

TEST(GeminiDoor, StreamsFromEveryUpstreamDialectAsGeminiChunks) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto f = testing::post_json(gemini_url(gw, model, true), generate_body(25));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "text/event-stream");
        EXPECT_FALSE(header(f, "x-tokenradar-request-id").empty());
        const auto s = read_gemini_stream(f.body);
        EXPECT_TRUE(s.all_responses) << f.body;
        EXPECT_GT(s.chunks, 3u) << f.body;
        EXPECT_EQ(s.text, openai_door_text(gw, model, 25));
        EXPECT_FALSE(s.text.empty());
        EXPECT_EQ(s.finish_reason, "MAX_TOKENS");
        EXPECT_EQ(s.output_tokens, 25);
        EXPECT_GT(s.prompt_tokens.value_or(0), 0);
        EXPECT_FALSE(s.error.has_value());
    }
    expect_streamed_door_records(gw);
}

TEST(GeminiDoor, AnswersWholeResponses) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto f = testing::post_json(gemini_url(gw, model, false), generate_body(12));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "application/json");
        auto response = dialect::parse_gemini_response(f.body);
        ASSERT_TRUE(response) << f.body;
        EXPECT_EQ(response->text, openai_door_text(gw, model, 12));
        EXPECT_EQ(response->usage.output_tokens, 12);
        EXPECT_EQ(response->finish_reason, dialect::FinishReason::length);
    }
}

TEST(GeminiDoor, FunctionCallsAndTheirResponsesRoundTrip) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const json::object weather{
        {"name", "get_weather"},
        {"parametersJsonSchema",
         json::object{{"type", "object"},
                      {"properties", json::object{{"city", json::object{{"type", "string"}}}}},
                      {"required", json::array{"city"}}}}};
    const json::object forced{
        {"tools", json::array{json::object{{"functionDeclarations", json::array{weather}}}}},
        {"toolConfig",
         json::object{{"functionCallingConfig",
                       json::object{{"mode", "ANY"},
                                    {"allowedFunctionNames", json::array{"get_weather"}}}}}}};
    const auto ask = [&] {
        json::object body = forced;
        body["contents"] = json::array{json::object{
            {"role", "user"}, {"parts", json::array{json::object{{"text", "Weather in Oslo?"}}}}}};
        return json::serialize(body);
    };
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto streamed = testing::post_json(gemini_url(gw, model, true), ask());
        ASSERT_EQ(streamed.status, 200u) << streamed.body;
        const auto s = read_gemini_stream(streamed.body);
        ASSERT_EQ(s.calls.size(), 1u) << streamed.body;
        EXPECT_EQ(s.calls[0].at("name"), "get_weather");
        EXPECT_TRUE(s.calls[0].at("args").as_object().at("city").is_string()) << streamed.body;
        EXPECT_EQ(s.finish_reason, "STOP");

        auto whole = testing::post_json(gemini_url(gw, model, false), ask());
        ASSERT_EQ(whole.status, 200u) << whole.body;
        auto v = json::parse(whole.body);
        // The model's turn goes back as it came, then a response naming the function, no id.
        json::value turn = v.at("candidates").at(0).at("content");
        json::object body = forced;
        body.erase("toolConfig");
        body["contents"] = json::array{
            json::object{{"role", "user"},
                         {"parts", json::array{json::object{{"text", "Weather in Oslo?"}}}}},
            turn,
            json::object{
                {"role", "user"},
                {"parts", json::array{json::object{
                              {"functionResponse",
                               json::object{{"name", "get_weather"},
                                            {"response", json::object{{"result", "Sunny"}}}}}}}}}};
        auto answer = testing::post_json(gemini_url(gw, model, false), json::serialize(body));
        ASSERT_EQ(answer.status, 200u) << answer.body;
        auto response = dialect::parse_gemini_response(answer.body);
        ASSERT_TRUE(response) << answer.body;
        EXPECT_FALSE(response->text.empty()) << answer.body;
    }
}

TEST(GeminiDoor, ErrorsComeInGeminiShape) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    auto unknown = testing::post_json(gemini_url(gw, "nope", false), generate_body(5));
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_EQ(gemini_status(unknown), "NOT_FOUND");
    auto bad = testing::post_json(gemini_url(gw, "via-openai", false), R"({"contents":7})");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_EQ(gemini_status(bad), "INVALID_ARGUMENT");
    EXPECT_NE(bad.body.find("contents"), std::string::npos) << bad.body;  // names the field
    auto no_sse = testing::post_json(gw.url("/v1beta/models/via-openai:streamGenerateContent"),
                                     generate_body(5));
    EXPECT_EQ(no_sse.status, 400u);
    EXPECT_EQ(gemini_status(no_sse), "INVALID_ARGUMENT");
    EXPECT_NE(no_sse.body.find("alt=sse"), std::string::npos) << no_sse.body;
    auto method = testing::post_json(gw.url("/v1beta/models/via-openai:embedContent"), "{}");
    EXPECT_EQ(method.status, 404u);
    EXPECT_NE(method.body.find("embedContent"), std::string::npos) << method.body;
    EXPECT_EQ(gemini_status(method), "NOT_FOUND");
    auto get = testing::fetch(boost::beast::http::verb::get, gemini_url(gw, "via-openai", false));
    EXPECT_EQ(get.status, 405u);
    EXPECT_EQ(gemini_status(get), "INVALID_ARGUMENT");
    // A translation the upstream cannot honour is a 400 naming the field, in Gemini's shape.
    auto two = testing::post_json(gemini_url(gw, "via-anthropic", false),
                                  R"({"contents":[{"parts":[{"text":"x"}]}],)"
                                  R"("generationConfig":{"candidateCount":2}})");
    EXPECT_EQ(two.status, 400u) << two.body;
    EXPECT_EQ(gemini_status(two), "INVALID_ARGUMENT");
}

TEST(GeminiDoor, ListsTheModelsAsGeminiModels) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    auto list = testing::fetch(boost::beast::http::verb::get, gw.url("/v1beta/models"));
    ASSERT_EQ(list.status, 200u) << list.body;
    std::vector<std::string> names;
    const json::value listed = json::parse(list.body);
    for (const auto& m : listed.at("models").as_array())
        names.emplace_back(m.at("name").as_string());
    EXPECT_EQ(names, (std::vector<std::string>{"models/via-openai", "models/via-anthropic",
                                               "models/via-gemini"}));
    auto one = testing::fetch(boost::beast::http::verb::get, gw.url("/v1beta/models/via-gemini"));
    ASSERT_EQ(one.status, 200u) << one.body;
    EXPECT_EQ(json::parse(one.body).at("name"), "models/via-gemini");
    auto none = testing::fetch(boost::beast::http::verb::get, gw.url("/v1beta/models/nope"));
    EXPECT_EQ(none.status, 404u);
    EXPECT_EQ(gemini_status(none), "NOT_FOUND");
}

TEST(GeminiDoor, TakesTheClientKeyAsXGoogApiKeyOrTheKeyParameter) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    const std::string body = generate_body(5);
    auto none = testing::post_json(gemini_url(gw, "via-gemini", false), body);
    EXPECT_EQ(none.status, 401u);
    EXPECT_EQ(gemini_status(none), "UNAUTHENTICATED");
    auto wrong =
        testing::post_json(gemini_url(gw, "via-gemini", false), body, {{"x-goog-api-key", "no"}});
    EXPECT_EQ(wrong.status, 401u);
    auto header_key = testing::post_json(gemini_url(gw, "via-gemini", false), body,
                                         {{"x-goog-api-key", "tr-client-key"}});
    EXPECT_EQ(header_key.status, 200u) << header_key.body;
    auto url_key = testing::post_json(
        gw.url("/v1beta/models/via-gemini:streamGenerateContent?alt=sse&key=tr-client-key"), body);
    EXPECT_EQ(url_key.status, 200u) << url_key.body;
    auto list =
        testing::fetch(boost::beast::http::verb::get, gw.url("/v1beta/models?key=tr-client-key"));
    EXPECT_EQ(list.status, 200u) << list.body;
}

}  // namespace
}  // namespace tokenradar::gateway
