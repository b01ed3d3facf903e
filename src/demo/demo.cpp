// `tokenradar demo`: the history, the sims, the gateway and the traffic, started in that
// order and stopped in the reverse one.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <tokenradar/bench/runner.hpp>
#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/config.hpp>
#include <tokenradar/core/duration.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/demo/demo.hpp>
#include <tokenradar/net/signals.hpp>
#include <tokenradar/serve/service.hpp>
#include <tokenradar/sim/sim_server.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace tokenradar::demo {
namespace {

namespace asio = boost::asio;

// SIGINT/SIGTERM set a flag from the moment the demo starts: a Ctrl-C while the history is
// written stops it between batches; later, the traffic runner watches the same flag.
class StopOnSignal {
  public:
    StopOnSignal() : signals_(ioc_, [this](int) { trigger(); }), thread_([this] { ioc_.run(); }) {}
    ~StopOnSignal() {
        asio::post(ioc_, [this] { signals_.cancel(); });
        thread_.join();
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

    [[nodiscard]] const std::atomic<bool>& flag() const noexcept { return stop_; }
    void wait() {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stop_.load(); });
    }

  private:
    void trigger() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
    }

    asio::io_context ioc_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<bool> stop_{false};
    net::ShutdownSignals signals_;
    std::thread thread_;
};

// The sims, in demo_providers() order, on one I/O thread, each on a free loopback port.
class Sims {
  public:
    // `replicas[i]`: which replica of its profile `profiles[i]` is (make_replicas_distinct).
    Sims(std::vector<sim::Profile> profiles, const std::vector<unsigned>& replicas,
         const std::string& key) {
        sim::SimServerOptions options;
        options.api_key = key;
        for (std::size_t i = 0; i < profiles.size(); ++i) {
            options.replica = replicas[i];
            auto server = std::make_unique<sim::SimServer>(ioc_, std::move(profiles[i]), options);
            auto port = server->listen(kDemoHost, 0);
            if (!port)
                throw ConfigError(
                    fmt::format("sim {}: {}", server->profile().name, port.error().message));
            server->start();
            ports_.push_back(*port);
            servers_.push_back(std::move(server));
        }
        thread_ = std::thread([this] {
            name_this_thread("tr-sim");
            ioc_.run();
        });
    }
    ~Sims() { stop(); }
    Sims(const Sims&) = delete;
    Sims& operator=(const Sims&) = delete;

    // Closes every sim connection now (their clients see the answer cut). Any thread; the
    // later stop() then only joins.
    void cut() {
        for (auto& server : servers_) server->stop(std::chrono::milliseconds(0));
    }
    void stop() {
        if (!thread_.joinable()) return;
        for (auto& server : servers_) server->stop(std::chrono::seconds(1));
        thread_.join();
    }
    [[nodiscard]] const std::vector<std::uint16_t>& ports() const noexcept { return ports_; }

  private:
    asio::io_context ioc_{1};
    std::vector<std::unique_ptr<sim::SimServer>> servers_;
    std::vector<std::uint16_t> ports_;
    std::thread thread_;
};

// The gateway binds its port only after the history is written, which may take seconds: a
// port already taken is reported before that. (Another process may still take it between
// the two; the gateway's own bind then fails with the same message.)
void check_port_free(std::uint16_t port) {
    if (port == 0) return;
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as the gateway binds
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    const int error = errno;
    ::close(fd);
    if (!bound) {
        throw ConfigError(
            fmt::format("--port {}: cannot listen on {}:{}: {} (choose another port, or --port 0 "
                        "for any free one)",
                        port, kDemoHost, port, std::strerror(error)));
    }
}

DemoProfiles load_profiles(const DemoOptions& options) {
    return demo_profiles(
        options.profiles_dir.empty() ? find_resource_dir("profiles") : options.profiles_dir,
        options.seed);
}

std::vector<bench::Workload> load_workloads(const DemoOptions& options) {
    const auto dir =
        options.workloads_dir.empty() ? find_resource_dir("workloads") : options.workloads_dir;
    std::vector<bench::Workload> workloads;
    for (const std::string& task : demo_tasks())
        workloads.push_back(bench::load_workload(task, dir));
    return workloads;
}

std::string whole_seconds(std::int64_t us) {
    return format_duration(std::chrono::seconds(us / 1'000'000));
}

std::size_t providers_with_history() {
    const auto& providers = demo_providers();
    return static_cast<std::size_t>(std::count_if(providers.begin(), providers.end(),
                                                  [](const DemoProvider& p) { return p.history; }));
}

// Writes the history the store lacks; returns how many records were written.
std::size_t fill_history(const DemoOptions& options, const std::vector<sim::Profile>& profiles,
                         const std::vector<bench::Workload>& workloads, std::uint64_t seed,
                         const std::atomic<bool>& stop) {
    // Owned like the gateway's store below: refused at once while a server uses the file.
    store::SqliteOptions store_options;
    store_options.exclusive = true;
    auto opened = store::SqliteStore::open(options.db.string(), store_options);
    if (!opened) throw ConfigError(fmt::format("--db {}", opened.error().message));
    store::SqliteStore& db = **opened;
    if (options.history.count() <= 0 || options.history_rate <= 0) return 0;

    const std::int64_t to_us = wall_now_us();
    const std::int64_t from_us =
        to_us - std::chrono::duration_cast<std::chrono::microseconds>(options.history).count();
    auto missing = missing_history(db, from_us, to_us);
    if (!missing)
        throw ConfigError(fmt::format("--db {}: {}", options.db.string(), missing.error().message));
    if (missing->empty()) {
        spdlog::info("demo: {} already holds the last {} of sim history", options.db.string(),
                     format_duration(options.history));
        return 0;
    }
    const auto tasks = history_tasks(workloads);
    const std::int64_t started = steady_now_ns();
    std::size_t written = 0;
    for (const TimeRange& range : *missing) {
        spdlog::info("demo: writing {} of sim history ({} providers) up to {} into {}",
                     whole_seconds(range.to_us - range.from_us), providers_with_history(),
                     range.to_us == to_us ? "now" : whole_seconds(to_us - range.to_us) + " ago",
                     options.db.string());
        auto n = write_history(db, profiles, tasks, range, options.history_rate, seed, stop);
        if (!n)
            throw ConfigError(fmt::format("--db {}: {}", options.db.string(), n.error().message));
        written += *n;
    }
    const double seconds = static_cast<double>(steady_now_ns() - started) / 1e9;
    spdlog::info(
        "demo: {} history records ({} providers, source sim) in {:.1f} s ({:.0f} records/s)",
        written, providers_with_history(), seconds,
        seconds > 0 ? static_cast<double>(written) / seconds : 0.0);
    return written;
}

struct TrafficCounters {
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> failed{0};
};

// The gateway drains (its clients, the traffic, are gone: their requests end as cancelled)
// and flushes the store while the sims still answer. A relay that missed its client's
// hangup would wait for the whole upstream answer (a non-streamed 500-token answer takes up
// to 27 s at gemini's peak; seen once under ASan at load 10): past the grace period plus a
// second, the sims cut their connections so the gateway's stop ends.
void stop_gateway(serve::Service& service, Sims& sims) {
    std::mutex mutex;
    std::condition_variable stopped;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock lock(mutex);
        const auto limit = kGatewayGrace + std::chrono::seconds(1);
        if (!stopped.wait_for(lock, limit, [&] { return done; })) {
            spdlog::warn(
                "demo: the gateway still waits for upstream answers after {} ms; the sims cut them",
                limit.count());
            sims.cut();
        }
    });
    service.stop();
    {
        std::lock_guard lock(mutex);
        done = true;
    }
    stopped.notify_all();
    watchdog.join();
}

void check_options(const DemoOptions& options) {
    if (!(options.rate > 0))
        throw ConfigError("--rate: expected a positive number of requests per second");
    if (!(options.history_rate >= 0))
        throw ConfigError("--history-rate: expected a number of records per second >= 0");
    if (options.history.count() < 0)
        throw ConfigError("--history: expected a duration >= 0 (e.g. 7d)");
    if (options.db.empty()) throw ConfigError("--db: expected a file name");
}

}  // namespace

int run_demo(const DemoOptions& options) {
    check_options(options);
    StopOnSignal stop;
    const std::uint64_t seed = options.seed.value_or(static_cast<std::uint64_t>(wall_now_us()));
    DemoProfiles loaded = load_profiles(options);
    const std::vector<bench::Workload> workloads = load_workloads(options);
    check_port_free(options.port);

    const std::size_t history =
        fill_history(options, loaded.profiles, workloads, seed, stop.flag());
    const auto announce = [&options](const std::string& line) {
        if (options.announce) options.announce(line);
    };
    if (stop.flag().load()) {
        announce(fmt::format("tokenradar demo: stopped while writing the history ({} records)",
                             history));
        return 0;
    }

    // The sims want a key in the real header shapes; this one never leaves the process.
    const std::string sim_key = new_request_id("sk-demo-");
    Sims sims(std::move(loaded.profiles), loaded.replicas, sim_key);
    serve::Service service(demo_serve_config(options, sims.ports(), sim_key));
    auto port = service.start();
    if (!port) throw ConfigError(fmt::format("--port {}: {}", options.port, port.error().message));

    TrafficCounters counters;
    std::vector<bench::RunOptions> lanes = demo_traffic(options, *port, workloads, seed);
    std::vector<std::thread> traffic;
    for (bench::RunOptions& run : lanes) {
        run.on_record = [&counters](Measurement&& m) {
            counters.requests.fetch_add(1, std::memory_order_relaxed);
            if (!m.ok()) counters.failed.fetch_add(1, std::memory_order_relaxed);
        };
        traffic.emplace_back([&run, &stop] {
            try {
                bench::run_bench(run, stop.flag(), {});
            } catch (const std::exception& e) {
                spdlog::error("demo: the traffic stopped: {}", e.what());
            }
        });
    }
    spdlog::info(
        "demo: {} sims, gateway on port {} (store {}), {} requests/s of {} tasks x "
        "stream/non-stream",
        sims.ports().size(), *port, options.db.string(), options.rate, workloads.size());
    // The observatory reads the history into its rollups first (/api/v1 answers 503 until
    // then): the dashboard opens on full heatmaps.
    const std::int64_t loading = steady_now_ns();
    while (!service.ready() && !stop.flag().load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    spdlog::info("demo: observatory rollups loaded in {:.1f} s",
                 static_cast<double>(steady_now_ns() - loading) / 1e9);
    if (!stop.flag().load()) announce(fmt::format("dashboard: http://{}:{}/", kDemoHost, *port));

    stop.wait();
    spdlog::info("demo: stopping the traffic, then the gateway, then the sims");
    for (std::thread& lane : traffic) lane.join();
    stop_gateway(service, sims);
    sims.stop();
    announce(fmt::format(
        "tokenradar demo: {} requests through the gateway ({} failed); {}; {} history records",
        counters.requests.load(), counters.failed.load(), service.store_summary(), history));
    return 0;
}

}  // namespace tokenradar::demo
