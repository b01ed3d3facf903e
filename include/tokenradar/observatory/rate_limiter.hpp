#pragma once
// Token buckets per key (a client IP in the observatory's public ingestion mode): each key
// may spend `rate` tokens per second on average and `burst` at once. Denied calls say when
// to come back (an HTTP 429's retry-after).
//
//     RateLimiter limiter({.rate = 2.0, .burst = 20.0, .max_keys = 100'000});
//     auto d = limiter.try_acquire(ip, std::chrono::steady_clock::now());
//     if (!d.allowed) -> 429 with retry-after: d.retry_after.count()
//
// Memory is bounded: at most max_keys buckets. A bucket that has refilled to `burst` is the
// same as no bucket, so full buckets are dropped first (from the longest idle, on every new
// key, stopping at the first one still refilling); when max_keys buckets are still held,
// the longest idle one is dropped even if not full (its key starts again with a full
// bucket: under a flood of new keys the limit leaks for the oldest keys rather than memory
// growing).
//
// Threads: every member function may be called from any thread (one mutex; a call does a
// hash lookup and a list splice, never blocks on anything else). Time is passed in (steady
// clock) so tests are exact.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

namespace tokenradar::observatory {

struct RateLimiterOptions {
    double rate = 1.0;    // tokens added per second, > 0
    double burst = 10.0;  // bucket size, >= 1; a new key starts with a full bucket
    std::size_t max_keys = 100'000;
};

struct RateDecision {
    bool allowed = false;
    // When denied: seconds until the bucket holds the cost, rounded up, at least 1. 0 when
    // allowed.
    std::chrono::seconds retry_after{0};
};

class RateLimiter {
  public:
    using Clock = std::chrono::steady_clock;

    // Throws std::invalid_argument when rate <= 0, burst < 1 or max_keys == 0 (configuration).
    explicit RateLimiter(RateLimiterOptions options);
    ~RateLimiter();
    RateLimiter(const RateLimiter&) = delete;
    RateLimiter& operator=(const RateLimiter&) = delete;

    // Takes `cost` tokens from key's bucket when it holds them; a denied call takes nothing.
    // A cost above burst is charged as burst (it waits for a full bucket instead of never
    // passing). A `now` earlier than the key's last call counts as no time passed.
    RateDecision try_acquire(std::string_view key, Clock::time_point now, double cost = 1.0);

    // Buckets held (at most max_keys).
    [[nodiscard]] std::size_t size() const;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace tokenradar::observatory
