#include <tokenradar/keys/token_bucket.hpp>

#include <gtest/gtest.h>

namespace tokenradar::keys {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

TEST(TokenBucket, StartsFullAndRefillsPerMinute) {
    TokenBucket b;
    const std::int64_t t0 = 5 * kSecond;
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(b.available(6, t0)) << i;
        b.take(6, 1, t0);
    }
    EXPECT_FALSE(b.available(6, t0));
    const BucketState s = b.state(6, t0);
    EXPECT_EQ(s.limit, 6);
    EXPECT_EQ(s.remaining, 0);
    EXPECT_EQ(s.retry_after_ms, 10'000);  // 6 per minute: one every 10 s
    EXPECT_EQ(s.reset_ms, 60'000);
    EXPECT_FALSE(b.available(6, t0 + 9 * kSecond));
    EXPECT_TRUE(b.available(6, t0 + 10 * kSecond));
    // Never over the limit, however long it waits.
    EXPECT_EQ(b.state(6, t0 + 3600 * kSecond).remaining, 6);
}

TEST(TokenBucket, TokensGoIntoDebtAndWaitItOut) {
    TokenBucket b;
    ASSERT_TRUE(b.available(1000, 0));
    b.take(1000, 2500, 0);  // a long answer, known after the fact
    EXPECT_FALSE(b.available(1000, 0));
    EXPECT_EQ(b.state(1000, 0).remaining, -1500);
    EXPECT_EQ(b.state(1000, 0).retry_after_ms, 90'060);  // 1501 tokens at 1000/min
    EXPECT_FALSE(b.available(1000, 90 * kSecond));
    EXPECT_TRUE(b.available(1000, 91 * kSecond));
}

TEST(TokenBucket, ALoweredLimitAppliesAtOnce) {
    TokenBucket b;
    ASSERT_TRUE(b.available(100, 0));
    EXPECT_EQ(b.state(10, 0).remaining, 10);
}

}  // namespace
}  // namespace tokenradar::keys
