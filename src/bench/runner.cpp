#include <tokenradar/bench/runner.hpp>

#include "lane_records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/stats/latency_histogram.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

namespace tokenradar::bench {
namespace {

namespace asio = net::asio;

constexpr auto kMonitorTick = std::chrono::milliseconds(50);
constexpr int kTicksPerProgress = 10;  // 500 ms
// The workload order has its own generator: adding a mix leaves the target order as it was.
constexpr std::uint64_t kWorkloadOrderSalt = 0x9e3779b97f4a7c15ULL;

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void log_failure(const std::exception_ptr& e) {
    if (!e) return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        spdlog::error("bench: request coroutine failed: {}", ex.what());
    } catch (...) {
        spdlog::error("bench: request coroutine failed with a non-standard exception");
    }
}

// Decrements a counter when a coroutine ends, however it ends (so the monitor always sees
// the run finish).
class CountGuard {
  public:
    explicit CountGuard(std::atomic<std::size_t>& counter) : counter_(counter) {}
    ~CountGuard() { --counter_; }
    CountGuard(const CountGuard&) = delete;
    CountGuard& operator=(const CountGuard&) = delete;

  private:
    std::atomic<std::size_t>& counter_;
};

// One I/O thread: its own io_context and connection pool, and the records measured on it
// (without a lock per request: the move into one shared vector under the lanes' mutex was ~16%
// of bench's CPU in small-request runs).
struct Lane {
    explicit Lane(const net::ClientOptions& options) : client(ioc.get_executor(), options) {}
    asio::io_context ioc{1};
    net::HttpClient client;
    LaneRecords records;
};

// The lanes' records as one list in completion order.
std::vector<Measurement> merge_records(std::vector<std::unique_ptr<Lane>>& lanes) {
    std::vector<LaneRecords*> records;
    records.reserve(lanes.size());
    for (auto& lane : lanes) records.push_back(&lane->records);
    return LaneRecords::merge(records);
}

enum class Phase { preflight, warmup, measured };

class Run {
  public:
    Run(const RunOptions& options, const std::atomic<bool>& stop)
        : options_(options),
          stop_(stop),
          order_(options.targets.size(), options.seed),
          workload_order_(options.mix.size(), options.seed ^ kWorkloadOrderSalt) {
        const unsigned threads = std::max(1u, options.threads);
        for (unsigned i = 0; i < threads; ++i)
            lanes_.push_back(std::make_unique<Lane>(options.client));
        ttft_by_target_.resize(options.targets.size());
        prepare_calls();
    }

    // After a stop, coroutines are still pending on the lanes; destroying a lane's io_context
    // destroys them, and their guards (ReleaseLanes, CountGuard) touch this object. So the
    // work guards go first (while the lanes live), then the lanes (while everything else
    // does). A Ctrl-C during an open-loop run crashed here before.
    ~Run() {
        guards_.clear();
        lanes_.clear();
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    // False when stopped (Ctrl-C) before it finished.
    bool preflight() {
        std::vector<ProbeResult> results(options_.targets.size());
        for (std::size_t t = 0; t < options_.targets.size(); ++t) {
            alive_ += 1;
            asio::co_spawn(lanes_[0]->ioc, preflight_one(t, &results[t]), log_failure);
        }
        asio::co_spawn(lanes_[0]->ioc, monitor({}), log_failure);
        run_lanes();
        if (stop_.load()) return false;
        for (std::size_t t = 0; t < results.size(); ++t) {
            const auto& r = results[t];
            const auto& m = r.record;
            const bool unreachable = !m.t.headers && (m.status == RequestStatus::connection_error ||
                                                      m.status == RequestStatus::timeout_connect);
            const bool refused = m.http_status == 400 || m.http_status == 401 ||
                                 m.http_status == 403 || m.http_status == 404;
            if (unreachable || refused) {
                throw PreflightError(
                    fmt::format("target {}: {} ({} {}#{})", options_.targets[t].name,
                                r.error.empty() ? std::string(to_string(m.status)) : r.error,
                                dialect::to_string(options_.targets[t].api),
                                options_.targets[t].base.authority(), options_.targets[t].model));
            }
        }
        return true;
    }

    // False when stopped (Ctrl-C) before it finished.
    bool warmup() {
        if (options_.warmup == 0) return true;
        phase_ = Phase::warmup;
        restart_sequences();
        total_ = options_.warmup * options_.targets.size();
        next_ = 0;
        spawn_closed_workers(std::max<std::size_t>(1, std::min(options_.concurrency, total_)));
        asio::co_spawn(lanes_[0]->ioc, monitor({}), log_failure);
        run_lanes();
        return !stop_.load();
    }

    RunResult measure(const std::function<void(const Progress&)>& on_progress) {
        phase_ = Phase::measured;
        restart_sequences();
        next_ = 0;
        total_ = options_.requests > 0 ? options_.requests * options_.targets.size() : SIZE_MAX;
        start_ns_ = steady_now_ns();
        const bool timed = options_.requests == 0 && options_.duration.count() > 0;
        deadline_ns_ = timed ? start_ns_ + options_.duration.count() : INT64_MAX;
        collect_ttft_ = static_cast<bool>(on_progress);
        const double cpu_start = cpu_seconds();
        if (options_.rate > 0) {
            for (auto& lane : lanes_) guards_.push_back(asio::make_work_guard(lane->ioc));
            alive_ += 1;
            asio::co_spawn(lanes_[0]->ioc, dispatch_open_loop(), log_failure);
        } else {
            spawn_closed_workers(options_.concurrency);
        }
        asio::co_spawn(lanes_[0]->ioc, monitor(on_progress), log_failure);
        run_lanes();

        RunResult result;
        result.wall_s = static_cast<double>(steady_now_ns() - start_ns_) / 1e9;
        result.cpu_s = cpu_seconds() - cpu_start;
        result.records = merge_records(lanes_);  // after the run, like writing the records out
        result.interrupted = stop_.load();
        result.cancelled = in_flight_.load();
        result.peak_in_flight = peak_in_flight_.load();
        result.sched_lag_p50_ns = lag_.percentile_ns(0.5);
        result.sched_lag_p99_ns = lag_.percentile_ns(0.99);
        result.sched_lag_max_ns = lag_.max_ns();
        return result;
    }

  private:
    asio::awaitable<void> preflight_one(std::size_t target, ProbeResult* out) {
        CountGuard alive(alive_);
        ProbeRequest request = make_request(target, next_workload(), 0);
        *out = co_await run_probe(lanes_[0]->client, options_.targets[target], std::move(request));
    }

    ProbeRequest make_request(std::size_t target, std::size_t workload_index,
                              std::int64_t t_sched) {
        const Workload& workload = workload_at(workload_index);
        ProbeRequest request;
        request.call = &calls_[target][workload_index];
        if (workload.shared_prefixes > 1) {
            // The system prompt differs between requests: the probe writes each body whole
            // (~20 us for a 2k-token prefix, inside the request's timing).
            request.call = nullptr;
            request.extra_headers = options_.extra_headers;
            if (options_.task_header) {
                request.extra_headers.emplace_back("x-tokenradar-task", workload.task);
            }
            request.extra_body = workload.extra_body;
        }
        // Each phase, target and workload is a sequence of its own (make_prompt): no prompt
        // repeats in a run except a workload's repeats, which re-ask their own sequence's
        // questions, as one cache (a target) sees them.
        const std::size_t workloads = calls_[target].size();
        const std::size_t slot = target * workloads + workload_index;
        const std::uint64_t sequence = (static_cast<std::uint64_t>(phase_) << 48) |
                                       (static_cast<std::uint64_t>(target) << 24) | workload_index;
        const std::uint64_t index = sequence_next_[slot].fetch_add(1, std::memory_order_relaxed);
        request.prompt = make_prompt(workload, options_.seed, index, sequence);
        request.task = workload.task;
        request.t_sched = t_sched;
        request.request_id = new_request_id();
        request.first_token_timeout = options_.first_token_timeout;
        return request;
    }

    std::size_t next_target() {
        if (options_.targets.size() == 1) return 0;
        std::lock_guard lock(mutex_);
        return order_.next();
    }

    // An index into the mix (0 without one).
    std::size_t next_workload() {
        if (options_.mix.empty()) return 0;
        std::lock_guard lock(mutex_);
        return workload_order_.next();
    }

    const Workload& workload_at(std::size_t index) const {
        return options_.mix.empty() ? options_.workload : options_.mix[index];
    }

    // Each target's call for each workload, written once (PreparedCall): what a request adds
    // is its own prompt.
    void prepare_calls() {
        const std::size_t workloads = std::max<std::size_t>(1, options_.mix.size());
        for (const Target& target : options_.targets) {
            auto& per_workload = calls_.emplace_back();
            for (std::size_t w = 0; w < workloads; ++w) {
                const Workload& workload = workload_at(w);
                auto headers = options_.extra_headers;
                if (options_.task_header) headers.emplace_back("x-tokenradar-task", workload.task);
                auto call = PreparedCall::make(target, make_prompt(workload, options_.seed, 0),
                                               std::move(headers), workload.extra_body);
                // Extra fields that collide with the body would fail every request alike.
                const bool has_extra = !workload.extra_body.empty() || !target.extra_body.empty();
                if (!call && has_extra) {
                    throw PreflightError(fmt::format("target {}, workload {}: {}", target.name,
                                                     workload.name, call.error().message));
                }
                per_workload.push_back(std::move(call));
            }
        }
        sequence_count_ = options_.targets.size() * workloads;
        sequence_next_ = std::make_unique<std::atomic<std::uint64_t>[]>(sequence_count_);
        restart_sequences();
    }

    void restart_sequences() {
        for (std::size_t i = 0; i < sequence_count_; ++i) sequence_next_[i] = 0;
    }

    void spawn_closed_workers(std::size_t count) {
        const std::int64_t start = steady_now_ns();
        const auto ramp = phase_ == Phase::measured ? options_.ramp_up.count() : 0;
        for (std::size_t w = 0; w < count; ++w) {
            Lane* lane = lanes_[w % lanes_.size()].get();
            alive_ += 1;
            const auto offset = static_cast<std::int64_t>(
                static_cast<double>(ramp) * static_cast<double>(w) / static_cast<double>(count));
            asio::co_spawn(lane->ioc, closed_worker(lane, start + offset), log_failure);
        }
    }

    asio::awaitable<void> closed_worker(Lane* lane, std::int64_t start_at) {
        CountGuard alive(alive_);
        if (start_at > steady_now_ns()) {
            asio::steady_timer timer(lane->ioc, SteadyClock::time_point(Nanos(start_at)));
            co_await timer.async_wait(net::use_nothrow);
        }
        while (!stop_.load(std::memory_order_relaxed)) {
            const std::size_t index = next_.fetch_add(1);
            if (index >= total_ || steady_now_ns() >= deadline_ns_) break;
            co_await measure_one(lane, 0);
        }
    }

    asio::awaitable<void> dispatch_open_loop() {
        CountGuard alive(alive_);
        // The lanes may run out of work only once every request has been dispatched.
        struct ReleaseLanes {
            std::vector<asio::executor_work_guard<asio::io_context::executor_type>>& guards;
            ~ReleaseLanes() {
                for (auto& guard : guards) guard.reset();
            }
        } release_lanes{guards_};
        asio::steady_timer timer(lanes_[0]->ioc);
        const std::int64_t start = steady_now_ns();
        // The schedule is drawn as it goes (open_loop_schedule's sequence), so a run without
        // end holds no schedule either.
        ArrivalSequence arrivals(options_.rate, options_.arrival, options_.seed);
        const bool timed = options_.requests == 0 && options_.duration.count() > 0;
        for (std::size_t i = 0; i < total_ && !stop_.load(std::memory_order_relaxed); ++i) {
            const std::int64_t offset = arrivals.next();
            if (timed && offset >= options_.duration.count()) break;
            const std::int64_t due = start + offset;
            timer.expires_at(SteadyClock::time_point(Nanos(due)));
            co_await timer.async_wait(net::use_nothrow);
            Lane* lane = lanes_[i % lanes_.size()].get();
            alive_ += 1;
            asio::co_spawn(lane->ioc, open_request(lane, due), log_failure);
        }
    }

    asio::awaitable<void> open_request(Lane* lane, std::int64_t due) {
        CountGuard alive(alive_);
        lag_.record_ns(steady_now_ns() - due);
        co_await measure_one(lane, due);
    }

    asio::awaitable<void> measure_one(Lane* lane, std::int64_t t_sched) {
        const std::size_t target = next_target();
        const std::size_t now_in_flight = ++in_flight_;
        std::size_t peak = peak_in_flight_.load(std::memory_order_relaxed);
        while (now_in_flight > peak &&
               !peak_in_flight_.compare_exchange_weak(peak, now_in_flight)) {
        }
        ProbeRequest request = make_request(target, next_workload(), t_sched);
        ProbeResult result;
        {
            CountGuard in_flight(in_flight_);
            result = co_await run_probe(lane->client, options_.targets[target], std::move(request));
        }
        if (phase_ != Phase::measured) co_return;
        if (result.record.ok()) {
            const auto ttft = collect_ttft_ ? derive(result.record).ttft_ms : std::nullopt;
            if (ttft) {
                std::lock_guard lock(mutex_);
                ttft_by_target_[target].push_back(*ttft);
            }
        } else if (const std::size_t failed = ++failed_; failed <= 3 && !result.error.empty()) {
            spdlog::warn("{}: {}: {}", options_.targets[target].name,
                         to_string(result.record.status), result.error);
        }
        if (options_.on_record) {
            std::lock_guard lock(mutex_);
            ++done_;
            options_.on_record(std::move(result.record));
        } else {
            lane->records.add(done_++, std::move(result.record));
        }
    }

    asio::awaitable<void> monitor(std::function<void(const Progress&)> on_progress) {
        asio::steady_timer timer(lanes_[0]->ioc);
        int tick = 0;
        while (alive_.load() > 0) {
            timer.expires_after(kMonitorTick);
            co_await timer.async_wait(net::use_nothrow);
            if (stop_.load()) {
                for (auto& lane : lanes_) lane->ioc.stop();
                co_return;
            }
            if (++tick % kTicksPerProgress == 0 && on_progress) on_progress(progress());
        }
        if (on_progress) on_progress(progress());
    }

    Progress progress() {
        Progress p;
        std::lock_guard lock(mutex_);
        p.done = done_.load();
        p.failed = failed_.load();
        p.in_flight = in_flight_.load();
        p.elapsed_s = static_cast<double>(steady_now_ns() - start_ns_) / 1e9;
        for (std::size_t t = 0; t < ttft_by_target_.size(); ++t) {
            auto values = ttft_by_target_[t];
            double median = 0;
            if (!values.empty()) {
                auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
                std::nth_element(values.begin(), mid, values.end());
                median = *mid;
            }
            p.ttft_p50_ms.emplace_back(options_.targets[t].name, median);
        }
        return p;
    }

    // Runs every lane's io_context on its own thread until all run out of work or stop.
    void run_lanes() {
        std::vector<std::thread> threads;
        for (std::size_t i = 1; i < lanes_.size(); ++i) {
            threads.emplace_back([lane = lanes_[i].get()] { lane->ioc.run(); });
        }
        lanes_[0]->ioc.run();
        for (auto& t : threads) t.join();
        for (auto& lane : lanes_) lane->ioc.restart();
    }

    const RunOptions& options_;
    const std::atomic<bool>& stop_;
    std::vector<std::unique_ptr<Lane>> lanes_;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
    Phase phase_ = Phase::preflight;

    std::vector<std::vector<Result<PreparedCall>>>
        calls_;  // [target][workload]; fixed during the run
    // The next prompt index of each [target][workload] sequence in the current phase.
    std::size_t sequence_count_ = 0;
    std::unique_ptr<std::atomic<std::uint64_t>[]> sequence_next_;
    std::mutex mutex_;
    TargetOrder order_;
    TargetOrder workload_order_;
    bool collect_ttft_ = false;  // only a progress callback reads the TTFTs so far
    std::vector<std::vector<double>> ttft_by_target_;
    // Measured requests finished so far; its value when a record is kept is the record's place
    // in the completion order.
    std::atomic<std::size_t> done_{0};
    std::atomic<std::size_t> failed_{0};
    std::atomic<std::size_t> peak_in_flight_{0};

    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> in_flight_{0};
    std::atomic<std::size_t> alive_{0};
    std::size_t total_ = 0;
    std::int64_t start_ns_ = 0;
    std::int64_t deadline_ns_ = INT64_MAX;
    stats::LatencyHistogram lag_;
};

}  // namespace

RunResult run_bench(const RunOptions& options, const std::atomic<bool>& stop,
                    const std::function<void(const Progress&)>& on_progress) {
    Run run(options, stop);
    if ((options.preflight && !run.preflight()) || !run.warmup()) {
        RunResult interrupted;
        interrupted.interrupted = true;
        return interrupted;
    }
    return run.measure(on_progress);
}

}  // namespace tokenradar::bench
