// The gateway's doors for clients of other dialects (dialect/egress.hpp): an Anthropic
// Messages client -> tokenradar serve -> sims of every dialect. The answer is checked event
// by event in the client's dialect, against what the OpenAI door says for the same prompt,
// and on the records the gateway writes.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/codec.hpp>
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
    // One streamed and one whole request per model, each measured like the OpenAI door's.
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

TEST(AnthropicDoor, TakesTheClientKeyAsXApiKey) {
    SimFixture sim("instant");
    std::string config = three_dialects_config(sim.base_url());
    const std::string keyed = R"(
[auth]
mode = "keys"
[[auth.keys]]
name = "team"
sha256 = ")" + net::hash_api_key("tr-client-key") +
                              "\"\n";
    config.replace(config.find("[auth]\nmode = \"none\"\n"), 21, keyed);
    GatewayFixture gw(config);
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

}  // namespace
}  // namespace tokenradar::gateway
