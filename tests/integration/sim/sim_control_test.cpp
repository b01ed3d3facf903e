// A misbehaving replica end to end: POST/GET/DELETE /sim/control, scheduled episodes, the
// heavy tail and replicas of one profile, over real sockets with the `fixed` profile (TTFT
// exactly 250 ms, 20 ms per token). Timings are checked on the sim's trace, whose
// ttft_ns - queue_wait_ns is the model's exact TTFT, never against wall-clock margins.

#include <tokenradar/sim/sim_server.hpp>

#include "../../support/run_sync.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/net/http_client.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <thread>

namespace tokenradar {
namespace {

using dialect::Api;
using testing::SimFixture;
namespace http = boost::beast::http;
namespace asio = boost::asio;

constexpr std::int64_t kMs = 1'000'000;

class SimControlTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // Per process and test: another build tree's ctest may run at the same time.
        trace_path_ = std::filesystem::temp_directory_path() /
                      fmt::format("tokenradar_sim_control_{}_{}.jsonl", ::getpid(),
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove(trace_path_);
        options_.trace = sim::TraceSink::open(trace_path_).value();
        options_.api_key = "sk-sim";
    }
    void TearDown() override { std::filesystem::remove(trace_path_); }

    net::HttpClient::Response call(SimFixture& sim, http::verb verb, std::string target,
                                   net::RequestHeaders headers, std::string body = {}) {
        auto url = net::parse_url(sim.base_url()).value();
        url.target = std::move(target);
        net::HttpClient client(ioc_.get_executor());
        auto r = testing::run_sync(ioc_, client.request(verb, url, headers, std::move(body)));
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? std::move(*r) : net::HttpClient::Response{};
    }

    // The control endpoint with the key; the JSON state it answers with.
    boost::json::value control(SimFixture& sim, http::verb verb, std::string body = {}) {
        auto r =
            call(sim, verb, "/sim/control", {{"authorization", "Bearer sk-sim"}}, std::move(body));
        EXPECT_EQ(r.status, 200u) << r.body;
        return r.status == 200 ? boost::json::parse(r.body) : boost::json::value();
    }

    // One non-streamed OpenAI completion of `tokens` tokens; its status and trace line.
    std::pair<unsigned, boost::json::object> complete(SimFixture& sim, std::int64_t tokens = 1,
                                                      net::RequestHeaders extra = {}) {
        dialect::ChatRequest request;
        request.model = "gpt-4o";
        request.messages.push_back(
            {dialect::Role::user, {dialect::ContentPart::make_text("hello")}, {}, {}, {}});
        request.max_tokens = tokens;
        auto http_call =
            dialect::make_http_call(Api::openai, "/v1", request, Secret("sk-sim")).value();
        for (auto& h : extra) http_call.headers.push_back(h);
        auto r = call(sim, http::verb::post, http_call.target, http_call.headers, http_call.body);
        // The sim writes the trace line before it answers, so it is in the file by now.
        std::ifstream in(trace_path_);
        std::string line;
        std::string last;
        while (std::getline(in, line)) last = line;
        EXPECT_FALSE(last.empty());
        return {r.status,
                last.empty() ? boost::json::object{} : boost::json::parse(last).as_object()};
    }

    static std::int64_t model_ttft(const boost::json::object& trace) {
        return trace.at("ttft_ns").as_int64() - trace.at("queue_wait_ns").as_int64();
    }

    std::filesystem::path trace_path_;
    sim::SimServerOptions options_;
    asio::io_context ioc_;
};

TEST_F(SimControlTest, ACommandSlowsAndFailsRequestsUntilDeleted) {
    SimFixture sim("fixed", options_);
    auto state = control(sim, http::verb::get);
    EXPECT_EQ(state.at("effective").at("source").as_string(), "none");
    EXPECT_EQ(model_ttft(complete(sim).second), 250 * kMs);

    state = control(sim, http::verb::post, R"({"ttft_multiplier": 3})");
    EXPECT_EQ(state.at("effective").at("source").as_string(), "command");
    EXPECT_EQ(state.at("effective").at("ttft_multiplier").to_number<double>(), 3);
    EXPECT_TRUE(state.at("command").at("remaining_ms").is_null()) << "until changed";
    auto [status, trace] = complete(sim, 3);
    EXPECT_EQ(status, 200u);
    EXPECT_EQ(model_ttft(trace), 750 * kMs);
    EXPECT_EQ(trace.at("condition").at("ttft_multiplier").to_number<double>(), 3);
    EXPECT_EQ(trace.at("chunk_offsets_ns").as_array()[1].as_int64(), 20 * kMs)
        << "tpot_multiplier defaults to 1";

    // A new command replaces the previous one as a whole.
    control(sim, http::verb::post, R"({"tpot_multiplier": 2, "error_rate": 1})");
    auto failed = complete(sim, 3);
    EXPECT_EQ(failed.first, 503u);
    EXPECT_EQ(failed.second.at("status").as_int64(), 503);
    EXPECT_EQ(failed.second.at("fault").as_string(), "503");
    control(sim, http::verb::post, R"({"tpot_multiplier": 2})");
    auto slow_tokens = complete(sim, 3).second;
    EXPECT_EQ(model_ttft(slow_tokens), 250 * kMs);
    EXPECT_EQ(slow_tokens.at("chunk_offsets_ns").as_array()[1].as_int64(), 40 * kMs);

    state = control(sim, http::verb::delete_);
    EXPECT_TRUE(state.at("command").is_null());
    EXPECT_EQ(state.at("effective").at("source").as_string(), "none");
    auto normal = complete(sim).second;
    EXPECT_EQ(model_ttft(normal), 250 * kMs);
    EXPECT_TRUE(normal.at("condition").is_null());
}

TEST_F(SimControlTest, ACommandForSomeMillisecondsExpires) {
    SimFixture sim("fixed", options_);
    auto state = control(sim, http::verb::post, R"({"ttft_multiplier": 3, "for_ms": 600000})");
    const std::int64_t remaining = state.at("effective").at("remaining_ms").as_int64();
    EXPECT_GT(remaining, 0);
    EXPECT_LE(remaining, 600000);
    EXPECT_EQ(model_ttft(complete(sim).second), 750 * kMs);

    state = control(sim, http::verb::post, R"({"ttft_multiplier": 3, "for_ms": 200})");
    if (!state.at("command").is_null()) {
        EXPECT_LE(state.at("command").at("remaining_ms").as_int64(), 200);
    }
    // The server set the command before it answered: 300 ms after the answer it has expired,
    // however late this thread wakes.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    state = control(sim, http::verb::get);
    EXPECT_TRUE(state.at("command").is_null());
    EXPECT_EQ(state.at("effective").at("source").as_string(), "none");
    EXPECT_EQ(model_ttft(complete(sim).second), 250 * kMs);
}

TEST_F(SimControlTest, TheEndpointWantsTheKeyAndAValidBoundedBody) {
    SimFixture sim("fixed", options_);
    const std::string body = R"({"ttft_multiplier": 3})";
    auto no_key = call(sim, http::verb::post, "/sim/control", {}, body);
    EXPECT_EQ(no_key.status, 401u);
    EXPECT_EQ(dialect::parse_error_body(Api::openai, 401, no_key.body).code, Errc::unauthorized);
    EXPECT_EQ(call(sim, http::verb::get, "/sim/control", {{"x-api-key", "nope"}}).status, 401u);
    EXPECT_EQ(call(sim, http::verb::delete_, "/sim/control", {}).status, 401u);
    EXPECT_EQ(call(sim, http::verb::get, "/sim/control", {{"x-goog-api-key", "sk-sim"}}).status,
              200u);
    EXPECT_EQ(call(sim, http::verb::get, "/sim/control?key=sk-sim", {}).status, 200u);
    EXPECT_EQ(call(sim, http::verb::put, "/sim/control", {{"x-api-key", "sk-sim"}}, body).status,
              405u);

    const net::RequestHeaders key{{"x-api-key", "sk-sim"}};
    auto bad = call(sim, http::verb::post, "/sim/control", key, R"({"error_rate": 2})");
    EXPECT_EQ(bad.status, 400u);
    EXPECT_EQ(dialect::parse_error_body(Api::openai, 400, bad.body).message,
              "error_rate: expected a number from 0 to 1, got 2");
    auto unknown = call(sim, http::verb::post, "/sim/control", key, R"({"ttft": 3})");
    EXPECT_EQ(unknown.status, 400u);
    EXPECT_THAT(unknown.body, ::testing::HasSubstr("ttft: unknown field"));
    auto too_big = call(sim, http::verb::post, "/sim/control", key,
                        R"({"ttft_multiplier": 3})" + std::string(5000, ' '));
    EXPECT_EQ(too_big.status, 413u);

    // None of the refused requests changed anything.
    EXPECT_EQ(control(sim, http::verb::get).at("effective").at("source").as_string(), "none");
    EXPECT_EQ(model_ttft(complete(sim).second), 250 * kMs);
}

TEST_F(SimControlTest, EpisodesSlowTheReplicaAndACommandWinsOverThem) {
    sim::Profile profile = sim::load_profile("fixed", testing::profiles_dir());
    constexpr std::int64_t kHour = 3600 * 1000 * kMs;
    profile.episodes.push_back({kHour, kHour, 0, {5, 1, 1}});  // not yet: an hour after start
    profile.episodes.push_back({0, kHour, 2 * kHour, {2, 3, 0}});
    SimFixture sim(profile, options_);

    auto state = control(sim, http::verb::get);
    EXPECT_EQ(state.at("episode").at("index").as_int64(), 1);
    EXPECT_EQ(state.at("effective").at("source").as_string(), "episode");
    EXPECT_LE(state.at("effective").at("remaining_ms").as_int64(), 3600 * 1000);
    auto slow = complete(sim, 3).second;
    EXPECT_EQ(model_ttft(slow), 500 * kMs);
    EXPECT_EQ(slow.at("chunk_offsets_ns").as_array()[1].as_int64(), 60 * kMs);

    // A command wins while it lasts, even one that asks for nothing.
    state = control(sim, http::verb::post, "{}");
    EXPECT_EQ(state.at("effective").at("source").as_string(), "command");
    EXPECT_EQ(state.at("episode").at("index").as_int64(), 1) << "still shown";
    EXPECT_EQ(model_ttft(complete(sim).second), 250 * kMs);
    control(sim, http::verb::delete_);
    EXPECT_EQ(model_ttft(complete(sim).second), 500 * kMs);
}

TEST_F(SimControlTest, HeavyTailIsTracedAsQueueWait) {
    sim::Profile profile = sim::load_profile("fixed", testing::profiles_dir());
    profile.tail.ttft_multiplier = 4;
    SimFixture sim(profile, options_);
    auto tail = complete(sim, 1, {{"x-sim-tail", "always"}}).second;
    EXPECT_TRUE(tail.at("tail").as_bool());
    EXPECT_EQ(tail.at("tail_wait_ns").as_int64(), 750 * kMs);
    EXPECT_GE(tail.at("queue_wait_ns").as_int64(), 750 * kMs);
    EXPECT_EQ(model_ttft(tail), 250 * kMs);
    auto plain = complete(sim).second;  // rate 0
    EXPECT_FALSE(plain.at("tail").as_bool());
    EXPECT_EQ(plain.at("tail_wait_ns").as_int64(), 0);
    auto bad = complete(sim, 1, {{"x-sim-tail", "sometimes"}});
    EXPECT_EQ(bad.first, 400u);
}

TEST_F(SimControlTest, ReplicasHaveTheirOwnPrefixCacheDrawsAndControl) {
    std::vector<sim::Profile> profiles(2, sim::parse_profile(R"(
name = "replica-test"
models = ["gpt-4o"]
[ttft]
base_ms = 1.0
noise_median_ms = 1.0
noise_sigma = 0.5
[prefix_cache]
block_tokens = 16
capacity_blocks = 10000
)",
                                                             "replica-test.toml"));
    const std::vector<unsigned> replicas = sim::make_replicas_distinct(profiles);
    sim::SimServerOptions second = options_;
    options_.replica = replicas[0];
    second.replica = replicas[1];
    SimFixture a(profiles[0], options_);
    SimFixture b(profiles[1], second);

    // The same unseeded requests, in the same order: distinct draws on each replica.
    std::vector<std::int64_t> ttft_a;
    std::vector<std::int64_t> ttft_b;
    for (int i = 0; i < 5; ++i) {
        ttft_a.push_back(model_ttft(complete(a).second));
        auto traced = complete(b).second;
        EXPECT_EQ(traced.at("replica").as_int64(), 1);
        ttft_b.push_back(model_ttft(traced));
    }
    EXPECT_NE(ttft_a, ttft_b);

    // A prompt cached on one replica is not on the other.
    const std::string prompt(4000, 'p');
    auto cached_tokens = [&](SimFixture& sim) {
        const std::string body = fmt::format(
            R"({{"model":"gpt-4o","max_tokens":1,"messages":[{{"role":"user","content":"{}"}}]}})",
            prompt);
        auto r = call(sim, http::verb::post, "/v1/chat/completions",
                      {{"authorization", "Bearer sk-sim"}}, body);
        EXPECT_EQ(r.status, 200u) << r.body;
        return dialect::parse_response(Api::openai, r.body)
            ->usage.cached_prompt_tokens.value_or(-1);
    };
    EXPECT_EQ(cached_tokens(a), 0);
    EXPECT_GE(cached_tokens(a), 992);
    EXPECT_EQ(cached_tokens(b), 0);

    // And each its own condition.
    control(a, http::verb::post, R"({"error_rate": 1})");
    EXPECT_EQ(complete(a).first, 503u);
    EXPECT_EQ(complete(b).first, 200u);
}

}  // namespace
}  // namespace tokenradar
