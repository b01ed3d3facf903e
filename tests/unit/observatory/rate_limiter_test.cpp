#include <tokenradar/observatory/rate_limiter.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::observatory {
namespace {

using namespace std::chrono_literals;
using Clock = RateLimiter::Clock;

const Clock::time_point kT0 = Clock::time_point(1000s);

TEST(RateLimiter, ANewKeyMaySpendItsBurstThenWaits) {
    RateLimiter limiter({.rate = 2.0, .burst = 5.0});
    for (int i = 0; i < 5; ++i) {
        const RateDecision d = limiter.try_acquire("10.0.0.1", kT0);
        EXPECT_TRUE(d.allowed) << i;
        EXPECT_EQ(d.retry_after, 0s);
    }
    const RateDecision denied = limiter.try_acquire("10.0.0.1", kT0);
    EXPECT_FALSE(denied.allowed);
    EXPECT_EQ(denied.retry_after, 1s);  // 1 token at 2/s = 0.5 s, rounded up
    // Another key has its own bucket.
    EXPECT_TRUE(limiter.try_acquire("10.0.0.2", kT0).allowed);
}

TEST(RateLimiter, RefillsAtTheRateUpToTheBurst) {
    RateLimiter limiter({.rate = 2.0, .burst = 4.0});
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(limiter.try_acquire("k", kT0).allowed);
    EXPECT_FALSE(limiter.try_acquire("k", kT0 + 499ms).allowed);  // 0.998 tokens
    EXPECT_TRUE(limiter.try_acquire("k", kT0 + 500ms).allowed);   // 1 token
    EXPECT_FALSE(limiter.try_acquire("k", kT0 + 500ms).allowed);
    // A long idle refills to the burst, not beyond.
    const auto later = kT0 + 1h;
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(limiter.try_acquire("k", later).allowed) << i;
    EXPECT_FALSE(limiter.try_acquire("k", later).allowed);
}

TEST(RateLimiter, RetryAfterIsTheWaitForTheCostRoundedUp) {
    RateLimiter limiter({.rate = 0.5, .burst = 10.0});
    ASSERT_TRUE(limiter.try_acquire("k", kT0, 10.0).allowed);
    EXPECT_EQ(limiter.try_acquire("k", kT0, 1.0).retry_after, 2s);  // 1 / 0.5
    EXPECT_EQ(limiter.try_acquire("k", kT0, 3.0).retry_after, 6s);
    EXPECT_EQ(limiter.try_acquire("k", kT0 + 1s, 3.0).retry_after, 5s);  // 2.5 missing -> 5 s
    EXPECT_EQ(limiter.try_acquire("k", kT0 + 5999ms, 3.0).retry_after, 1s);
    EXPECT_TRUE(limiter.try_acquire("k", kT0 + 6s, 3.0).allowed);
    // A denied call takes nothing: the bucket is empty now, and still refills as before.
    EXPECT_EQ(limiter.try_acquire("k", kT0 + 6s, 1.0).retry_after, 2s);
    EXPECT_TRUE(limiter.try_acquire("k", kT0 + 8s, 1.0).allowed);
}

TEST(RateLimiter, ACostAboveTheBurstWaitsForAFullBucket) {
    RateLimiter limiter({.rate = 1.0, .burst = 3.0});
    EXPECT_TRUE(limiter.try_acquire("k", kT0, 100.0).allowed);  // charged as 3
    const RateDecision d = limiter.try_acquire("k", kT0, 100.0);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.retry_after, 3s);
    EXPECT_TRUE(limiter.try_acquire("k", kT0 + 3s, 100.0).allowed);
}

TEST(RateLimiter, TimeGoingBackwardsAddsNothing) {
    RateLimiter limiter({.rate = 1.0, .burst = 1.0});
    ASSERT_TRUE(limiter.try_acquire("k", kT0).allowed);
    EXPECT_FALSE(limiter.try_acquire("k", kT0 - 10s).allowed);
    EXPECT_TRUE(limiter.try_acquire("k", kT0 + 1s).allowed);
}

TEST(RateLimiter, KeysAreBoundedDroppingFullBucketsFirst) {
    RateLimiter limiter({.rate = 1.0, .burst = 2.0, .max_keys = 3});
    ASSERT_TRUE(limiter.try_acquire("a", kT0, 2.0).allowed);  // empty after this
    ASSERT_TRUE(limiter.try_acquire("b", kT0, 2.0).allowed);
    ASSERT_TRUE(limiter.try_acquire("c", kT0, 2.0).allowed);
    EXPECT_EQ(limiter.size(), 3u);
    // None is full yet: the longest idle ("a") goes, so "a" gets a fresh bucket later.
    ASSERT_TRUE(limiter.try_acquire("d", kT0, 2.0).allowed);
    EXPECT_EQ(limiter.size(), 3u);
    EXPECT_FALSE(limiter.try_acquire("b", kT0).allowed);  // b is remembered (and now used last)
    EXPECT_FALSE(limiter.try_acquire("c", kT0).allowed);
    EXPECT_FALSE(limiter.try_acquire("d", kT0).allowed);
    // Two seconds later every bucket is full again: a new key drops all of them.
    ASSERT_TRUE(limiter.try_acquire("e", kT0 + 2s).allowed);
    EXPECT_EQ(limiter.size(), 1u);
    // Many keys never hold more than max_keys buckets.
    for (int i = 0; i < 1000; ++i) limiter.try_acquire("ip" + std::to_string(i), kT0 + 2s, 1.0);
    EXPECT_EQ(limiter.size(), 3u);
}

TEST(RateLimiter, AtTheBoundTheLongestIdleGoesEvenIfNotFull) {
    RateLimiter limiter({.rate = 1.0, .burst = 2.0, .max_keys = 2});
    ASSERT_TRUE(limiter.try_acquire("busy", kT0, 2.0).allowed);
    ASSERT_TRUE(limiter.try_acquire("idle", kT0, 1.0).allowed);
    // At +1 s "busy" holds 1 token (not full), "idle" holds 2 (full) but was used later:
    // the longest idle is "busy", and it is not full, so it is the one evicted at the bound.
    ASSERT_TRUE(limiter.try_acquire("new", kT0 + 1s).allowed);
    EXPECT_EQ(limiter.size(), 2u);
    // "idle" (kept) still has its own bucket: full 2 tokens after refilling.
    EXPECT_TRUE(limiter.try_acquire("idle", kT0 + 1s, 2.0).allowed);
    EXPECT_FALSE(limiter.try_acquire("idle", kT0 + 1s).allowed);
}

TEST(RateLimiter, RefusesABadConfiguration) {
    EXPECT_THROW(RateLimiter({.rate = 0.0}), std::invalid_argument);
    EXPECT_THROW(RateLimiter({.rate = 1.0, .burst = 0.5}), std::invalid_argument);
    EXPECT_THROW(RateLimiter({.rate = 1.0, .burst = 1.0, .max_keys = 0}), std::invalid_argument);
}

TEST(RateLimiter, ConcurrentCallersShareOneBucketExactly) {
    RateLimiter limiter({.rate = 1.0, .burst = 1000.0});
    std::atomic<int> allowed{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 500; ++i) {
                if (limiter.try_acquire("shared", kT0).allowed) ++allowed;
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(allowed.load(), 1000);
}

}  // namespace
}  // namespace tokenradar::observatory
