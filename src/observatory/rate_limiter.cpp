#include <tokenradar/observatory/rate_limiter.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace tokenradar::observatory {

struct RateLimiter::State {
    struct Bucket {
        std::string key;
        double tokens = 0;
        Clock::time_point last;
    };

    RateLimiterOptions options;
    mutable std::mutex mutex;
    std::list<Bucket> by_use;  // front: used last; back: idle longest
    // Keys view the strings inside `by_use`, whose nodes never move.
    std::unordered_map<std::string_view, std::list<Bucket>::iterator> index;

    double refilled(const Bucket& b, Clock::time_point now) const {
        const double idle = std::chrono::duration<double>(now - b.last).count();
        if (idle <= 0) return b.tokens;
        return std::min(options.burst, b.tokens + idle * options.rate);
    }

    void drop_back() {
        index.erase(by_use.back().key);
        by_use.pop_back();
    }

    // Full buckets from the idle end (a full bucket equals none), then the longest idle one
    // if the map is still at its bound.
    void make_room(Clock::time_point now) {
        while (!by_use.empty() && refilled(by_use.back(), now) >= options.burst) drop_back();
        if (by_use.size() >= options.max_keys) drop_back();
    }
};

RateLimiter::RateLimiter(RateLimiterOptions options) : state_(std::make_unique<State>()) {
    if (!(options.rate > 0) || !std::isfinite(options.rate)) {
        throw std::invalid_argument("rate limiter: rate must be a positive number per second");
    }
    if (!(options.burst >= 1) || !std::isfinite(options.burst)) {
        throw std::invalid_argument("rate limiter: burst must be at least 1");
    }
    if (options.max_keys == 0) throw std::invalid_argument("rate limiter: max_keys must be > 0");
    state_->options = options;
    state_->index.reserve(std::min<std::size_t>(options.max_keys, 1024));
}

RateLimiter::~RateLimiter() = default;

RateDecision RateLimiter::try_acquire(std::string_view key, Clock::time_point now, double cost) {
    State& s = *state_;
    cost = std::clamp(cost, 0.0, s.options.burst);
    std::lock_guard lock(s.mutex);
    auto found = s.index.find(key);
    State::Bucket* bucket = nullptr;
    if (found != s.index.end()) {
        bucket = &*found->second;
        bucket->tokens = s.refilled(*bucket, now);
        bucket->last = std::max(bucket->last, now);
        s.by_use.splice(s.by_use.begin(), s.by_use, found->second);
    } else {
        s.make_room(now);
        s.by_use.push_front({std::string(key), s.options.burst, now});
        bucket = &s.by_use.front();
        s.index.emplace(bucket->key, s.by_use.begin());
    }
    if (bucket->tokens >= cost) {
        bucket->tokens -= cost;
        return {true, std::chrono::seconds(0)};
    }
    const double wait = std::min(1e9, std::ceil((cost - bucket->tokens) / s.options.rate));
    return {false,
            std::chrono::seconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(wait)))};
}

std::size_t RateLimiter::size() const {
    std::lock_guard lock(state_->mutex);
    return state_->by_use.size();
}

}  // namespace tokenradar::observatory
