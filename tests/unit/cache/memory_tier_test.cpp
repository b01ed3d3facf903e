#include <tokenradar/cache/memory_tier.hpp>

#include <gtest/gtest.h>

namespace tokenradar::cache {
namespace {

AnswerPtr answer_of(std::size_t text_bytes, std::int64_t stored_at_us = 0) {
    auto a = std::make_shared<CachedAnswer>();
    a->text.assign(text_bytes, 'x');
    a->pieces.push_back({1, 0, static_cast<std::uint32_t>(text_bytes), 0, AnswerPiece::Kind::text});
    a->stored_at_us = stored_at_us;
    return a;
}

std::string key_of(int i) {
    std::string k(32, '\0');
    for (int b = 0; b < 4; ++b) k[b] = static_cast<char>((i >> (8 * b)) & 0xff);
    return k;
}

TEST(MemoryTier, GetsWhatWasPutUntilItExpires) {
    MemoryTier tier({1 << 20, 1});
    ASSERT_TRUE(tier.put(key_of(1), answer_of(100), 1'000));
    EXPECT_NE(tier.get(key_of(1), 999), nullptr);
    EXPECT_EQ(tier.get(key_of(2), 999), nullptr);
    EXPECT_EQ(tier.get(key_of(1), 1'000), nullptr) << "expired";
    EXPECT_EQ(tier.stats().entries, 0U);
    EXPECT_EQ(tier.stats().expired, 1U);
}

TEST(MemoryTier, MaxAgeRefusesOlderEntriesWithoutDroppingThem) {
    MemoryTier tier({1 << 20, 1});
    tier.put(key_of(1), answer_of(10, 1'000), 1'000'000);
    EXPECT_EQ(tier.get(key_of(1), 61'000, 50'000), nullptr);
    EXPECT_NE(tier.get(key_of(1), 61'000, 60'000), nullptr);
    EXPECT_NE(tier.get(key_of(1), 61'000), nullptr);
}

TEST(MemoryTier, StaysWithinItsBytesEvictingTheLeastRecentlyUsed) {
    MemoryTier tier({64 * 1024, 1});
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(tier.put(key_of(i), answer_of(2'000), 1'000));
    EXPECT_LE(tier.stats().bytes, 64U * 1024);
    EXPECT_GT(tier.stats().evictions, 0U);
    EXPECT_EQ(tier.get(key_of(0), 1), nullptr) << "the oldest went first";
    EXPECT_NE(tier.get(key_of(99), 1), nullptr);
    // A recently read entry survives the next puts.
    const int kept = 100 - static_cast<int>(tier.stats().entries);
    ASSERT_NE(tier.get(key_of(kept), 1), nullptr);
    tier.put(key_of(1000), answer_of(2'000), 1'000);
    tier.put(key_of(1001), answer_of(2'000), 1'000);
    EXPECT_NE(tier.get(key_of(kept), 1), nullptr);
    EXPECT_EQ(tier.get(key_of(kept + 1), 1), nullptr);
}

TEST(MemoryTier, RefusesAnEntryTooLargeForItsShard) {
    MemoryTier tier({64 * 1024, 1});
    EXPECT_FALSE(tier.put(key_of(1), answer_of(10'000), 1'000));
    EXPECT_EQ(tier.stats().entries, 0U);
}

TEST(MemoryTier, ReplacingAnEntryKeepsTheAccountsRight) {
    MemoryTier tier({1 << 20, 4});
    tier.put(key_of(1), answer_of(100), 1'000);
    const std::size_t bytes = tier.stats().bytes;
    tier.put(key_of(1), answer_of(100), 2'000);
    EXPECT_EQ(tier.stats().bytes, bytes);
    EXPECT_EQ(tier.stats().entries, 1U);
    tier.erase(key_of(1));
    EXPECT_EQ(tier.stats().bytes, 0U);
}

}  // namespace
}  // namespace tokenradar::cache
