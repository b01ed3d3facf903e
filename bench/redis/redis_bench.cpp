// redis_bench: GET of one value through net::RedisClient against a running redis-server,
// on one io_context thread and one connection; bench/redis/run.sh runs it beside
// redis-benchmark, bench/README.md ("Redis L2") has the commands and the last numbers.
// Per concurrency C: C coroutines issue GETs back to back (pipelined on the connection),
// each timed from the call to its result.

#include <tokenradar/net/redis_client.hpp>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using tokenradar::net::RedisClient;
using tokenradar::net::RedisStats;
using Clock = std::chrono::steady_clock;

struct Lane {
    std::vector<std::int64_t> latency_ns;
    int errors = 0;
    bool done = false;
};

asio::awaitable<void> get_loop(RedisClient* client, std::string key, std::size_t expected_size,
                               int requests, Lane* lane) {
    for (int i = 0; i < requests; ++i) {
        const auto t0 = Clock::now();
        auto got = co_await client->get(key);
        const auto t1 = Clock::now();
        if (!got || !got->has_value() || (*got)->size() != expected_size) {
            ++lane->errors;
            if (lane->errors == 1 && !got) {
                std::fprintf(stderr, "redis_bench: %s\n", got.error().message.c_str());
            }
            continue;
        }
        lane->latency_ns.push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
    lane->done = true;
}

asio::awaitable<bool> set_value(RedisClient* client, std::string key, std::string value) {
    auto stored = co_await client->set(key, value, std::chrono::hours(1));
    if (!stored) std::fprintf(stderr, "redis_bench: SET: %s\n", stored.error().message.c_str());
    co_return stored&&* stored;
}

template <class Pred>
void run_until(asio::io_context& ioc, Pred pred) {
    while (!pred()) ioc.run_one();
}

double quantile_us(const std::vector<std::int64_t>& sorted, double q) {
    if (sorted.empty()) return 0;
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[std::max<std::size_t>(rank, 1) - 1]) / 1000.0;
}

// One measurement: `concurrency` coroutines, `requests` GETs in all.
void measure(asio::io_context& ioc, RedisClient& client, const std::string& key,
             std::size_t value_bytes, int requests, int concurrency, bool warm_up = false) {
    std::vector<Lane> lanes(static_cast<std::size_t>(concurrency));
    const int per_lane = requests / concurrency;
    for (Lane& lane : lanes) lane.latency_ns.reserve(static_cast<std::size_t>(per_lane));
    const RedisStats before = client.stats();
    const auto t0 = Clock::now();
    for (Lane& lane : lanes) {
        asio::co_spawn(ioc, get_loop(&client, key, value_bytes, per_lane, &lane),
                       [](const std::exception_ptr& e) {
                           if (e) std::rethrow_exception(e);
                       });
    }
    run_until(ioc, [&] {
        return std::all_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.done; });
    });
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<std::int64_t> all;
    int errors = 0;
    for (const Lane& lane : lanes) {
        all.insert(all.end(), lane.latency_ns.begin(), lane.latency_ns.end());
        errors += lane.errors;
    }
    std::sort(all.begin(), all.end());
    const RedisStats after = client.stats();
    fmt::print(
        "{}RedisClient GET {} B c={}: {} requests in {:.2f} s = {:.0f}/s; latency us p50 {:.1f} "
        "p99 {:.1f} p99.9 {:.1f} max {:.1f}; errors {}, new connections {}\n",
        warm_up ? "(warm-up) " : "", value_bytes, concurrency, all.size(), seconds,
        static_cast<double>(all.size()) / seconds, quantile_us(all, 0.50), quantile_us(all, 0.99),
        quantile_us(all, 0.999), all.empty() ? 0.0 : static_cast<double>(all.back()) / 1000.0,
        errors, after.connects - before.connects);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"GET latency and rate through net::RedisClient against a running redis-server"};
    std::string url;
    int requests = 100'000;
    std::size_t value_bytes = 2048;
    std::vector<int> concurrency{1, 16};
    app.add_option("--url", url, "redis://HOST:PORT")->required();
    app.add_option("--requests", requests, "GETs per concurrency level")->capture_default_str();
    app.add_option("--value-bytes", value_bytes, "Size of the value read")->capture_default_str();
    app.add_option("--concurrency", concurrency, "Coroutines issuing GETs (repeatable)")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    auto parsed = tokenradar::net::parse_redis_url(url);
    if (!parsed) {
        std::fprintf(stderr, "redis_bench: %s\n", parsed.error().message.c_str());
        return 2;
    }
    asio::io_context ioc(1);
    tokenradar::net::RedisOptions options;
    options.command_timeout = std::chrono::seconds(2);  // a benchmark waits out a slow spell
    options.connect_timeout = std::chrono::seconds(2);
    RedisClient client(ioc.get_executor(), *parsed, options);

    const std::string key = "tokenradar:bench:get";
    std::string value(value_bytes, 'v');
    for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>('a' + i % 26);
    std::optional<bool> stored;
    asio::co_spawn(ioc, set_value(&client, key, value),
                   [&](const std::exception_ptr& e, bool ok) { stored = !e && ok; });
    run_until(ioc, [&] { return stored.has_value(); });
    if (!*stored) return 1;

    measure(ioc, client, key, value_bytes, std::min(requests, 10'000), 1, true);
    for (int c : concurrency) measure(ioc, client, key, value_bytes, requests, std::max(c, 1));
    return 0;
}
