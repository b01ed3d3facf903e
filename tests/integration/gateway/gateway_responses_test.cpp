// The gateway's OpenAI Responses door (POST /v1/responses, dialect/responses.hpp): a Responses
// client -> tokenradar serve -> sims of every dialect. Streams are read event by event as the
// openai SDK's accumulator reads them, answers are compared with what the Chat Completions door
// says for the same prompt, and the records must be the Chat door's: upstream api label, stream,
// first token, fallback and cache labels.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
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
const std::vector<std::string> kModels{"via-openai", "via-anthropic", "via-gemini"};
const std::vector<std::string> kApis{"openai", "anthropic", "gemini"};

std::string responses_body(std::string_view model, bool stream, int max_output_tokens) {
    json::object o{{"model", model},
                   {"instructions", "Be brief."},
                   {"input", kPrompt},
                   {"max_output_tokens", max_output_tokens},
                   {"store", false}};
    if (stream) o["stream"] = true;
    return json::serialize(o);
}

const json::object kWeather{
    {"type", "function"},
    {"name", "get_weather"},
    {"parameters",
     json::object{{"type", "object"},
                  {"properties", json::object{{"city", json::object{{"type", "string"}}}}},
                  {"required", json::array{"city"}}}}};

std::string tool_body(std::string_view model, bool stream, json::array input) {
    json::object o{{"model", model},
                   {"input", std::move(input)},
                   {"max_output_tokens", 64},
                   {"tools", json::array{kWeather}},
                   {"tool_choice", json::object{{"type", "function"}, {"name", "get_weather"}}}};
    if (stream) o["stream"] = true;
    return json::serialize(o);
}

std::string header(const testing::Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

// The Chat Completions door's text for the same prompt: the reference.
std::string chat_door_text(GatewayFixture& gw, std::string_view model, int max_tokens) {
    json::object o{
        {"model", model},
        {"max_tokens", max_tokens},
        {"messages", json::array{json::object{{"role", "system"}, {"content", "Be brief."}},
                                 json::object{{"role", "user"}, {"content", kPrompt}}}}};
    auto f = testing::post_json(gw.url("/v1/chat/completions"), json::serialize(o));
    auto response = dialect::parse_response(Api::openai, f.body);
    return response ? response->text : "(no answer: " + f.body + ")";
}

// A Responses stream as the SDK's accumulator reads it: every event's `event:` line is its
// type, sequence numbers count from 0, and indexes point at items that were added.
struct ResponsesStream {
    std::vector<std::string> types;
    std::string text;  // the output_text deltas
    std::vector<json::object> items_done;
    std::optional<json::object> final;  // response.completed / incomplete / failed
    bool consistent = true;
};
ResponsesStream read_responses_stream(const std::string& body) {
    ResponsesStream s;
    std::size_t items = 0;
    sse::SseParser parser;
    (void)parser.feed(body, [&](const sse::SseEvent& e) {
        boost::system::error_code ec;
        auto v = json::parse(e.data, ec);
        if (ec || !v.is_object() || v.at("type") != json::string(e.event) ||
            v.at("sequence_number") != static_cast<std::int64_t>(s.types.size())) {
            s.consistent = false;
            return;
        }
        const json::object& o = v.as_object();
        s.types.emplace_back(e.event);
        if (const auto* index = o.if_contains("output_index");
            index != nullptr && index->to_number<std::size_t>() > items) {
            s.consistent = false;
        }
        if (e.event == "response.output_item.added") ++items;
        if (e.event == "response.output_text.delta") s.text += o.at("delta").as_string();
        if (e.event == "response.output_item.done")
            s.items_done.push_back(o.at("item").as_object());
        if (e.event == "response.completed" || e.event == "response.incomplete" ||
            e.event == "response.failed") {
            s.final = o.at("response").as_object();
        }
    });
    return s;
}

TEST(ResponsesDoor, StreamsFromEveryUpstreamDialectAsResponsesEvents) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    std::vector<std::string> texts;
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto f = testing::post_json(gw.url("/v1/responses"), responses_body(model, true, 25));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "text/event-stream");
        const auto s = read_responses_stream(f.body);
        EXPECT_TRUE(s.consistent) << f.body;
        ASSERT_GE(s.types.size(), 9u) << f.body;
        EXPECT_EQ(s.types[0], "response.created");
        EXPECT_EQ(s.types[1], "response.in_progress");
        EXPECT_EQ(s.types[2], "response.output_item.added");
        EXPECT_EQ(s.types[3], "response.content_part.added");
        EXPECT_EQ(s.types[4], "response.output_text.delta");
        EXPECT_EQ(s.types.back(), "response.incomplete");
        ASSERT_TRUE(s.final);
        EXPECT_EQ(s.final->at("incomplete_details").at("reason"), "max_output_tokens");
        EXPECT_EQ(s.final->at("usage").at("output_tokens"), 25);
        EXPECT_GT(s.final->at("usage").at("input_tokens").to_number<std::int64_t>(), 0);
        EXPECT_EQ(s.final->at("output").at(0).at("content").at(0).at("text").as_string(), s.text);
        texts.push_back(s.text);
    }
    // Metered as the Chat door meters: the upstream's api, a stream, its first token.
    auto records = gw.records().wait_for(3);
    ASSERT_EQ(records.size(), 3u);
    for (std::size_t i = 0; i < records.size(); ++i) {
        SCOPED_TRACE(kModels[i]);
        EXPECT_EQ(records[i].status, RequestStatus::ok);
        EXPECT_EQ(records[i].labels.api, kApis[i]);
        EXPECT_TRUE(records[i].labels.stream);
        EXPECT_EQ(records[i].output_tokens, 25);
        EXPECT_EQ(records[i].token_source, TokenSource::usage);
        ASSERT_TRUE(records[i].t.first_token.has_value());
        EXPECT_GT(*records[i].t.first_token, records[i].t.send);
        EXPECT_EQ(texts[i], chat_door_text(gw, kModels[i], 25));
    }
}

TEST(ResponsesDoor, AnswersWholeResponses) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (std::size_t i = 0; i < kModels.size(); ++i) {
        SCOPED_TRACE(kModels[i]);
        auto f = testing::post_json(gw.url("/v1/responses"), responses_body(kModels[i], false, 12));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "application/json");
        const auto o = json::parse(f.body).as_object();
        EXPECT_EQ(o.at("object"), "response");
        EXPECT_TRUE(o.at("id").as_string().starts_with("resp_"));
        EXPECT_EQ(o.at("status"), "incomplete");
        const auto& message = o.at("output").at(0).as_object();
        EXPECT_EQ(message.at("type"), "message");
        EXPECT_EQ(message.at("role"), "assistant");
        EXPECT_EQ(o.at("usage").at("output_tokens"), 12);
        auto records = gw.records().wait_for(2 * i + 1);
        ASSERT_EQ(records.size(), 2 * i + 1);
        EXPECT_EQ(records.back().labels.api, kApis[i]);
        EXPECT_FALSE(records.back().labels.stream);
        EXPECT_EQ(records.back().output_tokens, 12);
        EXPECT_EQ(message.at("content").at(0).at("text").as_string(),
                  chat_door_text(gw, kModels[i], 12));
    }
}

TEST(ResponsesDoor, FunctionCallsStreamAndRoundTrip) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const json::array ask{json::object{{"role", "user"}, {"content", "Weather in Oslo?"}}};
    for (const auto& model : kModels) {
        SCOPED_TRACE(model);
        auto streamed = testing::post_json(gw.url("/v1/responses"), tool_body(model, true, ask));
        ASSERT_EQ(streamed.status, 200u) << streamed.body;
        const auto s = read_responses_stream(streamed.body);
        EXPECT_TRUE(s.consistent) << streamed.body;
        ASSERT_EQ(s.items_done.size(), 1u) << streamed.body;
        const json::object& call = s.items_done[0];
        EXPECT_EQ(call.at("type"), "function_call");
        EXPECT_EQ(call.at("name"), "get_weather");
        EXPECT_TRUE(json::parse(call.at("arguments").as_string()).at("city").is_string());
        EXPECT_NE(
            std::find(s.types.begin(), s.types.end(), "response.function_call_arguments.delta"),
            s.types.end());
        EXPECT_EQ(s.types.back(), "response.completed");

        auto whole = testing::post_json(gw.url("/v1/responses"), tool_body(model, false, ask));
        ASSERT_EQ(whole.status, 200u) << whole.body;
        const json::object item = json::parse(whole.body).at("output").at(0).as_object();
        ASSERT_EQ(item.at("type"), "function_call") << whole.body;
        json::array turn = ask;
        turn.push_back(json::object{{"type", "function_call"},
                                    {"call_id", item.at("call_id")},
                                    {"name", item.at("name")},
                                    {"arguments", item.at("arguments")}});
        turn.push_back(json::object{{"type", "function_call_output"},
                                    {"call_id", item.at("call_id")},
                                    {"output", "Sunny"}});
        json::object next = json::parse(tool_body(model, false, turn)).as_object();
        next.erase("tool_choice");
        auto answer = testing::post_json(gw.url("/v1/responses"), json::serialize(next));
        ASSERT_EQ(answer.status, 200u) << answer.body;
        const json::value out = json::parse(answer.body).at("output").at(0);
        EXPECT_EQ(out.at("type"), "message") << answer.body;
    }
}

TEST(ResponsesDoor, ErrorsAreOpenAiErrorsNamingTheField) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const auto message = [](const testing::Fetched& f) {
        boost::system::error_code ec;
        auto v = json::parse(f.body, ec);
        if (ec || !v.is_object() || !v.as_object().contains("error"))
            return "(not an error: " + f.body + ")";
        return std::string(v.at("error").at("message").as_string());
    };
    auto unknown = testing::post_json(gw.url("/v1/responses"), responses_body("nope", false, 5));
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_NE(message(unknown).find("nope"), std::string::npos);
    auto previous = testing::post_json(
        gw.url("/v1/responses"),
        R"({"model":"via-openai","input":"Hi","previous_response_id":"resp_1"})");
    EXPECT_EQ(previous.status, 400u);
    EXPECT_NE(message(previous).find("previous_response_id"), std::string::npos);
    // reasoning: an OpenAI upstream takes it, an Anthropic one cannot.
    const std::string reasoning = R"({"model":"@","input":"Hi","reasoning":{"effort":"high"}})";
    std::string anthropic = reasoning;
    anthropic.replace(anthropic.find('@'), 1, "via-anthropic");
    auto refused = testing::post_json(gw.url("/v1/responses"), anthropic);
    EXPECT_EQ(refused.status, 400u);
    EXPECT_EQ(message(refused).rfind("reasoning.effort: ", 0), 0u) << refused.body;
    std::string openai = reasoning;
    openai.replace(openai.find('@'), 1, "via-openai");
    EXPECT_EQ(testing::post_json(gw.url("/v1/responses"), openai).status, 200u);
    auto get = testing::fetch(boost::beast::http::verb::get, gw.url("/v1/responses"));
    EXPECT_EQ(get.status, 405u);
}

TEST(ResponsesDoor, FallsBackAndServesFromTheCacheAsTheChatDoorDoes) {
    SimFixture sim("instant");
    std::uint16_t dead_port = 0;  // a port nobody listens on: bind one, then free it
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
        dead_port = a.local_endpoint().port();
    }
    const std::string extra = R"(
[[providers]]
name = "dead"
api = "openai"
base_url = "http://127.0.0.1:)" +
                              std::to_string(dead_port) +
                              R"(/v1"
key_env = ""
[[models]]
name = "resilient"
upstreams = ["dead/gpt-4o", "sim-anthropic/claude-3-5-sonnet-latest"]
[[models]]
name = "cached"
upstreams = ["sim-gemini/gemini-1.5-pro"]
cache = "exact"
[cache]
keyless = true
)";
    GatewayFixture gw(three_dialects_config(sim.base_url(), extra));
    auto f = testing::post_json(gw.url("/v1/responses"), responses_body("resilient", true, 5));
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(header(f, "x-tokenradar-upstream"), "sim-anthropic/claude-3-5-sonnet-latest");
    EXPECT_EQ(read_responses_stream(f.body).types.back(), "response.incomplete");
    auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].status, RequestStatus::connection_error);
    EXPECT_EQ(records[1].labels.route, Route::fallback);
    EXPECT_EQ(records[1].labels.api, "anthropic");

    // Greedy, so cacheable without a seed.
    const auto cached = [](bool stream) {
        json::object o = json::parse(responses_body("cached", stream, 7)).as_object();
        o["temperature"] = 0;
        return json::serialize(o);
    };
    auto miss = testing::post_json(gw.url("/v1/responses"), cached(true));
    ASSERT_EQ(miss.status, 200u) << miss.body;
    EXPECT_EQ(header(miss, "x-tokenradar-cache"), "miss");
    const auto streamed = read_responses_stream(miss.body);
    auto hit = testing::post_json(gw.url("/v1/responses"), cached(false));
    ASSERT_EQ(hit.status, 200u) << hit.body;
    EXPECT_EQ(header(hit, "x-tokenradar-cache"), "exact");
    const auto o = json::parse(hit.body);
    EXPECT_EQ(o.at("object"), "response");
    EXPECT_EQ(o.at("output").at(0).at("content").at(0).at("text").as_string(), streamed.text);
    auto replayed = testing::post_json(gw.url("/v1/responses"), cached(true));
    EXPECT_EQ(header(replayed, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(read_responses_stream(replayed.body).text, streamed.text);
}

}  // namespace
}  // namespace tokenradar::gateway
