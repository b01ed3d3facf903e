#pragma once
// A whole benchmark run: preflight, warmup, the measured phase in closed loop (fixed
// concurrency) or open loop (a schedule computed before the run), progress, Ctrl-C.
//
// Threads: `threads` I/O threads, each with its own io_context and HTTP client pool;
// requests are spread over them. run_bench() blocks until the run ends or `stop` is set
// (Ctrl-C), then returns every record (in-flight requests at a stop are cancelled and not
// counted).

#include <tokenradar/bench/probe.hpp>
#include <tokenradar/bench/schedule.hpp>
#include <tokenradar/bench/target.hpp>
#include <tokenradar/bench/workload.hpp>
#include <tokenradar/core/measurement.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tokenradar::bench {

struct RunOptions {
    std::vector<Target> targets;
    Workload workload;
    // Workloads mixed into one run: each request takes the next of these in randomised
    // rounds (as targets are interleaved) instead of `workload`. Empty: `workload` only.
    std::vector<Workload> mix;
    std::size_t requests = 0;  // per target; 0 = use duration
    // Neither requests nor duration: the measured phase runs until `stop` (open or closed loop).
    std::chrono::nanoseconds duration{0};
    std::size_t concurrency = 0;  // closed loop when > 0
    // Closed loop: worker k starts at ramp_up * k / concurrency, so a large concurrency does
    // not begin with one synthetic burst of simultaneous connects and requests.
    std::chrono::nanoseconds ramp_up{0};
    double rate = 0;  // open loop (requests/s over all targets) when > 0
    Arrival arrival = Arrival::poisson;
    std::size_t warmup = 0;  // unrecorded requests per target before measuring
    bool preflight = true;   // one unrecorded request per target; failure = error
    std::uint64_t seed = 1;
    unsigned threads = 1;
    net::ClientOptions client;
    std::chrono::milliseconds first_token_timeout{60'000};
    std::vector<std::pair<std::string, std::string>> extra_headers;  // x-sim-* in tests
    // Send `x-tokenradar-task: <the workload's task>` with every request, so a TokenRadar
    // gateway in front of the targets labels its records with the task.
    bool task_header = false;
    // When set, each measured record is handed here (from an I/O thread, one call at a time)
    // instead of being kept in RunResult::records: a run without end then holds no records.
    std::function<void(Measurement&&)> on_record;
};

struct Progress {
    std::size_t done = 0;
    std::size_t failed = 0;
    std::size_t in_flight = 0;
    double elapsed_s = 0;
    std::vector<std::pair<std::string, double>> ttft_p50_ms;  // per target, so far
};

struct RunResult {
    std::vector<Measurement>
        records;  // measured phase only, in completion order (none with on_record)
    bool interrupted = false;
    std::size_t cancelled = 0;  // in flight at the stop, not recorded
    double wall_s = 0;
    double cpu_s = 0;  // user + system CPU of this process during the run
    std::size_t peak_in_flight = 0;
    // Client-side scheduling lag (probe start - due time), all requests.
    std::int64_t sched_lag_p50_ns = 0;
    std::int64_t sched_lag_p99_ns = 0;
    std::int64_t sched_lag_max_ns = 0;
};

// Thrown when a target fails its preflight (unreachable, TLS, auth, bad model), or before
// any request when its extra body fields collide with what bench writes (extra_body.hpp):
// the message names the target and the reason.
class PreflightError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// `on_progress` is called about twice a second from an I/O thread (may be empty).
RunResult run_bench(const RunOptions& options, const std::atomic<bool>& stop,
                    const std::function<void(const Progress&)>& on_progress);

}  // namespace tokenradar::bench
