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
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/http_client.hpp>

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::bench {

// The HTTP call for one target and workload with the user prompt cut out of the body: every
// request of a run differs only there (system prompt, options, headers and path are fixed per
// workload), so a request costs one JSON-escaped splice instead of building and serialising
// the API's request JSON (~6% of bench's CPU per small request). Immutable: lanes share it.
class PreparedCall {
  public:
    // `fixed` is any prompt of the workload (its `user` is ignored); `workload_extra_body` the
    // workload's extra fields (the target's go over them, extra_body.hpp). A request the
    // dialect cannot express, or extra fields that collide with the body's, is an error,
    // reported by each probe that uses it (run_bench refuses to start with the latter).
    static Result<PreparedCall> make(const Target& target, const PromptSpec& fixed,
                                     std::vector<std::pair<std::string, std::string>> extra_headers,
                                     const boost::json::object& workload_extra_body = {});

    const std::string& target() const noexcept { return target_; }  // path and query
    const std::vector<std::pair<std::string, std::string>>& headers() const noexcept {
        return headers_;
    }
    // The body as the dialect writes it for this user prompt.
    Result<std::string> body(std::string_view user) const;

  private:
    std::string target_;
    std::vector<std::pair<std::string, std::string>> headers_;
    std::string before_user_;  // the body up to the user prompt's JSON string
    std::string after_user_;
    // Set when the body could not be split (the prompt's JSON string was not found exactly
    // once): the body is then written per request from this request.
    std::optional<dialect::ChatRequest> whole_;
    boost::json::object extra_body_;  // merged into each `whole_` body
    dialect::Api api_ = dialect::Api::openai;
};

struct ProbeRequest {
    PromptSpec prompt;  // prompt.user goes into `call`'s body; the rest must match `call`'s
    // Built by the caller once per target and workload, outliving the probe; null: the probe
    // prepares its own (tests, one-off requests).
    const Result<PreparedCall>* call = nullptr;
    std::string task;          // the `task` label
    std::int64_t t_sched = 0;  // steady ns when due; 0 = closed loop (sched = send)
    std::string request_id;
    std::chrono::milliseconds first_token_timeout{60'000};
    // Test-only headers (x-sim-*) to steer a simulated provider; never used against real ones.
    // Only read when `call` is null (a prepared call has its headers).
    std::vector<std::pair<std::string, std::string>> extra_headers;
    // The workload's extra body fields (the target's are in the Target). Only read when
    // `call` is null.
    boost::json::object extra_body;
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
