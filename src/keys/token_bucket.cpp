#include <tokenradar/keys/token_bucket.hpp>

#include <algorithm>
#include <cmath>

namespace tokenradar::keys {
namespace {

constexpr double kMinuteNs = 60e9;

std::int64_t ms_until(double missing, std::int64_t per_minute) {
    if (missing <= 0 || per_minute <= 0) return 0;
    return static_cast<std::int64_t>(
        std::ceil(missing * 60'000.0 / static_cast<double>(per_minute)));
}

}  // namespace

void TokenBucket::refill(std::int64_t per_minute, std::int64_t now_ns) {
    const auto cap = static_cast<double>(per_minute);
    if (!started_) {
        level_ = cap;
        at_ns_ = now_ns;
        started_ = true;
        return;
    }
    if (now_ns > at_ns_) {
        level_ = std::min(cap, level_ + static_cast<double>(now_ns - at_ns_) * cap / kMinuteNs);
        at_ns_ = now_ns;
    }
    // A lowered limit applies at once.
    level_ = std::min(level_, cap);
}

bool TokenBucket::available(std::int64_t per_minute, std::int64_t now_ns) {
    refill(per_minute, now_ns);
    return level_ >= 1.0;
}

void TokenBucket::take(std::int64_t per_minute, std::int64_t n, std::int64_t now_ns) {
    refill(per_minute, now_ns);
    level_ -= static_cast<double>(n);
}

BucketState TokenBucket::state(std::int64_t per_minute, std::int64_t now_ns) {
    refill(per_minute, now_ns);
    BucketState s;
    s.limit = per_minute;
    s.remaining = static_cast<std::int64_t>(std::floor(level_));
    s.retry_after_ms = ms_until(1.0 - level_, per_minute);
    s.reset_ms = ms_until(static_cast<double>(per_minute) - level_, per_minute);
    return s;
}

}  // namespace tokenradar::keys
