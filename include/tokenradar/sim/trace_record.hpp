#pragma once
// One line of the sim's `--trace FILE`: the ground truth of what the sim intended for one
// request, to compare with what a client measured. JSON Lines; never contains prompt text.

#include <tokenradar/sim/latency_model.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tokenradar::sim {

struct TraceRecord {
    std::string response_id;
    std::string profile;
    std::string model;
    std::string api;  // "openai" | "anthropic" | "gemini"
    bool stream = true;
    std::int64_t ts_us = 0;  // wall clock when the request was fully read (UTC microseconds)
    int status = 200;        // HTTP status sent
    std::int64_t prompt_tokens = 0;
    std::int64_t cached_prompt_tokens = 0;
    std::int64_t output_tokens = 0;
    unsigned replica = 0;  // of the profile, in a run serving it on several ports
    // Filled by the server, plus a heavy-tail request's simulated wait (tail_wait_ns).
    std::int64_t queue_wait_ns = 0;
    std::int64_t tail_wait_ns = 0;
    bool tail = false;
    std::int64_t ttft_ns = 0;  // intended: request read -> first token write, incl. queue
    // Done: request read -> the first token handed to the socket; -1 when none was streamed.
    std::int64_t ttft_sent_ns = -1;
    double peak_multiplier = 1.0;
    Condition condition;  // the replica's episode or command; null in JSON when normal
    std::vector<std::int64_t> chunk_offsets_ns;  // write schedule after the first chunk
    std::vector<std::int64_t> chunk_tokens;      // tokens per chunk
    std::string finish_reason;
    FaultKind fault = FaultKind::none;
    std::int64_t fault_at_token = -1;

    // Fills the plan-derived fields; queue_wait_ns = the server's queue wait +
    // plan.tail_wait_ns, ttft_ns = the server's queue wait + plan.ttft_ns, so ttft_ns -
    // queue_wait_ns is the model's TTFT outside the tail.
    static TraceRecord from_plan(const RequestPlan& plan, std::int64_t queue_wait_ns);

    // One JSON object and a trailing '\n'.
    [[nodiscard]] std::string to_json_line() const;
};

}  // namespace tokenradar::sim
