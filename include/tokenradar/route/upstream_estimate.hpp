#pragma once
// The live estimate of one upstream (a provider endpoint and a model): what latency-aware
// routing, hedging and the breaker decide from, and what GET /api/v1/upstreams shows.
// Sans-IO: every time is a steady-clock nanosecond count passed in. Thread-safe (one mutex,
// held for a few dozen instructions); never suspends.
//
// Latency is a peak-EWMA (Finagle, Linkerd): a slower observation is taken at once, a faster
// one is averaged in with weight 1 - exp(-dt / decay), and the estimate decays towards zero
// while nothing is observed, so an upstream that was slow is tried again after a while and
// either proves it recovered or jumps back up. TTFT is normalised by the prompt's size
// (divided by 1 + prompt_tokens / prompt_unit_tokens) so a long prompt's prefill does not
// count against the upstream that happened to get it.

#include <tokenradar/route/minute_window.hpp>

#include <array>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace tokenradar::route {

enum class BreakerState : std::uint8_t { closed, open, half_open };
[[nodiscard]] std::string_view to_string(BreakerState state) noexcept;

struct EstimatePolicy {
    std::int64_t decay_ns = 10'000'000'000;  // the peak-EWMA's time constant
    std::int64_t prompt_unit_tokens = 1024;  // TTFT is per (1 + prompt_tokens / this)
    // A failure is observed as a TTFT of at least this (and at least twice the estimate), so
    // errors and 429s raise the cost as a slow answer would.
    std::int64_t failure_penalty_ns = 1'000'000'000;
    int breaker_failures = 5;                               // consecutive failures that open it
    std::int64_t breaker_cooldown_ns = 5'000'000'000;       // the first open period
    std::int64_t breaker_max_cooldown_ns = 60'000'000'000;  // doubling stops here
};

// From the config: a share of traffic and caps. 0 = no cap.
struct UpstreamLimits {
    double weight = 1.0;
    std::int64_t max_in_flight = 0;
    std::int64_t max_tokens_per_minute = 0;  // prompt + output tokens, over the last minute
};

struct UpstreamSnapshot {
    bool measured = false;   // at least one TTFT observed
    double ttft_ms = 0;      // the peak-EWMA, normalised (a prompt of under one unit)
    double ttft_p95_ms = 0;  // of the recent normalised samples (the hedge delay's base)
    double tpot_ms = 0;      // EWMA of time per output token
    std::int64_t in_flight = 0;
    double error_rate = 0;  // EWMA of failures per attempt
    BreakerState breaker = BreakerState::closed;
    std::int64_t tokens_last_minute = 0;
    std::uint64_t attempts = 0;  // started
    std::uint64_t failures = 0;
    std::uint64_t breaker_opens = 0;
    std::uint64_t hedges_sent = 0;  // hedges this upstream was asked for
    std::uint64_t hedges_won = 0;   // ... that produced the first token
    std::uint64_t hedges_lost = 0;  // ... cancelled because another attempt won
};

class UpstreamEstimate {
  public:
    UpstreamEstimate(EstimatePolicy policy, UpstreamLimits limits);

    // Whether a request may go here now: the breaker is closed (or open past its cooldown,
    // when this request becomes the half-open probe: call started() right after), and the
    // caps leave room.
    [[nodiscard]] bool available(std::int64_t now_ns) const;
    // The cost of one more request now: the decayed, normalised TTFT estimate (`unmeasured_ns`
    // until there is one) times (in flight + 1), divided by the weight. Lower is better.
    [[nodiscard]] double cost(std::int64_t now_ns, double unmeasured_ns) const;
    // The TTFT this upstream gives a prompt of `prompt_tokens` at quantile `q` (0.5-0.99) of
    // its last 128 normalised samples; 0 until `min_samples` were observed.
    [[nodiscard]] std::int64_t ttft_quantile_ns(double q, std::int64_t prompt_tokens,
                                                int min_samples) const;
    [[nodiscard]] bool measured() const;
    [[nodiscard]] std::int64_t in_flight() const;
    [[nodiscard]] double estimate_ns(std::int64_t now_ns) const;  // decayed, normalised TTFT

    // An attempt's life: started, then exactly one of first_token + finished, failed or
    // abandoned (cancelled by the gateway: a hedge's loser, a client that left).
    void started(std::int64_t now_ns);
    void first_token(std::int64_t now_ns, std::int64_t ttft_ns, std::int64_t prompt_tokens);
    // A success without a first token (a whole answer): the breaker closes, nothing is
    // observed of its latency.
    void answered(std::int64_t now_ns);
    void finished(std::int64_t now_ns, std::int64_t tokens, double tpot_ns);
    void failed(std::int64_t now_ns, std::int64_t elapsed_ns);
    void abandoned();

    void hedge_sent();
    void hedge_won();
    void hedge_lost();

    [[nodiscard]] UpstreamSnapshot snapshot(std::int64_t now_ns) const;
    [[nodiscard]] const UpstreamLimits& limits() const noexcept { return limits_; }

  private:
    static constexpr std::size_t kSamples = 128;  // recent TTFTs for the p95

    void observe_locked(std::int64_t now_ns, double normalised_ns);
    void succeeded_locked();  // a first token or a whole answer: errors and breaker reset
    double decayed_locked(std::int64_t now_ns) const;
    bool breaker_allows_locked(std::int64_t now_ns) const;

    const EstimatePolicy policy_;
    const UpstreamLimits limits_;
    mutable std::mutex mutex_;
    double ewma_ns_ = 0;
    std::int64_t ewma_at_ns_ = 0;
    bool measured_ = false;
    double tpot_ns_ = 0;
    double error_rate_ = 0;
    std::int64_t in_flight_ = 0;
    std::array<float, kSamples> samples_{};  // normalised TTFT, ms
    std::size_t sample_count_ = 0;
    // The last quantile computed, reused for 16 samples.
    mutable double quantile_q_ = 0;
    mutable float quantile_ms_ = 0;
    mutable std::size_t quantile_at_count_ = 0;
    MinuteWindow tokens_;  // prompt + output tokens of finished attempts
    int consecutive_failures_ = 0;
    BreakerState breaker_ = BreakerState::closed;
    std::int64_t open_until_ns_ = 0;
    std::int64_t cooldown_ns_ = 0;
    bool probe_in_flight_ = false;
    std::uint64_t attempts_ = 0;
    std::uint64_t failures_ = 0;
    std::uint64_t breaker_opens_ = 0;
    std::uint64_t hedges_sent_ = 0;
    std::uint64_t hedges_won_ = 0;
    std::uint64_t hedges_lost_ = 0;
};

}  // namespace tokenradar::route
