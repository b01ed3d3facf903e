// The routing strategies end to end: sims with fixed TTFTs behind one gateway, and what the
// client, the records, GET /api/v1/upstreams and /metrics say about each decision.

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/sim/profile.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

namespace tokenradar::gateway {
namespace {

namespace json = boost::json;
using testing::GatewayFixture;
using testing::SimFixture;

// A sim whose TTFT is exactly `ttft_ms` and whose 5 tokens come at once.
std::unique_ptr<SimFixture> sim_with_ttft(const std::string& name, double ttft_ms) {
    auto profile = sim::parse_profile(fmt::format(R"(
name = "{}"
models = ["m"]
[ttft]
base_ms = {}
[decode]
tokens_per_s = 0
default_max_tokens = 5
)",
                                                  name, ttft_ms),
                                      name);
    return std::make_unique<SimFixture>(std::move(profile));
}

// Providers named after the sims, each serving model "m", and `models` TOML after them.
std::string config_for(const std::vector<std::pair<std::string, const SimFixture*>>& sims,
                       std::string_view models) {
    std::string toml = R"(
[auth]
mode = "none"
[store]
path = ""
)";
    for (const auto& [name, sim] : sims) {
        toml += fmt::format(R"(
[[providers]]
name = "{}"
api = "openai"
base_url = "{}/v1"
key_env = "TEST_UPSTREAM_KEY"
)",
                            name, sim->base_url());
    }
    return toml + std::string(models);
}

std::string chat(bool stream, std::string_view user = "hello", int max_tokens = 5,
                 std::string_view system = "") {
    json::array messages;
    if (!system.empty()) messages.push_back(json::object{{"role", "system"}, {"content", system}});
    messages.push_back(json::object{{"role", "user"}, {"content", user}});
    return json::serialize(json::object{{"model", "routed"},
                                        {"stream", stream},
                                        {"max_tokens", max_tokens},
                                        {"messages", std::move(messages)}});
}

std::string header(const testing::Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

testing::Fetched send(GatewayFixture& gw, const std::string& body) {
    return testing::post_json(gw.url("/v1/chat/completions"), body);
}

json::value get_json(GatewayFixture& gw, const std::string& path) {
    auto f = testing::fetch(boost::beast::http::verb::get, gw.url(path));
    EXPECT_EQ(f.status, 200u) << f.body;
    return json::parse(f.body);
}

TEST(GatewayRouting, LatencyRoutingKeepsTrafficOffTheSlowReplica) {
    auto a = sim_with_ttft("a", 10);
    auto b = sim_with_ttft("b", 10);
    auto c = sim_with_ttft("c", 400);  // far enough above the others under ASan and load
    GatewayFixture gw(config_for({{"a", a.get()}, {"b", b.get()}, {"c", c.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["a/m", "b/m", "c/m"]
routing = "latency"
)"));
    std::map<std::string, int> by_upstream;
    for (int i = 0; i < 40; ++i) {
        // Streams: only a first token is a TTFT sample (a whole answer's head comes after
        // its whole generation).
        auto f = send(gw, chat(true));
        ASSERT_EQ(f.status, 200u) << f.body;
        EXPECT_EQ(header(f, "x-tokenradar-route"), "latency");
        ++by_upstream[header(f, "x-tokenradar-upstream")];
    }
    // c is tried while nothing is known, then only when both draws... never: it is slower
    // than whichever other member it is drawn with.
    EXPECT_LE(by_upstream["c/m"], 4);
    // Both fast replicas take a share (9 of 40 was seen under load: not an even split).
    EXPECT_GE(by_upstream["a/m"], 6);
    EXPECT_GE(by_upstream["b/m"], 6);
    const auto records = gw.records().wait_for(40);
    for (const auto& r : records) EXPECT_EQ(r.labels.route, Route::latency);
    const json::value upstreams = get_json(gw, "/api/v1/upstreams");
    const auto& list = upstreams.at("upstreams").as_array();
    ASSERT_EQ(list.size(), 3u);
    double slow_ttft = 0;
    double fast_ttft = 1e9;
    for (const auto& u : list) {
        EXPECT_EQ(u.at("breaker").as_string(), "closed");
        if (u.at("attempts").as_int64() == 0) continue;
        const double ttft = u.at("ttft_ms").as_double();
        (u.at("provider").as_string() == "c" ? slow_ttft : fast_ttft) =
            u.at("provider").as_string() == "c" ? ttft : std::min(fast_ttft, ttft);
    }
    // Estimates are decayed to now (c was last measured seconds ago): compare, not absolute.
    EXPECT_GT(slow_ttft, 2 * fast_ttft);
    const auto& model = upstreams.at("models").as_array().at(0);
    EXPECT_EQ(model.at("routing").as_string(), "latency");
    double share = 0;
    for (const auto& m : model.at("members").as_array()) share += m.at("share").as_double();
    EXPECT_NEAR(share, 1.0, 0.001);

    // The same rows as a CSV download, one per upstream, the JSON's numbers in its columns.
    const auto csv =
        testing::fetch(boost::beast::http::verb::get, gw.url("/api/v1/upstreams?format=csv"));
    ASSERT_EQ(csv.status, 200u) << csv.body;
    EXPECT_EQ(header(csv, "content-type"), "text/csv; charset=utf-8");
    EXPECT_EQ(header(csv, "content-disposition"),
              "attachment; filename=\"tokenradar-upstreams.csv\"");
    EXPECT_TRUE(csv.body.starts_with("provider,model,region,measured,ttft_ms,")) << csv.body;
    EXPECT_EQ(std::count(csv.body.begin(), csv.body.end(), '\n'), 4) << csv.body;
    EXPECT_NE(csv.body.find("\r\na,m,"), std::string::npos) << csv.body;
    const auto bad =
        testing::fetch(boost::beast::http::verb::get, gw.url("/api/v1/upstreams?format=xml"));
    EXPECT_EQ(bad.status, 400u);
    EXPECT_NE(bad.body.find("format: expected json or csv"), std::string::npos) << bad.body;
}

TEST(GatewayRouting, AHedgeWinsAgainstASlowPrimaryWhichIsCancelled) {
    auto slow = sim_with_ttft("slow", 2000);
    auto fast = sim_with_ttft("fast", 10);
    GatewayFixture gw(config_for({{"slow", slow.get()}, {"fast", fast.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["slow/m", "fast/m"]
hedge = "60ms"
hedge_budget = 1.0
)"));
    const std::int64_t t0 = steady_now_ns();
    auto f = send(gw, chat(true));
    const std::int64_t elapsed_ms = (steady_now_ns() - t0) / 1'000'000;
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(header(f, "x-tokenradar-route"), "hedge");
    EXPECT_EQ(header(f, "x-tokenradar-upstream"), "fast/m");
    EXPECT_NE(f.body.find("[DONE]"), std::string::npos);
    // The slow primary's first token (2 s) was never waited for; the hedge answers in ~70 ms
    // (ASan beside two builds took 909 ms).
    EXPECT_LT(elapsed_ms, 1500);
    const auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2u);
    std::map<Route, Measurement> by_route;
    for (const auto& r : records) by_route[r.labels.route] = r;
    ASSERT_TRUE(by_route.count(Route::primary) && by_route.count(Route::hedge));
    EXPECT_EQ(by_route[Route::primary].status, RequestStatus::cancelled);
    EXPECT_EQ(by_route[Route::primary].attempt, 1);
    EXPECT_EQ(by_route[Route::hedge].status, RequestStatus::ok);
    EXPECT_EQ(by_route[Route::hedge].attempt, 2);
    EXPECT_EQ(by_route[Route::hedge].labels.provider, "fast");
    // The primary's connection was closed: the slow sim stops working on it at once.
    for (int i = 0; i < 200 && slow->server().stats().running > 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(slow->server().stats().running, 0);
    const json::value upstreams = get_json(gw, "/api/v1/upstreams");
    for (const auto& u : upstreams.at("upstreams").as_array()) {
        if (u.at("provider").as_string() != "fast") continue;
        EXPECT_EQ(u.at("hedges").at("sent").as_int64(), 1);
        EXPECT_EQ(u.at("hedges").at("won").as_int64(), 1);
    }
    const auto metrics = testing::fetch(boost::beast::http::verb::get, gw.url("/metrics")).body;
    EXPECT_EQ(testing::metric_value(metrics, "tokenradar_hedges_cancelled_total"), 1);
    EXPECT_EQ(
        testing::metric_value(metrics, R"(tokenradar_hedges_won_total{provider="fast",model="m"})"),
        1);
}

TEST(GatewayRouting, TheHedgeBudgetCapsExtraRequests) {
    auto slow = sim_with_ttft("slow", 120);
    auto fast = sim_with_ttft("fast", 10);
    GatewayFixture gw(config_for({{"slow", slow.get()}, {"fast", fast.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["slow/m", "fast/m"]
hedge = "20ms"
hedge_budget = 0.25
)"));
    int hedged = 0;
    for (int i = 0; i < 12; ++i) {
        auto f = send(gw, chat(true));
        ASSERT_EQ(f.status, 200u) << f.body;
        if (header(f, "x-tokenradar-route") == "hedge") ++hedged;
    }
    EXPECT_EQ(hedged, 3);  // a quarter of a hedge per request
}

TEST(GatewayRouting, NoTokenByTheDeadlineMovesToTheNextUpstream) {
    auto slow = sim_with_ttft("slow", 800);
    auto fast = sim_with_ttft("fast", 10);
    GatewayFixture gw(config_for({{"slow", slow.get()}, {"fast", fast.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["slow/m", "fast/m"]
ttft_deadline = "100ms"
)"));
    auto f = send(gw, chat(true));
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(header(f, "x-tokenradar-route"), "fallback");
    EXPECT_EQ(header(f, "x-tokenradar-upstream"), "fast/m");
    const auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2u);
    std::map<int, Measurement> by_attempt;
    for (const auto& r : records) by_attempt[r.attempt] = r;
    EXPECT_EQ(by_attempt[1].labels.provider, "slow");
    EXPECT_EQ(by_attempt[1].status, RequestStatus::timeout_first_token);
    EXPECT_EQ(by_attempt[2].labels.provider, "fast");
    EXPECT_EQ(by_attempt[2].labels.route, Route::fallback);
    EXPECT_EQ(by_attempt[2].status, RequestStatus::ok);

    // Nobody in time: 504 naming the deadline, every attempt given up.
    auto slower = sim_with_ttft("slower", 800);
    GatewayFixture alone(config_for({{"slow", slow.get()}, {"slower", slower.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["slow/m", "slower/m"]
ttft_deadline = "50ms"
)"));
    auto late = send(alone, chat(true));
    EXPECT_EQ(late.status, 504u) << late.body;
    EXPECT_NE(late.body.find("50 ms deadline"), std::string::npos) << late.body;
}

TEST(GatewayRouting, AffinityKeepsEachConversationOnOneReplica) {
    auto a = sim_with_ttft("a", 5);
    auto b = sim_with_ttft("b", 5);
    auto c = sim_with_ttft("c", 5);
    GatewayFixture gw(config_for({{"a", a.get()}, {"b", b.get()}, {"c", c.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["a/m", "b/m", "c/m"]
routing = "affinity"
affinity_block_bytes = 64
)"));
    // Six applications, each with its own long system prompt: a prompt nobody saw is placed
    // by its own hash, and each later turn follows the replica that holds its prefix. (One
    // system prompt shared by all would send them all to the replica that has it, until the
    // load guard spreads them: the router unit tests cover that.)
    std::map<std::string, int> first_turns;
    for (int conversation = 0; conversation < 6; ++conversation) {
        const std::string system(2000, static_cast<char>('a' + conversation));
        std::string history =
            fmt::format("conversation {} asks about topic {}", conversation, conversation * 7919);
        std::string upstream;
        for (int turn = 0; turn < 3; ++turn) {
            history += fmt::format(" and then turn {} adds more words to the same thread", turn);
            auto f = send(gw, chat(true, history, 5, system));
            ASSERT_EQ(f.status, 200u) << f.body;
            EXPECT_EQ(header(f, "x-tokenradar-route"), "affinity");
            if (turn == 0) {
                upstream = header(f, "x-tokenradar-upstream");
                ++first_turns[upstream];
            }
            EXPECT_EQ(header(f, "x-tokenradar-upstream"), upstream)
                << "conversation " << conversation << " turn " << turn;
        }
    }
    EXPECT_GE(first_turns.size(), 2u);  // conversations spread by their own prompts
}

TEST(GatewayRouting, ShortRequestsGoToTheLocalServerAndLongOnesToTheCloud) {
    auto cloud = sim_with_ttft("cloud", 5);
    auto local = sim_with_ttft("local", 5);
    GatewayFixture gw(config_for({{"cloud", cloud.get()}, {"local", local.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["cloud/m"]
offload = "local/m"
offload_max_prompt_tokens = 200
offload_max_tokens = 50
)"));
    auto small = send(gw, chat(true, "hi", 20));
    ASSERT_EQ(small.status, 200u) << small.body;
    EXPECT_EQ(header(small, "x-tokenradar-upstream"), "local/m");
    EXPECT_EQ(header(small, "x-tokenradar-route"), "local");
    auto long_prompt = send(gw, chat(true, std::string(2000, 'x'), 20));
    EXPECT_EQ(header(long_prompt, "x-tokenradar-upstream"), "cloud/m");
    auto long_answer = send(gw, chat(false, "hi", 500));
    EXPECT_EQ(header(long_answer, "x-tokenradar-upstream"), "cloud/m");
    EXPECT_EQ(header(long_answer, "x-tokenradar-route"), "primary");
}

TEST(GatewayRouting, TheBreakerTakesADeadUpstreamOutAndTheApiSaysSo) {
    auto live = sim_with_ttft("live", 5);
    std::uint16_t dead_port = 0;
    {
        boost::asio::io_context ioc;
        boost::asio::ip::tcp::acceptor acceptor(ioc,
                                                {boost::asio::ip::make_address("127.0.0.1"), 0});
        dead_port = acceptor.local_endpoint().port();
    }
    GatewayFixture gw(config_for({{"live", live.get()}}, fmt::format(R"(
[[providers]]
name = "dead"
api = "openai"
base_url = "http://127.0.0.1:{}/v1"
key_env = ""
[[models]]
name = "routed"
upstreams = ["dead/m", "live/m"]
)",
                                                                     dead_port)));
    for (int i = 0; i < 8; ++i) {
        auto f = send(gw, chat(false));
        ASSERT_EQ(f.status, 200u) << f.body;
    }
    // Five failures opened the breaker: the last three went straight to the live upstream.
    const auto records = gw.records().wait_for(13);
    EXPECT_EQ(records.size(), 13u);
    const json::value upstreams = get_json(gw, "/api/v1/upstreams");
    for (const auto& u : upstreams.at("upstreams").as_array()) {
        if (u.at("provider").as_string() != "dead") continue;
        EXPECT_EQ(u.at("breaker").as_string(), "open");
        EXPECT_EQ(u.at("failures").as_int64(), 5);
        EXPECT_EQ(u.at("breaker_opens").as_int64(), 1);
    }
}

TEST(GatewayRouting, NearestRegionPrefersTheRegionMeasuredFastestFromTheClients) {
    auto us1 = sim_with_ttft("us1", 5);
    auto us2 = sim_with_ttft("us2", 5);
    auto eu = sim_with_ttft("eu", 5);
    std::string toml = config_for({{"us1", us1.get()}, {"us2", us2.get()}, {"eu", eu.get()}}, R"(
[[models]]
name = "routed"
upstreams = ["us1/m", "us2/m", "eu/m"]
routing = "latency"
nearest_region = true
)");
    for (const auto& [name, region] :
         {std::pair{"us1", "us-east"}, {"us2", "us-east"}, {"eu", "eu-west"}}) {
        const std::string at = fmt::format("name = \"{}\"\n", name);
        toml.insert(toml.find(at) + at.size(), fmt::format("region = \"{}\"\n", region));
    }
    gateway::GatewayHooks hooks;
    // What the observatory measured: from Germany the EU replica is fastest; from the US the
    // US ones; from Japan nothing is known.
    hooks.region_ttft = [](std::string_view client, std::string_view provider,
                           std::string_view) -> std::optional<double> {
        const bool eu_provider = provider == "eu";
        if (client == "DE") return eu_provider ? 120.0 : 310.0;
        if (client == "US") return eu_provider ? 290.0 : 105.0;
        return std::nullopt;
    };
    hooks.client_region = [](const net::Request&, const net::ResponseWriter&) {
        return std::string("US");  // what GeoIP would say of this client
    };
    GatewayFixture gw(toml, std::move(hooks));
    const auto ask = [&](std::string_view region) {
        testing::HeaderPairs headers;
        if (!region.empty()) headers.emplace_back("x-tokenradar-client-region", region);
        return testing::post_json(gw.url("/v1/chat/completions"), chat(true), headers);
    };
    for (int i = 0; i < 6; ++i) {
        auto de = ask("DE");
        ASSERT_EQ(de.status, 200u) << de.body;
        EXPECT_EQ(header(de, "x-tokenradar-upstream"), "eu/m");
        EXPECT_EQ(header(de, "x-tokenradar-route"), "region");
        auto us = ask("");  // no header: the hook's GeoIP answer
        EXPECT_NE(header(us, "x-tokenradar-upstream"), "eu/m");
        EXPECT_EQ(header(us, "x-tokenradar-route"), "region");
    }
    auto jp = ask("JP");
    EXPECT_EQ(header(jp, "x-tokenradar-route"), "latency");  // nothing measured: no preference
    const auto records = gw.records().wait_for(13);
    ASSERT_EQ(records.size(), 13u);
    std::map<std::string, int> by_client;
    for (const auto& r : records) ++by_client[r.labels.client_region];
    EXPECT_EQ(by_client["DE"], 6);
    EXPECT_EQ(by_client["US"], 6);
    EXPECT_EQ(by_client["JP"], 1);
}

TEST(GatewayRouting, ConfigErrorsNameTheKeyAndWhatIsExpected) {
    const auto error_of = [](std::string_view model_keys) {
        try {
            testing::gateway_config(fmt::format(R"(
[auth]
mode = "none"
[[providers]]
name = "p"
api = "openai"
base_url = "http://127.0.0.1:9/v1"
key_env = ""
[[models]]
name = "m"
upstreams = ["p/x"]
{}
)",
                                                model_keys));
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of(R"(routing = "fastest")"),
              "test.toml:12: models[0].routing: expected one of \"priority\", \"round_robin\", "
              "\"latency\", \"affinity\", got the string \"fastest\"");
    EXPECT_NE(error_of(R"(hedge = "soon")").find("models[0].hedge"), std::string::npos);
    EXPECT_NE(error_of(R"(hedge = "p20")").find("from \"p50\" to \"p99\""), std::string::npos);
    EXPECT_NE(error_of("hedge_budget = 2.0").find("models[0].hedge_budget"), std::string::npos);
    EXPECT_NE(error_of("offload_max_tokens = 10").find("an `offload` upstream first"),
              std::string::npos);
    EXPECT_NE(error_of(R"(offload = "nowhere/x")").find("models[0].offload"), std::string::npos);
    EXPECT_NE(error_of("affinity_load_ratio = 0.5").find("models[0].affinity_load_ratio"),
              std::string::npos);
    EXPECT_EQ(error_of(R"(routing = "latency"
hedge = "p95"
ttft_deadline = "2s")"),
              "no error");
    const auto config = testing::gateway_config(R"(
[auth]
mode = "none"
[[providers]]
name = "p"
api = "openai"
base_url = "http://127.0.0.1:9/v1"
key_env = ""
weight = 2.5
max_in_flight = 8
[[models]]
name = "m"
upstreams = ["p/x"]
routing = "affinity"
hedge = "250ms"
hedge_budget = 0.05
)");
    EXPECT_DOUBLE_EQ(config.providers[0].limits.weight, 2.5);
    EXPECT_EQ(config.providers[0].limits.max_in_flight, 8);
    const route::RoutingPolicy& policy = config.models[0].routing;
    EXPECT_EQ(policy.strategy, route::Strategy::affinity);
    EXPECT_TRUE(policy.hedge.enabled);
    EXPECT_EQ(policy.hedge.delay_ns, 250'000'000);
    EXPECT_DOUBLE_EQ(policy.hedge.budget, 0.05);
    EXPECT_NE(describe(config).find("routing affinity, hedge after 250 ms (budget 5%)"),
              std::string::npos)
        << describe(config);
}

}  // namespace
}  // namespace tokenradar::gateway
