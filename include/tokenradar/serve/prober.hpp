#pragma once
// Scheduled probes ([probes], README "Scheduled probes"). Each target
// (a configured provider and model) gets `requests` bench requests (bench::run_probe, the
// workload's prompts) every `interval`, each run a random 0..jitter after its slot; a run that
// overruns its slot skips the slots it missed rather than bunching up. Records leave through
// `sink` with source = "probe", client_region = [probes] region and the provider's region.
//
// Threads: one of its own (`tr-probes`, an io_context with one HttpClient); start() and
// stop() from one thread. stop() cancels the waits and the requests in flight (a cancelled
// request is not recorded) and joins. counters(), cpu_seconds() and metrics() from any thread.

#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/gateway/gateway.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/serve/config.hpp>

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::serve {

class Prober {
  public:
    struct Counters {
        std::string provider, model;
        std::uint64_t requests = 0;  // recorded (ok or not)
        std::uint64_t failures = 0;  // recorded with a status other than ok
        std::uint64_t tokens = 0;    // prompt + output tokens the records report
    };

    // `providers` are the gateway's (ProbeTarget::provider indexes them); `seed` draws the
    // jitter.
    Prober(ProbeConfig config, const std::vector<gateway::ProviderConfig>& providers,
           gateway::RecordSink sink, net::ClientOptions client = {}, std::uint64_t seed = 1);
    ~Prober();  // stop()
    Prober(const Prober&) = delete;
    Prober& operator=(const Prober&) = delete;

    void start();
    void stop();

    [[nodiscard]] std::vector<Counters> counters() const;
    // CPU time of the probe thread so far (all of a probe's work in this process but the
    // store's write of its record): what a probe costs the gateway.
    [[nodiscard]] double cpu_seconds() const;
    // tokenradar_probe_* families for /metrics: requests and tokens so far, the planned cost
    // per day, the thread's CPU.
    void metrics(PrometheusText& out) const;

    struct State;

  private:
    std::shared_ptr<State> state_;
    std::thread thread_;
    clockid_t cpu_clock_ = CLOCK_THREAD_CPUTIME_ID;  // the probe thread's, set by start()
};

}  // namespace tokenradar::serve
