// bench and the gateway against servers that close keep-alive connections under them, as
// servers nobody here wrote do: llama-server closes right after each streamed response
// while announcing `Keep-Alive: timeout=5, max=100`; uvicorn and Node close connections idle
// for 5 s (a few hundred ms here). Every request must still succeed, at c=1 and c=8, direct
// and through the gateway.

#include "../../support/gateway_fixture.hpp"
#include "../../support/raw_http_server.hpp"

#include <tokenradar/bench/runner.hpp>

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace tokenradar::bench {
namespace {

using testing::RawHttpServer;
using testing::RawRequest;
using testing::RawResponse;
using testing::RawServerPolicy;

const std::filesystem::path kWorkloadsDir =
    std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "workloads";

std::string event(std::string_view delta, std::string_view finish) {
    return std::string(
               R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",)") +
           R"("choices":[{"index":0,"delta":)" + std::string(delta) + R"(,"finish_reason":)" +
           std::string(finish) + "}]}\n\n";
}

// An OpenAI-compatible answer as llama-server frames it: a chunked event stream (or a JSON
// body with Content-Length), announcing keep-alive whatever the connection's fate.
RawResponse llama_like_answer(const RawRequest& request) {
    const std::string keep_alive = "Keep-Alive: timeout=5, max=100\r\n";
    if (request.body.find(R"("stream":true)") != std::string::npos) {
        const std::string usage =
            R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],)"
            R"("usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})"
            "\n\n";
        return {"HTTP/1.1 200 OK\r\n" + keep_alive +
                "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                testing::chunked({event(R"({"role":"assistant","content":"one"})", "null"),
                                  event(R"({"content":" two"})", "null"),
                                  event(R"({"content":" three"})", "null"),
                                  event("{}", R"("stop")"), usage, "data: [DONE]\n\n"})};
    }
    const std::string body =
        R"({"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,)"
        R"("message":{"role":"assistant","content":"one two three"},"finish_reason":"stop"}],)"
        R"("usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})";
    return {"HTTP/1.1 200 OK\r\n" + keep_alive +
            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\n\r\n" + body};
}

enum class Closes { after_each_response, when_idle };
enum class Route { direct, gateway };

std::string gateway_toml(const RawHttpServer& upstream) {
    return R"(
[auth]
mode = "none"
[store]
path = ""
[[providers]]
name = "llama"
api = "openai"
base_url = ")" +
           upstream.base_url() +
           R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "local"
upstreams = ["llama/m"]
)";
}

struct Run {
    Closes closes;
    Route route;
    bool stream;
    std::size_t concurrency = 0;  // closed loop; 0: open loop, one request every 200 ms
};

// Runs bench through `route` against a llama-like server that closes as `closes` says;
// every request, and every gateway attempt, must succeed.
void expect_every_request_succeeds(const Run& run) {
    RawServerPolicy policy;
    if (run.closes == Closes::after_each_response) {
        policy.close_after_response = true;
    } else {
        policy.idle_close = std::chrono::milliseconds(120);
    }
    RawHttpServer upstream(policy, llama_like_answer);
    std::optional<testing::GatewayFixture> gateway;
    if (run.route == Route::gateway) gateway.emplace(gateway_toml(upstream));

    RunOptions options;
    Target target;
    target.name = "t";
    target.base =
        net::parse_url((gateway ? gateway->base_url() : upstream.base_url()) + "/v1").value();
    target.model = gateway ? "local" : "m";
    target.key = Secret("sk-test");
    options.targets = {target};
    options.workload = load_workload("chat", kWorkloadsDir);
    options.workload.max_tokens = 3;
    options.workload.stream = run.stream;
    options.preflight = false;
    if (run.concurrency > 0) {
        options.concurrency = run.concurrency;
        options.requests = 24;
    } else {
        // Each request reuses a connection idle past the server's idle close.
        options.rate = 5;
        options.arrival = Arrival::constant;
        options.requests = 6;
    }
    std::atomic<bool> stop{false};
    const RunResult result = run_bench(options, stop, {});

    ASSERT_EQ(result.records.size(), options.requests);
    for (const auto& m : result.records) {
        EXPECT_TRUE(m.ok()) << m.status;
        EXPECT_EQ(m.output_tokens, 3);
    }
    if (gateway) {
        const auto records = gateway->records().wait_for(result.records.size());
        ASSERT_EQ(records.size(), result.records.size());  // no failed attempt before a retry
        for (const auto& m : records) EXPECT_TRUE(m.ok()) << m.status;
    }
    if (run.closes == Closes::after_each_response) {
        EXPECT_EQ(upstream.requests(), upstream.connections());  // one request per connection
    }
}

using AfterEachCase = std::tuple<Route, std::size_t /*concurrency*/, bool /*stream*/>;
class ServerClosingAfterEachResponse : public ::testing::TestWithParam<AfterEachCase> {};

TEST_P(ServerClosingAfterEachResponse, EveryRequestSucceeds) {
    const auto [route, concurrency, stream] = GetParam();
    expect_every_request_succeeds({Closes::after_each_response, route, stream, concurrency});
}

std::string after_each_name(const ::testing::TestParamInfo<AfterEachCase>& info) {
    const auto& [route, concurrency, stream] = info.param;
    return std::string(route == Route::direct ? "Direct" : "ThroughGateway") + "C" +
           std::to_string(concurrency) + (stream ? "Stream" : "Json");
}

INSTANTIATE_TEST_SUITE_P(Bench, ServerClosingAfterEachResponse,
                         ::testing::Combine(::testing::Values(Route::direct, Route::gateway),
                                            ::testing::Values(std::size_t{1}, std::size_t{8}),
                                            ::testing::Bool()),
                         after_each_name);

using IdleCase = std::tuple<Route, bool /*stream*/>;
class ServerClosingIdleConnections : public ::testing::TestWithParam<IdleCase> {};

TEST_P(ServerClosingIdleConnections, EveryRequestSucceeds) {
    const auto [route, stream] = GetParam();
    expect_every_request_succeeds({Closes::when_idle, route, stream});
}

std::string idle_name(const ::testing::TestParamInfo<IdleCase>& info) {
    const auto& [route, stream] = info.param;
    return std::string(route == Route::direct ? "Direct" : "ThroughGateway") +
           (stream ? "Stream" : "Json");
}

INSTANTIATE_TEST_SUITE_P(Bench, ServerClosingIdleConnections,
                         ::testing::Combine(::testing::Values(Route::direct, Route::gateway),
                                            ::testing::Bool()),
                         idle_name);

}  // namespace
}  // namespace tokenradar::bench
