#pragma once
// One measured request (metrics.md): sends a prompt to a target, reads the response as it
// arrives and returns the measurement record. Failures are records too, with their status.
//
// Executor: must run on the executor of `client` (see net::HttpClient). Suspends for the
// whole request. Cancellation: terminal cancellation of the awaiting coroutine closes the
// socket; the record then has status "cancelled".

#include <tokenradar/bench/target.hpp>
#include <tokenradar/bench/workload.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/http_client.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace tokenradar::bench {

struct ProbeRequest {
    PromptSpec prompt;
    std::string task;          // the `task` label
    std::int64_t t_sched = 0;  // steady ns when due; 0 = closed loop (sched = send)
    std::string request_id;
    std::chrono::milliseconds first_token_timeout{60'000};
    // Test-only headers (x-sim-*) to steer a simulated provider; never used against real ones.
    std::vector<std::pair<std::string, std::string>> extra_headers;
};

struct ProbeResult {
    Measurement record;
    // Why it failed, for the user (the provider's error message, "connect to host:443:
    // connection refused"...). Never stored in records: it may quote anything.
    std::string error;
};

net::asio::awaitable<ProbeResult> run_probe(net::HttpClient& client, const Target& target,
                                            ProbeRequest request);


}  // namespace tokenradar::bench
