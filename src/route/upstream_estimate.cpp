#include <tokenradar/route/upstream_estimate.hpp>

#include <algorithm>
#include <cmath>

namespace tokenradar::route {
namespace {

constexpr double kErrorWeight = 0.1;  // per attempt, for error_rate
constexpr double kTpotWeight = 0.2;   // per finished stream

double normalised(std::int64_t ttft_ns, std::int64_t prompt_tokens, std::int64_t unit) {
    const double scale = 1.0 + static_cast<double>(std::max<std::int64_t>(prompt_tokens, 0)) /
                                   static_cast<double>(unit);
    return static_cast<double>(ttft_ns) / scale;
}

}  // namespace

std::string_view to_string(BreakerState state) noexcept {
    switch (state) {
        case BreakerState::closed:
            return "closed";
        case BreakerState::open:
            return "open";
        case BreakerState::half_open:
            return "half_open";
    }
    return "closed";
}

UpstreamEstimate::UpstreamEstimate(EstimatePolicy policy, UpstreamLimits limits)
    : policy_(policy), limits_(limits), cooldown_ns_(policy.breaker_cooldown_ns) {}

double UpstreamEstimate::decayed_locked(std::int64_t now_ns) const {
    const auto idle = static_cast<double>(std::max<std::int64_t>(now_ns - ewma_at_ns_, 0));
    return ewma_ns_ * std::exp(-idle / static_cast<double>(policy_.decay_ns));
}

void UpstreamEstimate::observe_locked(std::int64_t now_ns, double normalised_ns) {
    // decayed = ewma * keep, with keep = exp(-dt / decay) since the last observation.
    const double decayed = decayed_locked(now_ns);
    if (!measured_ || normalised_ns > decayed) {
        ewma_ns_ = normalised_ns;  // the peak: a slowdown counts at once
    } else {
        const double keep = ewma_ns_ > 0 ? decayed / ewma_ns_ : 0.0;
        ewma_ns_ = decayed + normalised_ns * (1.0 - keep);
    }
    ewma_at_ns_ = now_ns;
    measured_ = true;
}

bool UpstreamEstimate::breaker_allows_locked(std::int64_t now_ns) const {
    switch (breaker_) {
        case BreakerState::closed:
            return true;
        case BreakerState::open:
            return now_ns >= open_until_ns_;  // this request becomes the probe
        case BreakerState::half_open:
            return !probe_in_flight_;
    }
    return true;
}

bool UpstreamEstimate::available(std::int64_t now_ns) const {
    const std::lock_guard lock(mutex_);
    if (!breaker_allows_locked(now_ns)) return false;
    if (limits_.max_in_flight > 0 && in_flight_ >= limits_.max_in_flight) return false;
    return limits_.max_tokens_per_minute <= 0 ||
           tokens_.sum(now_ns) < limits_.max_tokens_per_minute;
}

double UpstreamEstimate::cost(std::int64_t now_ns, double unmeasured_ns) const {
    const std::lock_guard lock(mutex_);
    const double latency = measured_ ? decayed_locked(now_ns) : unmeasured_ns;
    return latency * static_cast<double>(in_flight_ + 1) / limits_.weight;
}

double UpstreamEstimate::estimate_ns(std::int64_t now_ns) const {
    const std::lock_guard lock(mutex_);
    return measured_ ? decayed_locked(now_ns) : 0.0;
}

std::int64_t UpstreamEstimate::in_flight() const {
    const std::lock_guard lock(mutex_);
    return in_flight_;
}

bool UpstreamEstimate::measured() const {
    const std::lock_guard lock(mutex_);
    return measured_;
}

std::int64_t UpstreamEstimate::ttft_quantile_ns(double q, std::int64_t prompt_tokens,
                                                int min_samples) const {
    const std::lock_guard lock(mutex_);
    if (sample_count_ < static_cast<std::size_t>(std::max(min_samples, 1))) return 0;
    // Recomputed every 16 samples: an nth_element over 128 floats costs ~1 us, too much for
    // every request.
    if (quantile_at_count_ == 0 || q != quantile_q_ || sample_count_ - quantile_at_count_ >= 16) {
        const std::size_t n = std::min(sample_count_, kSamples);
        std::array<float, kSamples> copy{};
        std::copy_n(samples_.begin(), n, copy.begin());
        const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
        const std::size_t k = std::clamp<std::size_t>(rank, 1, n) - 1;  // nearest rank
        std::nth_element(copy.begin(), copy.begin() + static_cast<std::ptrdiff_t>(k),
                         copy.begin() + static_cast<std::ptrdiff_t>(n));
        quantile_ms_ = copy[k];
        quantile_q_ = q;
        quantile_at_count_ = sample_count_;
    }
    const double scale = 1.0 + static_cast<double>(std::max<std::int64_t>(prompt_tokens, 0)) /
                                   static_cast<double>(policy_.prompt_unit_tokens);
    return static_cast<std::int64_t>(static_cast<double>(quantile_ms_) * 1e6 * scale);
}

void UpstreamEstimate::started(std::int64_t now_ns) {
    const std::lock_guard lock(mutex_);
    ++in_flight_;
    ++attempts_;
    if (breaker_ == BreakerState::open && now_ns >= open_until_ns_) {
        breaker_ = BreakerState::half_open;
    }
    if (breaker_ == BreakerState::half_open) probe_in_flight_ = true;
}

void UpstreamEstimate::first_token(std::int64_t now_ns, std::int64_t ttft_ns,
                                   std::int64_t prompt_tokens) {
    const std::lock_guard lock(mutex_);
    const double value = normalised(ttft_ns, prompt_tokens, policy_.prompt_unit_tokens);
    observe_locked(now_ns, value);
    samples_[sample_count_ % kSamples] = static_cast<float>(value / 1e6);
    ++sample_count_;
    succeeded_locked();
}

void UpstreamEstimate::answered(std::int64_t /*now_ns*/) {
    const std::lock_guard lock(mutex_);
    succeeded_locked();
}

void UpstreamEstimate::succeeded_locked() {
    error_rate_ *= 1.0 - kErrorWeight;
    consecutive_failures_ = 0;
    breaker_ = BreakerState::closed;
    probe_in_flight_ = false;
    cooldown_ns_ = policy_.breaker_cooldown_ns;
}

void UpstreamEstimate::finished(std::int64_t now_ns, std::int64_t tokens, double tpot_ns) {
    const std::lock_guard lock(mutex_);
    in_flight_ = std::max<std::int64_t>(in_flight_ - 1, 0);
    tokens_.add(now_ns, tokens);
    if (tpot_ns > 0) {
        tpot_ns_ = tpot_ns_ == 0 ? tpot_ns : tpot_ns_ * (1 - kTpotWeight) + tpot_ns * kTpotWeight;
    }
}

void UpstreamEstimate::failed(std::int64_t now_ns, std::int64_t elapsed_ns) {
    const std::lock_guard lock(mutex_);
    in_flight_ = std::max<std::int64_t>(in_flight_ - 1, 0);
    ++failures_;
    error_rate_ = error_rate_ * (1.0 - kErrorWeight) + kErrorWeight;
    const double current = measured_ ? decayed_locked(now_ns) : 0.0;
    // At least the penalty and twice the estimate, but bounded: a long run of fast failures
    // (a provider-wide 429 burst) must not double it to infinity.
    constexpr double kMaxPenaltyNs = 60e9;
    observe_locked(now_ns, std::min(kMaxPenaltyNs,
                                    std::max({static_cast<double>(elapsed_ns), 2.0 * current,
                                              static_cast<double>(policy_.failure_penalty_ns)})));
    probe_in_flight_ = false;
    if (breaker_ == BreakerState::half_open) {
        cooldown_ns_ = std::min(cooldown_ns_ * 2, policy_.breaker_max_cooldown_ns);
        breaker_ = BreakerState::open;
        open_until_ns_ = now_ns + cooldown_ns_;
        ++breaker_opens_;
    } else if (breaker_ == BreakerState::closed &&
               ++consecutive_failures_ >= policy_.breaker_failures) {
        breaker_ = BreakerState::open;
        open_until_ns_ = now_ns + cooldown_ns_;
        ++breaker_opens_;
    }
}

void UpstreamEstimate::abandoned() {
    const std::lock_guard lock(mutex_);
    in_flight_ = std::max<std::int64_t>(in_flight_ - 1, 0);
    probe_in_flight_ = false;  // another request may probe
}

void UpstreamEstimate::hedge_sent() {
    const std::lock_guard lock(mutex_);
    ++hedges_sent_;
}

void UpstreamEstimate::hedge_won() {
    const std::lock_guard lock(mutex_);
    ++hedges_won_;
}

void UpstreamEstimate::hedge_lost() {
    const std::lock_guard lock(mutex_);
    ++hedges_lost_;
}

UpstreamSnapshot UpstreamEstimate::snapshot(std::int64_t now_ns) const {
    UpstreamSnapshot s;
    {
        const std::lock_guard lock(mutex_);
        s.measured = measured_;
        s.ttft_ms = measured_ ? decayed_locked(now_ns) / 1e6 : 0.0;
        s.tpot_ms = tpot_ns_ / 1e6;
        s.in_flight = in_flight_;
        s.error_rate = error_rate_;
        s.breaker = breaker_ == BreakerState::open && now_ns >= open_until_ns_
                        ? BreakerState::half_open
                        : breaker_;
        s.tokens_last_minute = tokens_.sum(now_ns);
        s.attempts = attempts_;
        s.failures = failures_;
        s.breaker_opens = breaker_opens_;
        s.hedges_sent = hedges_sent_;
        s.hedges_won = hedges_won_;
        s.hedges_lost = hedges_lost_;
    }
    s.ttft_p95_ms = static_cast<double>(ttft_quantile_ns(0.95, 0, 1)) / 1e6;
    return s;
}

}  // namespace tokenradar::route
