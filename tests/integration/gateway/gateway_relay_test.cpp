// The gateway end to end on 127.0.0.1: an OpenAI client -> tokenradar serve -> simulated or
// scripted upstreams. Each case is one behaviour the gateway promises, checked on the bytes the
// client gets and on the records the gateway writes.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using dialect::Api;
using std::chrono::milliseconds;
using testing::GatewayFixture;
using testing::ScriptedServer;
using testing::SimFixture;
using testing::sse_script;
using testing::three_dialects_config;

constexpr std::string_view kUpstreamKey = "sk-upstream-secret-1234";

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (std::size_t at = s.find(from); at != std::string::npos;
         at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
    return s;
}

std::string chat_body(std::string_view model, bool stream, int max_tokens,
                      bool include_usage = false,
                      std::string_view user = "Tell me about latency.") {
    json::object o{{"model", model},
                   {"messages", json::array{json::object{{"role", "user"}, {"content", user}}}},
                   {"max_tokens", max_tokens}};
    if (stream) o["stream"] = true;
    if (include_usage) o["stream_options"] = json::object{{"include_usage", true}};
    return json::serialize(o);
}

// The data payloads of an SSE body, and its comments.
struct Events {
    std::vector<std::string> data;
    std::size_t comments = 0;
};
Events events_of(const std::string& body) {
    Events out;
    sse::SseParser parser;
    (void)parser.feed(body, [&](const sse::SseEvent& e) { out.data.emplace_back(e.data); });
    for (std::size_t at = body.find(": keep-alive"); at != std::string::npos;
         at = body.find(": keep-alive", at + 1)) {
        ++out.comments;
    }
    return out;
}

// What an OpenAI stream said: text, finish reason, whether a usage chunk came, [DONE].
struct OpenAiStream {
    std::string text;
    std::string finish;
    std::optional<std::int64_t> completion_tokens;
    bool done = false;
    std::optional<json::object> error;
    bool all_json = true;
};
OpenAiStream read_openai_stream(const std::string& body) {
    OpenAiStream s;
    for (const auto& data : events_of(body).data) {
        if (data == "[DONE]") {
            s.done = true;
            continue;
        }
        boost::system::error_code ec;
        auto v = json::parse(data, ec);
        if (ec || !v.is_object()) {
            s.all_json = false;
            continue;
        }
        const auto& o = v.as_object();
        if (o.contains("error")) s.error = o.at("error").as_object();
        if (auto* u = o.if_contains("usage"); u && u->is_object()) {
            s.completion_tokens = u->as_object().at("completion_tokens").to_number<std::int64_t>();
        }
        if (auto* choices = o.if_contains("choices"); choices && !choices->as_array().empty()) {
            const auto& c = choices->as_array()[0].as_object();
            if (auto* d = c.if_contains("delta"); d && d->as_object().contains("content") &&
                                                  d->as_object().at("content").is_string()) {
                s.text += d->as_object().at("content").as_string();
            }
            if (c.at("finish_reason").is_string()) s.finish = c.at("finish_reason").as_string();
        }
    }
    return s;
}

std::string header(const testing::Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

// The text a direct call to the sim gives in a dialect, decoded the dialect's own way.
std::string direct_text(const SimFixture& sim, Api api, const std::string& model, bool stream,
                        int max_tokens) {
    dialect::ChatRequest r;
    r.model = model;
    r.messages.push_back({dialect::Role::user,
                          {dialect::ContentPart::make_text("Tell me about latency.")},
                          {},
                          {},
                          {}});
    r.max_tokens = max_tokens;
    r.stream = stream;
    auto call =
        dialect::make_http_call(api, api == Api::openai ? "/v1" : "", r, Secret("k")).value();
    auto url = net::parse_url(sim.base_url() + call.target).value();
    auto f = testing::fetch(http::verb::post, url, call.headers, call.body);
    if (!stream) return dialect::parse_response(api, f.body).value().text;
    std::string text;
    sse::SseParser parser;
    auto decoder = dialect::make_stream_decoder(api);
    std::vector<dialect::StreamDelta> deltas;
    (void)parser.feed(f.body, [&](const sse::SseEvent& e) {
        deltas.clear();
        (void)decoder->decode(e.event, e.data, deltas);
        for (const auto& d : deltas) {
            if (d.kind == dialect::StreamDelta::Kind::text) text += d.text;
        }
    });
    return text;
}

// The virtual models of three_dialects_config and what each reaches upstream.
const std::vector<std::tuple<std::string, Api, std::string>> kDialectCases{
    {"via-openai", Api::openai, "gpt-4o"},
    {"via-anthropic", Api::anthropic, "claude-3-5-sonnet-latest"},
    {"via-gemini", Api::gemini, "gemini-1.5-pro"}};

TEST(GatewayRelay, EveryDialectStreamsTheSameContentAsADirectCall) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& [virtual_model, api, upstream_model] : kDialectCases) {
        SCOPED_TRACE(virtual_model);
        const std::string direct = direct_text(sim, api, upstream_model, true, 25);
        ASSERT_FALSE(direct.empty());
        auto f =
            testing::post_json(gw.url("/v1/chat/completions"), chat_body(virtual_model, true, 25));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "content-type"), "text/event-stream");
        EXPECT_EQ(header(f, "x-tokenradar-upstream").substr(0, 4), "sim-");
        EXPECT_FALSE(header(f, "x-tokenradar-request-id").empty());
        EXPECT_FALSE(header(f, "x-tokenradar-overhead-us").empty());
        const auto s = read_openai_stream(f.body);
        EXPECT_TRUE(s.all_json);
        EXPECT_TRUE(s.done);
        EXPECT_EQ(s.text, direct);
        EXPECT_EQ(s.finish, "length");
        // The client did not ask for usage: the usage chunk the gateway requested is gone.
        EXPECT_FALSE(s.completion_tokens.has_value());
    }
    auto records = gw.records().wait_for(3);
    ASSERT_EQ(records.size(), 3u);
    for (const auto& m : records) {
        EXPECT_EQ(m.status, RequestStatus::ok);
        EXPECT_EQ(m.labels.source, "gateway");
        EXPECT_EQ(m.output_tokens, 25);  // from the upstream's usage, requested by the gateway
        EXPECT_EQ(m.token_source, TokenSource::usage);
        EXPECT_TRUE(m.t.first_token.has_value());
        EXPECT_TRUE(m.overhead_ns.has_value());
        EXPECT_TRUE(m.relay_p50_ns.has_value());
    }
    EXPECT_EQ(records[1].labels.task, "code");
    EXPECT_EQ(records[1].labels.api, "anthropic");
    EXPECT_EQ(records[0].labels.upstream_region, "local");
}

TEST(GatewayRelay, EveryDialectAnswersWholeResponsesLikeADirectCall) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const auto& [virtual_model, api, upstream_model] : kDialectCases) {
        SCOPED_TRACE(virtual_model);
        const std::string direct = direct_text(sim, api, upstream_model, false, 12);
        auto f =
            testing::post_json(gw.url("/v1/chat/completions"), chat_body(virtual_model, false, 12));
        ASSERT_EQ(f.status, 200u) << f.body;
        auto response = dialect::parse_response(Api::openai, f.body);
        ASSERT_TRUE(response) << f.body;
        EXPECT_EQ(response->text, direct);
        EXPECT_EQ(response->usage.output_tokens, 12);
        EXPECT_EQ(response->finish_reason, dialect::FinishReason::length);
    }
    for (const auto& m : gw.records().wait_for(3)) {
        EXPECT_EQ(m.status, RequestStatus::ok);
        EXPECT_FALSE(m.labels.stream);
        EXPECT_EQ(m.output_tokens, 12);
    }
}

TEST(GatewayRelay, UsageChunkIsKeptWhenTheClientAskedForIt) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    for (const char* model : {"via-openai", "via-anthropic", "via-gemini"}) {
        SCOPED_TRACE(model);
        auto f =
            testing::post_json(gw.url("/v1/chat/completions"), chat_body(model, true, 7, true));
        ASSERT_EQ(f.status, 200u);
        EXPECT_EQ(read_openai_stream(f.body).completion_tokens, 7);
    }
}

TEST(GatewayRelay, FallsBackWhenThePrimaryCannotBeReached) {
    SimFixture sim("instant");
    // A port nobody listens on: bind one, then free it.
    std::uint16_t dead_port = 0;
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
        dead_port = a.local_endpoint().port();
    }
    const std::string extra = replace_all(R"(
[[providers]]
name = "dead"
api = "openai"
base_url = "http://127.0.0.1:@PORT@/v1"
key_env = ""
[[models]]
name = "resilient"
upstreams = ["dead/gpt-4o", "sim-openai/gpt-4o"]
)",
                                          "@PORT@", std::to_string(dead_port));
    GatewayFixture gw(three_dialects_config(sim.base_url(), extra));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("resilient", true, 5));
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(header(f, "x-tokenradar-upstream"), "sim-openai/gpt-4o");
    EXPECT_TRUE(read_openai_stream(f.body).done);
    auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].labels.provider, "dead");
    EXPECT_EQ(records[0].status, RequestStatus::connection_error);
    EXPECT_EQ(records[0].attempt, 1);
    EXPECT_EQ(records[0].labels.route, Route::primary);
    EXPECT_EQ(records[1].status, RequestStatus::ok);
    EXPECT_EQ(records[1].attempt, 2);
    EXPECT_EQ(records[1].labels.route, Route::fallback);
    EXPECT_EQ(records[0].request_id, records[1].request_id);
}

std::string scripted_provider(const std::string& name, const ScriptedServer& s,
                              std::string_view timeouts = "") {
    return replace_all(replace_all(R"(
[[providers]]
name = "@NAME@"
api = "openai"
base_url = "@URL@/v1"
key_env = "TEST_UPSTREAM_KEY"
)",
                                   "@NAME@", name),
                       "@URL@", s.base_url()) +
           std::string(timeouts);
}

testing::Script error_script(unsigned status, std::string body, net::HeaderList headers = {}) {
    testing::Script s;
    s.status = status;
    s.content_type = "application/json";
    s.headers = std::move(headers);
    s.pieces = {{milliseconds(0), std::move(body)}};
    return s;
}

TEST(GatewayRelay, UpstreamServerErrorsAndRateLimitsFallBackInOrder) {
    SimFixture sim("instant");
    ScriptedServer overloaded(
        error_script(503, R"({"error":{"message":"busy","type":"server_error"}})"));
    ScriptedServer limited(
        error_script(429, R"({"error":{"message":"slow down","type":"rate_limit_error"}})",
                     {{"retry-after", "7"}}));
    const std::string extra =
        scripted_provider("overloaded", overloaded) + scripted_provider("limited", limited) + R"(
[[models]]
name = "chain"
upstreams = ["overloaded/m", "limited/m", "sim-openai/gpt-4o"]
[[models]]
name = "limited-only"
upstreams = ["limited/m"]
)";
    GatewayFixture gw(three_dialects_config(sim.base_url(), extra));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("chain", false, 5));
    ASSERT_EQ(f.status, 200u) << f.body;
    auto records = gw.records().wait_for(3);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].status, RequestStatus::http(503));
    EXPECT_EQ(records[1].status, RequestStatus::http(429));
    EXPECT_EQ(records[2].status, RequestStatus::ok);
    EXPECT_EQ(records[2].labels.route, Route::fallback);

    // With nothing to fall back to, the client gets the upstream's 429 and its retry-after.
    auto g = testing::post_json(gw.url("/v1/chat/completions"), chat_body("limited-only", true, 5));
    EXPECT_EQ(g.status, 429u);
    EXPECT_EQ(header(g, "retry-after"), "7");
    auto error = json::parse(g.body).as_object().at("error").as_object();
    EXPECT_EQ(error.at("message").as_string(), "slow down");
    EXPECT_EQ(gw.records().wait_for(4).back().status, RequestStatus::http(429));
}

std::string chunk(std::string_view content) {
    return "data: " +
           json::serialize(json::object{
               {"id", "chatcmpl-s"},
               {"object", "chat.completion.chunk"},
               {"created", 1},
               {"model", "m"},
               {"choices", json::array{json::object{{"index", 0},
                                                    {"delta", json::object{{"content", content}}},
                                                    {"finish_reason", nullptr}}}}}) +
           "\n\n";
}

// A gateway whose one model "m" is served by `upstream` alone, as `upstream_model`.
std::string only_upstream(const ScriptedServer& upstream, std::string_view upstream_model = "m") {
    return R"(
[auth]
mode = "none"
[store]
path = ""
[[models]]
name = "m"
upstreams = ["broken/)" +
           std::string(upstream_model) + R"("]
)" + scripted_provider("broken", upstream);
}

// An OpenAI upstream gets the client's own bytes: spacing, number spelling (0.50, an integer
// past 64 bits), escapes and nested "model" keys as sent; only the top-level model differs.
TEST(GatewayRelay, AnOpenAiUpstreamGetsTheClientsOwnBytesWithOnlyTheModelReplaced) {
    testing::Script answer;
    answer.content_type = "application/json";
    answer.pieces = {
        {milliseconds(0),
         R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-model",)"
         R"("choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],)"
         R"("usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})"}};
    ScriptedServer upstream(answer);
    GatewayFixture gw(only_upstream(upstream, "up-model"));
    const std::string sent =
        "{ \"model\" : \"m\", \"temperature\": 0.50,\n"
        "  \"messages\": [{\"role\": \"user\", \"content\": \"caf\\u00e9 \\\"model\\\"\"}],\n"
        "  \"vendor_x\": {\"model\": \"kept\", \"big\": 123456789012345678901234} }";
    auto r = testing::post_json(gw.url("/v1/chat/completions"), sent);
    ASSERT_EQ(r.status, 200u) << r.body;
    const auto received = upstream.received_bodies();
    ASSERT_EQ(received.size(), 1u);
    std::string expected = sent;
    expected.replace(expected.find("\"m\""), 3, "\"up-model\"");
    EXPECT_EQ(received[0], expected);
}

TEST(GatewayRelay, UpstreamDisconnectMidStreamEndsWithAWellFormedErrorEvent) {
    ScriptedServer broken(
        sse_script({{milliseconds(0), chunk("Hel")}, {milliseconds(5), chunk("lo")}}, true));
    GatewayFixture gw(only_upstream(broken));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("m", true, 5));
    ASSERT_EQ(f.status, 200u);
    EXPECT_TRUE(f.error.empty()) << f.error;  // the client's stream itself ends cleanly
    const auto s = read_openai_stream(f.body);
    EXPECT_TRUE(s.all_json);
    EXPECT_EQ(s.text, "Hello");
    ASSERT_TRUE(s.error.has_value()) << f.body;
    EXPECT_TRUE(s.done);
    auto m = gw.records().wait_for(1).at(0);
    EXPECT_EQ(m.status, RequestStatus::connection_error);
    EXPECT_EQ(m.output_events, 2);
}

std::string metrics_text(const GatewayFixture& gw) {
    return testing::fetch(http::verb::get, gw.url("/metrics")).body;
}

// tokenradar_relay_delay_seconds_count in a /metrics text: the client writes that carried
// upstream bytes.
std::int64_t relayed_writes(const std::string& metrics) {
    return testing::metric_value(metrics, "tokenradar_relay_delay_seconds_count{}");
}

TEST(GatewayRelay, AStreamReadAtOnceLeavesInTwoWritesFirstTokenThenTheRestWithTheEnd) {
    // ~12 KB of events in one upstream write: one read for the gateway. The first token goes
    // out at once; the rest leaves with the stream's end. A 4 KiB piece per read_some made
    // this four writes, and the end of the stream a fifth.
    std::string events = chunk("");
    for (int i = 0; i < 60; ++i) events += chunk("token" + std::to_string(i) + " ");
    events += "data: [DONE]\n\n";
    ASSERT_GT(events.size(), 8u * 1024);
    ASSERT_LT(events.size(), 15u * 1024);
    ScriptedServer upstream(sse_script({{milliseconds(0), events}}));
    GatewayFixture gw(only_upstream(upstream));
    const std::int64_t before = relayed_writes(metrics_text(gw));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("m", true, 60));
    ASSERT_EQ(f.status, 200u) << f.body;
    const auto s = read_openai_stream(f.body);
    EXPECT_TRUE(s.all_json);
    EXPECT_TRUE(s.done);
    EXPECT_EQ(s.text.substr(0, 14), "token0 token1 ");
    EXPECT_EQ(s.text.size(),
              std::string("token0 ").size() * 10 + std::string("token10 ").size() * 50);
    EXPECT_EQ(gw.records().wait_for(1).at(0).status, RequestStatus::ok);
    const std::string metrics = metrics_text(gw);
    EXPECT_EQ(relayed_writes(metrics) - before, 2);
    // Buckets close around the relay's 100 us bound, so a p99 can be placed next to it.
    for (const char* bound : {"7.5e-05", "0.0001", "0.00015"}) {
        EXPECT_NE(
            metrics.find(fmt::format("tokenradar_relay_delay_seconds_bucket{{le=\"{}\"}}", bound)),
            std::string::npos)
            << bound;
    }
}

TEST(GatewayRelay, MalformedUpstreamChunkIsAProtocolError) {
    ScriptedServer broken(sse_script(
        {{milliseconds(0), chunk("ok")}, {milliseconds(0), "data: {\"choices\": [\n\n"}}));
    GatewayFixture gw(only_upstream(broken));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("m", true, 5));
    const auto s = read_openai_stream(f.body);
    EXPECT_TRUE(s.all_json) << f.body;
    EXPECT_TRUE(s.error.has_value());
    EXPECT_TRUE(s.done);
    EXPECT_EQ(gw.records().wait_for(1).at(0).status, RequestStatus::protocol_error);
}

TEST(GatewayRelay, TimeoutsOfEachPhaseEndTheStreamWithTheirStatus) {
    // Each upstream would take 6 s; the budgets are 200-300 ms. The wide gap keeps "ended by
    // the timeout" provable on a loaded machine (a 600 ms upstream against a 550 ms bound, and
    // then 2.1 s against a 2 s bound, failed under ASan at load 7); the stopped servers cancel
    // their scripts at once.
    // First token: headers at once, then nothing for longer than the budget.
    ScriptedServer slow_start(sse_script({{milliseconds(6000), chunk("late")}}));
    // Idle: one token, then silence.
    ScriptedServer stalls(
        sse_script({{milliseconds(0), chunk("a")}, {milliseconds(6000), chunk("b")}}));
    // Total: tokens keep coming, but the whole response takes too long.
    std::vector<testing::ScriptedPiece> trickle;
    for (int i = 0; i < 120; ++i) trickle.push_back({milliseconds(50), chunk("x")});
    ScriptedServer trickles(sse_script(trickle));
    GatewayFixture gw(R"(
[auth]
mode = "none"
[store]
path = ""
[[models]]
name = "first"
upstreams = ["slow-start/m"]
[[models]]
name = "idle"
upstreams = ["stalls/m"]
[[models]]
name = "total"
upstreams = ["trickles/m"]
)" + scripted_provider("slow-start", slow_start, "first_token_timeout = \"200ms\"\n") +
                      scripted_provider("stalls", stalls, "idle_timeout = \"200ms\"\n") +
                      scripted_provider("trickles", trickles, "total_timeout = \"300ms\"\n"));
    const std::vector<std::pair<std::string, std::string>> cases{
        {"first", "timeout_first_token"}, {"idle", "timeout_idle"}, {"total", "timeout_total"}};
    std::size_t n = 0;
    for (const auto& [model, status] : cases) {
        SCOPED_TRACE(model);
        const auto t0 = steady_now_ns();
        auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body(model, true, 5));
        EXPECT_LT(ns_to_ms(steady_now_ns() - t0), 4000);  // ended by the timeout, not the upstream
        const auto s = read_openai_stream(f.body);
        EXPECT_TRUE(s.all_json);
        EXPECT_TRUE(s.error.has_value()) << f.body;
        EXPECT_EQ(to_string(gw.records().wait_for(++n).back().status), status);
    }
}

TEST(GatewayRelay, HeartbeatsKeepASilentStreamAlive) {
    ScriptedServer thinker(
        sse_script({{milliseconds(0), chunk("a")}, {milliseconds(350), chunk("b")}}));
    GatewayFixture gw(R"(
[auth]
mode = "none"
[limits]
heartbeat_interval = "100ms"
[store]
path = ""
[[models]]
name = "m"
upstreams = ["thinker/m"]
)" + scripted_provider("thinker", thinker));
    auto f = testing::post_json(gw.url("/v1/chat/completions"), chat_body("m", true, 5));
    const auto e = events_of(f.body);
    EXPECT_GE(e.comments, 2u) << f.body;
    EXPECT_LE(e.comments, 4u);
    EXPECT_EQ(read_openai_stream(f.body).text, "ab");
}

TEST(GatewayRelay, ClientDisconnectEndsANonStreamedRelayAtOnce) {
    // The upstream sends its head and the start of the body, then the rest 3 s later: the
    // gateway is reading the body (read_all) when the client hangs up.
    testing::Script script;
    script.content_type = "application/json";
    script.pieces = {{milliseconds(0), "{\"id\":\"chatcmpl-s\","},
                     {milliseconds(3000), "\"object\":\"chat.completion\"}"}};
    ScriptedServer slow_body(script);
    GatewayFixture gw(only_upstream(slow_body));
    const std::string body = chat_body("m", false, 5);
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::socket socket(ioc);
        socket.connect({boost::asio::ip::make_address("127.0.0.1"), gw.url("/").port});
        const std::string request =
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
            "application/json\r\n"
            "content-length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body;
        boost::asio::write(socket, boost::asio::buffer(request));
        std::this_thread::sleep_for(
            milliseconds(300));  // the gateway waits for the rest of the body
    }
    const auto t0 = steady_now_ns();
    const auto records = gw.records().wait_for(1, milliseconds(5000));
    ASSERT_EQ(records.size(), 1u);
    EXPECT_LT(ns_to_ms(steady_now_ns() - t0), 1000);  // not when the upstream body ends (3 s)
    EXPECT_EQ(records[0].status, RequestStatus::cancelled);
}

TEST(GatewayRelay, ClientDisconnectCancelsTheUpstreamAtOnce) {
    SimFixture sim("fixed");  // 250 ms TTFT, 20 ms per token: 300 tokens take 6 s
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    {
        boost::asio::io_context ioc;
        net::HttpClient client(ioc.get_executor());
        auto opened =
            testing::run_sync(ioc, client.open(http::verb::post, gw.url("/v1/chat/completions"),
                                               {{"content-type", "application/json"}},
                                               chat_body("via-openai", true, 300)));
        ASSERT_TRUE(opened);
        auto piece = testing::run_sync(ioc, (*opened)->read_some());  // the stream has started
        ASSERT_TRUE(piece);
        EXPECT_EQ(sim.server().stats().running, 1);
        (*opened)->cancel();
    }
    const auto t0 = steady_now_ns();
    while (sim.server().stats().running != 0 && ns_to_ms(steady_now_ns() - t0) < 2000) {
        std::this_thread::sleep_for(milliseconds(5));
    }
    EXPECT_EQ(sim.server().stats().running, 0);
    EXPECT_LT(ns_to_ms(steady_now_ns() - t0), 500);  // long before the 6 s the stream needed
    EXPECT_EQ(gw.records().wait_for(1).at(0).status, RequestStatus::cancelled);
}

}  // namespace
}  // namespace tokenradar::gateway
