#pragma once
// The deterministic, clock-free latency model of one simulated provider. The server asks it
// for a RequestPlan per request and then only follows the plan (waits, writes bytes). Plans
// depend only on the profile, the input and the request seed, so a seeded run replays
// exactly whatever the thread interleaving. Thread-safe; never suspends, no I/O.

#include <tokenradar/sim/capacity_gate.hpp>
#include <tokenradar/sim/overrides.hpp>
#include <tokenradar/sim/prefix_cache.hpp>
#include <tokenradar/sim/profile.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tokenradar::sim {

struct PlanInput {
    // The canonical prompt text (see tokens.hpp). When non-empty it gives prompt_tokens and
    // goes through the prefix cache. When empty, prompt_tokens/prompt_hash are used and the
    // cache is bypassed.
    std::string_view prompt_text;
    std::int64_t prompt_tokens = 0;
    std::uint64_t prompt_hash = 0;
    std::optional<std::int64_t> max_tokens;  // the request's limit; default from the profile
    std::int64_t wall_time_us = 0;           // UTC microseconds, for the peak curve
    // Seeds the timing draws and, with the profile seed, the output text. Without it the
    // timings use a per-model request counter and the text uses the prompt hash.
    std::optional<std::uint64_t> request_seed;
    Overrides overrides;
    // The replica's condition now (an episode or a command; control.hpp): the server reads
    // it, the model stays clock-free.
    Condition condition;
};

enum class FinishReason { length, stop };
[[nodiscard]] std::string_view to_string(FinishReason reason) noexcept;

struct Fault {
    FaultKind kind = FaultKind::none;
    // disconnect: close the connection instead of writing the chunk that holds this token
    // (tokens before it were sent). stall: wait stall_ns before writing that chunk; already
    // in the schedule (in ttft_ns when at_token is 0, else in the chunk and token offsets).
    // malformed: that chunk's bytes are corrupted. Always the first token of a chunk; drawn
    // faults pick a chunk after the first, x-sim-fault-at-token picks the chunk holding it.
    std::int64_t at_token = 0;
    std::int64_t stall_ns = 0;

    [[nodiscard]] bool is_http_error() const noexcept;
    [[nodiscard]] int http_status() const noexcept;  // 429/500/503, else 200
};

struct Chunk {
    std::int64_t first_token = 0;
    std::int64_t token_count = 0;
    std::int64_t offset_ns = 0;  // write time after the first chunk (chunk 0 at 0)
};

struct RequestPlan {
    std::int64_t prompt_tokens = 0;
    std::int64_t cached_prompt_tokens = 0;
    std::int64_t output_tokens = 0;  // exact usage; 0 for HTTP-error faults
    // From the request fully read (after any queue wait) to the first chunk write, including
    // tail_wait_ns. For an HTTP-error fault: the delay before the error response (the
    // network base delay).
    std::int64_t ttft_ns = 0;
    // A heavy-tail request's extra wait (TTFT x ([tail] ttft_multiplier - 1)), part of
    // ttft_ns; traced as queue wait, which is what real heavy tails are.
    std::int64_t tail_wait_ns = 0;
    bool tail = false;  // drawn into the heavy tail (or x-sim-tail: always)
    // Delivery offset of every token relative to token 0, nanoseconds; token 0 at 0. The
    // tokens of one chunk share the chunk's write time. Chunk 0 is written at 0 and later
    // chunks when their last token is generated, so TTFT and TPOT measured on the wire
    // ((t_last - t_first) / (N - 1), metrics.md) equal the model's values exactly.
    std::vector<std::int64_t> token_offsets_ns;
    std::vector<Chunk> chunks;
    std::vector<std::string_view> tokens;  // static storage, see tokens.hpp
    FinishReason finish_reason = FinishReason::length;
    Fault fault;
    double peak_multiplier = 1.0;  // the factor that was applied (for traces/tests)
    Condition condition;           // the replica's condition that was applied
    bool condition_error = false;  // answered 503 by the condition's error_rate
    // Seeds the server's choices of what to answer (a tool call or text, which tool): from
    // the request seed when there is one, else distinct per request, like the timings.
    std::uint64_t answer_seed = 0;

    [[nodiscard]] std::string chunk_text(std::size_t chunk) const;
};

class LatencyModel {
  public:
    explicit LatencyModel(Profile profile);

    LatencyModel(const LatencyModel&) = delete;
    LatencyModel& operator=(const LatencyModel&) = delete;

    // Consults (and updates) the prefix cache when input.prompt_text is non-empty and the
    // request is not answered with an injected 429/500/503 (drawn, overridden, or from the
    // condition's error_rate). A plan may have 0 output tokens
    // (max_tokens 0, x-sim-output-tokens 0): then it has no chunks.
    [[nodiscard]] RequestPlan plan(const PlanInput& input);

    [[nodiscard]] const Profile& profile() const noexcept { return profile_; }
    [[nodiscard]] PrefixCache& prefix_cache() noexcept { return cache_; }
    // The admission gate sized from [capacity]; the server owns the waiting.
    [[nodiscard]] CapacityGate& gate() noexcept { return gate_; }

  private:
    Profile profile_;
    PrefixCache cache_;
    CapacityGate gate_;
    std::atomic<std::uint64_t> counter_{0};
};

}  // namespace tokenradar::sim
