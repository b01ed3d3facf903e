#pragma once
// A token bucket of `per_minute` that refills continuously (per_minute / 60 per second) up
// to per_minute, full at first: a key's requests or tokens per minute on one node, and the
// arithmetic the Redis script (the gateway's shared buckets) does on the server. Sans-IO and
// not thread-safe: the gateway holds a key's buckets under the key's mutex.
//
// Requests are taken when admitted. Tokens are known only once the answer is complete, so
// the tokens bucket is debited after the fact and may go below zero (a stream that ends over
// the limit is never cut); while it is below one token, the key's next requests wait.

#include <cstdint>

namespace tokenradar::keys {

struct BucketState {
    std::int64_t limit = 0;           // per minute
    std::int64_t remaining = 0;       // whole units now (may be negative: tokens in debt)
    std::int64_t retry_after_ms = 0;  // until one unit is there again (0 when there is)
    std::int64_t reset_ms = 0;        // until the bucket is full again
};

class TokenBucket {
  public:
    // Whether one unit is there now, without taking it.
    [[nodiscard]] bool available(std::int64_t per_minute, std::int64_t now_ns);
    // Takes `n` units (may go negative).
    void take(std::int64_t per_minute, std::int64_t n, std::int64_t now_ns);
    [[nodiscard]] BucketState state(std::int64_t per_minute, std::int64_t now_ns);

  private:
    void refill(std::int64_t per_minute, std::int64_t now_ns);

    double level_ = 0;
    std::int64_t at_ns_ = 0;
    bool started_ = false;
};

}  // namespace tokenradar::keys
