// `observatory_bench post`: the client side of the end-to-end ingestion benchmark
// (bench/observatory/run.sh starts the server). Builds `requests` NDJSON bodies of fresh
// records first (ids unique across the run and across seeds), gzip'd when asked, then posts
// them over `connections` keep-alive connections from one I/O thread, each connection sending
// its next body when the previous one was answered. A 503 (store queue full) or 429 (rate
// limit) is retried after 50 ms and counted. Reports records accepted per second (wall clock,
// first request to last answer) and, with --server-pid, the server's CPU time over that span.

#include "bench_modes.hpp"
#include "records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/observatory/ingest.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

namespace tokenradar::bench_observatory {
namespace {

namespace asio = net::asio;
namespace http = net::beast::http;
using Clock = std::chrono::steady_clock;
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Shared {
    std::vector<std::string> bodies;
    std::size_t next = 0;  // one I/O thread: no lock
    std::uint64_t accepted = 0, duplicates = 0, rejected = 0, retries = 0, failures = 0;
    std::string first_error;
};

void log_failure(std::exception_ptr e) {
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::error("observatory_bench: poster failed: {}", ex.what());
    }
}

void count_answer(Shared& shared, const std::string& body) {
    boost::system::error_code ec;
    const auto v = boost::json::parse(body, ec);
    if (ec || !v.is_object()) {
        ++shared.failures;
        return;
    }
    const auto& o = v.get_object();
    const auto number = [&](const char* key) {
        const auto* n = o.if_contains(key);
        return n != nullptr && n->is_int64() ? static_cast<std::uint64_t>(n->get_int64()) : 0;
    };
    shared.accepted += number("accepted");
    shared.duplicates += number("duplicates");
    shared.rejected += number("rejected");
}

// One connection's loop: the next body, until none is left.
asio::awaitable<void> poster(net::HttpClient* client, net::Url url, Headers headers,
                             Shared* shared) {
    asio::steady_timer backoff(co_await asio::this_coro::executor);
    while (shared->next < shared->bodies.size()) {
        const std::size_t i = shared->next++;
        for (;;) {
            std::string body = shared->bodies[i];  // the client takes its body by value
            auto r =
                co_await client->request(http::verb::post, url, headers, std::move(body), 1 << 20);
            if (!r) {
                if (shared->first_error.empty()) shared->first_error = r.error().message;
                ++shared->failures;
                break;
            }
            if (r->status == 503 || r->status == 429) {
                ++shared->retries;
                backoff.expires_after(std::chrono::milliseconds(50));
                co_await backoff.async_wait(net::use_nothrow);
                continue;
            }
            if (r->status != 200) {
                if (shared->first_error.empty())
                    shared->first_error = fmt::format("{}: {}", r->status, r->body);
                ++shared->failures;
            } else {
                count_answer(*shared, r->body);
            }
            break;
        }
    }
}

// utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15).
double process_cpu_of(int pid) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');  // the command name may contain spaces
    if (close == std::string::npos) return 0;
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int f = 3; f <= 15 && fields >> field; ++f) {
        if (f >= 14) ticks += std::stod(field);
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int run_post(const PostBenchOptions& o) {
    auto url = net::parse_url(o.url);
    if (!url) {
        fmt::print(stderr, "--url: {}\n", url.error().message);
        return 2;
    }
    Shared shared;
    const std::int64_t now_us = wall_now_us();
    RecordGenerator gen(o.seed, now_us - o.spread_hours * kHourUs, now_us,
                        o.requests * o.records_per_request);
    gen.time_ordered_ids = o.time_ordered_ids;
    std::size_t plain_bytes = 0;
    std::size_t sent_bytes = 0;
    for (std::size_t r = 0; r < o.requests; ++r) {
        // The seed salts the ids, so runs with different seeds never collide in the store.
        std::string body = ndjson_body(gen, o.records_per_request, o.seed);
        plain_bytes += body.size();
        if (o.gzip) body = observatory::gzip(body);
        sent_bytes += body.size();
        shared.bodies.push_back(std::move(body));
    }
    Headers headers = {{"content-type", "application/x-ndjson"}};
    if (o.gzip) headers.emplace_back("content-encoding", "gzip");
    if (!o.key.empty()) headers.emplace_back("authorization", "Bearer " + o.key);
    fmt::print(
        "post: {} requests x {} records ({:.1f} MB NDJSON, {:.1f} MB sent{}) over {} connections "
        "to {}\n",
        o.requests, o.records_per_request, static_cast<double>(plain_bytes) / 1e6,
        static_cast<double>(sent_bytes) / 1e6, o.gzip ? ", gzip" : "", o.connections, o.url);

    asio::io_context ioc(1);
    net::ClientOptions options;
    options.headers_timeout = std::chrono::seconds(120);
    net::HttpClient client(ioc.get_executor(), options);
    for (int c = 0; c < o.connections; ++c) {
        asio::co_spawn(ioc, poster(&client, *url, headers, &shared), log_failure);
    }
    const double server_cpu0 = o.server_pid > 0 ? process_cpu_of(o.server_pid) : 0;
    const double cpu0 = process_cpu_seconds();
    const auto wall0 = Clock::now();
    ioc.run();
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    const double cpu = process_cpu_seconds() - cpu0;
    const double server_cpu = o.server_pid > 0 ? process_cpu_of(o.server_pid) - server_cpu0 : 0;

    const double n = static_cast<double>(shared.accepted);
    fmt::print(
        "accepted {} records ({} duplicates, {} rejected; {} retries after 503/429, {} failed "
        "requests) in {:.2f} s: {:.0f} records/s\n",
        shared.accepted, shared.duplicates, shared.rejected, shared.retries, shared.failures, wall,
        n / wall);
    if (o.server_pid > 0) {
        fmt::print(
            "server CPU {:.2f} s = {:.0f}% of one core, {:.2f} us per record; client CPU {:.2f} "
            "s\n",
            server_cpu, 100 * server_cpu / wall, server_cpu * 1e6 / n, cpu);
    } else {
        fmt::print("client CPU {:.2f} s\n", cpu);
    }
    if (!shared.first_error.empty()) fmt::print(stderr, "first error: {}\n", shared.first_error);
    return shared.failures == 0 ? 0 : 1;
}

}  // namespace tokenradar::bench_observatory
