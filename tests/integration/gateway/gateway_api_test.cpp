// The gateway's edges: client keys, limits, the operations endpoints, and the promise that
// upstream keys never leave the process.

#include <tokenradar/gateway/gateway.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"
#include "../../support/temp_path.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/gateway/config.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using testing::GatewayFixture;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::SimFixture;

constexpr std::string_view kUpstreamKey = "sk-upstream-secret-1234";
constexpr std::string_view kClientKey = "tr-client-key-abc";

std::string keyed_config(const SimFixture& sim, std::string limits = {}) {
    return R"(
[auth]
mode = "keys"
[[auth.keys]]
name = "team-a"
sha256 = ")" +
           net::hash_api_key(kClientKey) + R"("
[store]
path = ""
)" + limits +
           R"(
[[providers]]
name = "sim"
api = "openai"
base_url = ")" +
           sim.base_url() + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "fast"
upstreams = ["sim/gpt-4o"]
[[models]]
name = "claude"
upstreams = ["sim/claude-3-5-sonnet-latest"]
)";
}

std::string chat(std::string_view model, bool stream) {
    return json::serialize(
        json::object{{"model", model},
                     {"stream", stream},
                     {"max_tokens", 5},
                     {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}});
}

testing::HeaderPairs bearer(std::string_view key) {
    return {{"authorization", "Bearer " + std::string(key)}};
}

TEST(GatewayApi, ClientKeysAreRequiredAndCheckedAgainstTheirHashes) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    auto none = testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false));
    EXPECT_EQ(none.status, 401u);
    EXPECT_EQ(json::parse(none.body).at("error").at("type").as_string(), "authentication_error");
    EXPECT_EQ(none.headers["www-authenticate"], "Bearer realm=\"tokenradar\"");
    auto wrong =
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false), bearer("nope"));
    EXPECT_EQ(wrong.status, 401u);
    auto right =
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false), bearer(kClientKey));
    EXPECT_EQ(right.status, 200u) << right.body;
    // Health checks need no key; everything else does.
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/healthz")).status, 200u);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/readyz")).status, 200u);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/metrics")).status, 401u);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/v1/models")).status, 401u);
}

TEST(GatewayApi, ModelsListsTheVirtualModels) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    auto f = testing::fetch(http::verb::get, gw.url("/v1/models"), bearer(kClientKey));
    ASSERT_EQ(f.status, 200u);
    const auto v = json::parse(f.body);
    const auto& data = v.at("data").as_array();
    ASSERT_EQ(data.size(), 2u);
    EXPECT_EQ(data[0].at("id").as_string(), "fast");
    EXPECT_EQ(data[1].at("id").as_string(), "claude");
}

TEST(GatewayApi, RequestsAreHandledOnTheThreadNamedTrIo) {
    SimFixture sim("instant");
    std::string handler_thread;
    gateway::GatewayHooks hooks;
    hooks.ready = [&handler_thread] {  // runs in the /readyz handler
        handler_thread = this_thread_name();
        return true;
    };
    GatewayFixture gw(keyed_config(sim), std::move(hooks));
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/readyz")).status, 200u);
    EXPECT_EQ(handler_thread, "tr-io");  // what top -H and perf show for the gateway's I/O
}

TEST(GatewayApi, BadRequestsGetOpenAiErrorsNamingTheProblem) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim, "[limits]\nmax_body_bytes = 2048\n"));
    auto post = [&](std::string body) {
        return testing::post_json(gw.url("/v1/chat/completions"), std::move(body),
                                  bearer(kClientKey));
    };
    auto malformed = post("{\"model\": ");
    EXPECT_EQ(malformed.status, 400u);
    auto bad_role = post(R"({"model":"fast","messages":[{"role":"wizard","content":"x"}]})");
    EXPECT_EQ(bad_role.status, 400u);
    EXPECT_THAT(bad_role.body, HasSubstr("messages[0].role"));
    auto unknown = post(chat("no-such-model", false));
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_THAT(unknown.body, HasSubstr("no-such-model"));
    auto huge = post(R"({"model":"fast","messages":[{"role":"user","content":")" +
                     std::string(4096, 'x') + "\"}]}");
    EXPECT_EQ(huge.status, 413u);
    auto bad_task = testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false),
                                       {{"authorization", "Bearer " + std::string(kClientKey)},
                                        {"x-tokenradar-task", "<script>"}});
    EXPECT_EQ(bad_task.status, 400u);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/v2/nothing"), bearer(kClientKey)).status,
              404u);
    EXPECT_EQ(
        testing::fetch(http::verb::get, gw.url("/v1/chat/completions"), bearer(kClientKey)).status,
        405u);
}

TEST(GatewayApi, TaskLabelComesFromTheHeaderOrTheModelDefault) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    auto headers = bearer(kClientKey);
    headers.emplace_back("x-tokenradar-task", "gen-500");
    EXPECT_EQ(
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", true), headers).status,
        200u);
    EXPECT_EQ(
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", true), bearer(kClientKey))
            .status,
        200u);
    auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].labels.task, "gen-500");
    EXPECT_EQ(records[1].labels.task, "chat");
}

// The gateway's active-request gauge, read from /metrics (-1 if absent).
std::int64_t active_requests(GatewayFixture& gw) {
    const auto f = testing::fetch(http::verb::get, gw.url("/metrics"), bearer(kClientKey));
    return testing::metric_value(f.body, "tokenradar_active_requests");
}

TEST(GatewayApi, ConcurrentRequestsPerKeyAreBounded) {
    // The upstream holds every request 5 s before its first token, so the first two are still
    // in flight when the next two arrive, however slow the machine (TSan, a loaded CI box; at
    // 2 s, ASan beside two builds saw them answered before the refusals were sent).
    sim::Profile held = sim::load_profile("fixed", testing::profiles_dir());
    held.ttft.base_ms = 5000;
    SimFixture sim(std::move(held));
    GatewayFixture gw(keyed_config(sim, "[limits]\nmax_concurrent_per_key = 2\n"));
    std::vector<std::future<testing::Fetched>> admitted;
    for (int i = 0; i < 2; ++i) {
        admitted.push_back(std::async(std::launch::async, [&] {
            return testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false),
                                      bearer(kClientKey));
        }));
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (active_requests(gw) < 2 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(active_requests(gw), 2);
    for (int i = 0; i < 2; ++i) {
        const auto refused = testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false),
                                                bearer(kClientKey));
        EXPECT_EQ(refused.status, 429u);
        EXPECT_THAT(refused.body, HasSubstr("concurrent"));
        EXPECT_EQ(refused.headers["retry-after"], "1");
    }
    for (auto& call : admitted) EXPECT_EQ(call.get().status, 200u);
    EXPECT_EQ(active_requests(gw), 0);  // the slots are given back
}

TEST(GatewayApi, MetricsExposeGenAiHistogramsPerProviderModelAndStatus) {
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim));
    ASSERT_EQ(
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", true), bearer(kClientKey))
            .status,
        200u);
    ASSERT_EQ(
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", false), bearer(kClientKey))
            .status,
        200u);
    gw.records().wait_for(2);
    auto f = testing::fetch(http::verb::get, gw.url("/metrics"), bearer(kClientKey));
    ASSERT_EQ(f.status, 200u);
    EXPECT_THAT(f.body, HasSubstr("# TYPE gen_ai_server_time_to_first_token_seconds histogram"));
    EXPECT_THAT(
        f.body,
        HasSubstr(
            R"(gen_ai_server_time_to_first_token_seconds_count{provider="sim",model="gpt-4o",status="ok"} 1)"));
    EXPECT_THAT(
        f.body,
        HasSubstr(
            R"(gen_ai_server_request_duration_seconds_count{provider="sim",model="gpt-4o",status="ok"} 2)"));
    EXPECT_THAT(
        f.body,
        HasSubstr(R"(gen_ai_usage_tokens_total{provider="sim",model="gpt-4o",type="output"} 10)"));
    EXPECT_THAT(
        f.body,
        HasSubstr(R"(tokenradar_gateway_overhead_seconds_count{provider="sim",model="gpt-4o"} 2)"));
    EXPECT_THAT(f.body, HasSubstr(R"(tokenradar_requests_total{status="ok"} 2)"));
    EXPECT_THAT(
        f.body,
        HasSubstr(
            R"(tokenradar_upstream_attempts_total{provider="sim",model="gpt-4o",status="ok",route="primary"} 2)"));
}

TEST(GatewayApi, UpstreamKeysNeverLeaveTheProcess) {
    // The sim requires exactly the upstream key, so the requests only succeed if it was sent.
    sim::SimServerOptions options;
    options.api_key = std::string(kUpstreamKey);
    SimFixture sim("instant", options);
    GatewayFixture gw(keyed_config(sim));
    std::string everything;
    for (bool stream : {true, false}) {
        auto f = testing::post_json(gw.url("/v1/chat/completions"), chat("fast", stream),
                                    bearer(kClientKey));
        EXPECT_EQ(f.status, 200u) << f.body;
        everything += f.body;
        for (const auto& h : f.headers)
            everything += std::string(h.name_string()) + ": " + std::string(h.value()) + "\n";
    }
    // An upstream error body is relayed too: a wrong model makes the sim answer 404.
    auto missing = testing::post_json(gw.url("/v1/chat/completions"), chat("claude", false),
                                      bearer(kClientKey));
    everything += missing.body;
    everything += testing::fetch(http::verb::get, gw.url("/metrics"), bearer(kClientKey)).body;
    for (const auto& m : gw.records().wait_for(3)) everything += json::serialize(to_json(m));
    EXPECT_THAT(everything, Not(HasSubstr(std::string(kUpstreamKey))));
    EXPECT_THAT(everything, Not(HasSubstr("upstream-secret")));
    EXPECT_THAT(serve::describe(testing::serve_config(keyed_config(sim))),
                Not(HasSubstr("upstream-secret")));
}

TEST(GatewayApi, AnUpstreamRefusingTheGatewaysKeyIsABadGatewayNotTheClientsFault) {
    sim::SimServerOptions options;
    options.api_key = "a-different-key";
    SimFixture sim("instant", options);
    GatewayFixture gw(keyed_config(sim));
    auto f =
        testing::post_json(gw.url("/v1/chat/completions"), chat("fast", true), bearer(kClientKey));
    EXPECT_EQ(f.status, 502u);
    EXPECT_THAT(f.body, HasSubstr("refused the gateway's credentials (HTTP 401)"));
    EXPECT_EQ(gw.records().wait_for(1).at(0).status, RequestStatus::http(401));
}

TEST(GatewayApi, ServesTheDashboardFromMemoryWithCachingHeaders) {
    const testing::TempDir work("dashboard");
    const std::filesystem::path dir = work.dir();
    std::filesystem::create_directories(dir / "assets");
    std::ofstream(dir / "index.html") << "<!doctype html><title>TokenRadar</title>";
    std::ofstream(dir / "assets" / "app-1234.js") << "console.log(1)";
    SimFixture sim("instant");
    GatewayFixture gw(keyed_config(sim, "[dashboard]\ndir = \"" + dir.string() + "\"\n"));
    auto index = testing::fetch(http::verb::get, gw.url("/"));
    EXPECT_EQ(index.status, 200u);
    EXPECT_EQ(index.body, "<!doctype html><title>TokenRadar</title>");
    EXPECT_EQ(index.headers[http::field::content_type], "text/html; charset=utf-8");
    EXPECT_EQ(index.headers[http::field::cache_control], "no-cache");
    EXPECT_THAT(std::string(index.headers["content-security-policy"]),
                HasSubstr("default-src 'self'"));
    auto js = testing::fetch(http::verb::get, gw.url("/assets/app-1234.js"));
    EXPECT_EQ(js.status, 200u);
    EXPECT_EQ(js.headers[http::field::content_type], "text/javascript; charset=utf-8");
    EXPECT_THAT(std::string(js.headers[http::field::cache_control]), HasSubstr("immutable"));
    const std::string etag(js.headers[http::field::etag]);
    auto again =
        testing::fetch(http::verb::get, gw.url("/assets/app-1234.js"), {{"if-none-match", etag}});
    EXPECT_EQ(again.status, 304u);
    EXPECT_TRUE(again.body.empty());
    // Only the loaded files exist: nothing reaches the file system.
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/../../etc/passwd")).status, 404u);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/assets/../index.html")).status, 404u);
}

TEST(GatewayConfigFile, ErrorsNameTheFileLineAndKey) {
    auto error_of = [](const std::string& toml) {
        try {
            testing::gateway_config(toml);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string provider = R"(
[[providers]]
name = "p"
api = "openai"
base_url = "http://127.0.0.1:9/v1"
key_env = ""
)";
    EXPECT_THAT(error_of("[auth]\nmode = \"none\"\n" + provider +
                         "[[models]]\nname = \"m\"\nupstreams = [\"q/x\"]\n"),
                HasSubstr("models[0].upstreams"));
    EXPECT_THAT(error_of("[listener]\nhost = \"0.0.0.0\"\n[auth]\nmode = \"none\"\n" + provider +
                         "[[models]]\nname = \"m\"\nupstreams = [\"p/x\"]\n"),
                HasSubstr("loopback"));
    EXPECT_THAT(error_of(provider + "[[models]]\nname = \"m\"\nupstreams = [\"p/x\"]\n"),
                HasSubstr("auth"));
    EXPECT_THAT(error_of("[auth]\nmode = \"none\"\n[[providers]]\nname = \"p\"\napi = "
                         "\"cohere\"\nbase_url = \"http://x\"\n"),
                HasSubstr("test.toml:5: providers[0].api"));
    // The Responses API is a door clients use, not a dialect the gateway asks upstreams in.
    EXPECT_THAT(error_of("[auth]\nmode = \"none\"\n[[providers]]\nname = \"p\"\napi = "
                         "\"openai-responses\"\nbase_url = \"http://x\"\n"),
                HasSubstr("not an upstream dialect"));
    EXPECT_THAT(error_of("[auth]\nmode = \"none\"\n[[providers]]\nname = \"p\"\napi = "
                         "\"openai\"\nbase_url = \"http://x\"\nkey_env = \"NOT_SET_ANYWHERE\"\n"),
                HasSubstr("NOT_SET_ANYWHERE is not set"));
    EXPECT_THAT(
        error_of("[auth]\nmode = \"none\"\n[limits]\nheartbeat_interval = \"soon\"\n" + provider),
        HasSubstr("limits.heartbeat_interval"));
    EXPECT_THAT(error_of("[auth]\nmode = \"none\"\ntypo = 1\n"), HasSubstr("typo"));
}

}  // namespace
}  // namespace tokenradar::gateway
