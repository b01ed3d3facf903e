#include <tokenradar/cache/memory_tier.hpp>

#include <gtest/gtest.h>

#include <random>

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
    MemoryTier tier({64 * 1024, 1, Admission::lru});
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

// What the gateway does: a lookup, and on a miss a put of the answer it fetched.
bool request(MemoryTier& tier, int key, std::size_t text_bytes = 2'000) {
    if (tier.get(key_of(key), 1) != nullptr) return true;
    tier.put(key_of(key), answer_of(text_bytes), 1'000);
    return false;
}

TEST(MemoryTier, TinyLfuKeepsAFrequentKeyThroughAScanThatFlushesAnLru) {
    for (const Admission admission : {Admission::lru, Admission::tinylfu}) {
        MemoryTier tier({64 * 1024, 1, admission});
        for (int i = 0; i < 5; ++i) request(tier, 1);
        for (int i = 100; i < 300; ++i) request(tier, i);  // one-hit keys, ~8x the tier
        const bool kept = tier.get(key_of(1), 1) != nullptr;
        EXPECT_EQ(kept, admission == Admission::tinylfu)
            << "policy " << static_cast<int>(admission);
        EXPECT_GT(tier.stats().entries, 10U);
    }
}

TEST(MemoryTier, TinyLfuAdmitsANewcomerOnlyWhenMoreFrequentThanTheVictim) {
    MemoryTier tier({64 * 1024, 1, Admission::tinylfu});
    for (int i = 0; i < 100; ++i) request(tier, i);  // full of keys seen once
    EXPECT_GT(tier.stats().evictions, 0U);
    // Seen once each: they lose the tie with the victim (but for a doorkeeper false positive).
    int kept = 0;
    for (int i = 500; i < 520; ++i) {
        EXPECT_FALSE(request(tier, i));
        kept += tier.get(key_of(i), 1) != nullptr ? 1 : 0;
    }
    EXPECT_LE(kept, 3);
    EXPECT_GE(tier.stats().rejected, 17U);
    // Asked for a few times (each a miss that counts), it wins its place.
    for (int i = 0; i < 3; ++i) tier.get(key_of(600), 1);
    EXPECT_TRUE(tier.put(key_of(600), answer_of(2'000), 1'000));
    EXPECT_NE(tier.get(key_of(600), 1), nullptr);
}

TEST(MemoryTier, TinyLfuLetsANewcomerPastAnExpiredVictim) {
    // Keys asked for many times until time 1,000, when they expire; then answers seen once
    // arrive (stored at 2,000): an expired victim's old frequency must not turn them away.
    MemoryTier tier({64 * 1024, 1, Admission::tinylfu});
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 40; ++i) request(tier, i);
    }
    const std::uint64_t rejected_before = tier.stats().rejected;
    int kept = 0;
    for (int i = 500; i < 520; ++i) {
        tier.put(key_of(i), answer_of(2'000, 2'000), 10'000);
        kept += tier.get(key_of(i), 2'000) != nullptr ? 1 : 0;
    }
    EXPECT_EQ(kept, 20);
    EXPECT_EQ(tier.stats().rejected, rejected_before);
    EXPECT_GT(tier.stats().expired, 0U);
}

TEST(MemoryTier, TinyLfuGrowsItsWindowWhenRecencyPays) {
    // Every key asked twice, the second time 1-12 requests later: a repeat misses unless the
    // window holds it (a fixed 1% window holds none of these 2 KB answers), while an LRU of ~27
    // answers hits them all. The hill climber has to grow the window to a third of the tier.
    for (const Admission admission : {Admission::lru, Admission::tinylfu}) {
        MemoryTier tier({64 * 1024, 1, admission});
        constexpr int kKeys = 40'000;
        int repeats = 0;
        int hits = 0;
        for (int i = 0; i < kKeys; ++i) {
            request(tier, i);
            const int back = 1 + (i * 7919) % 12;
            if (i < back) continue;
            const bool hit = request(tier, i - back);
            if (i < kKeys / 2) continue;  // the climber's time to find its size
            ++repeats;
            hits += hit ? 1 : 0;
        }
        EXPECT_GT(hits, repeats * 7 / 10) << "policy " << static_cast<int>(admission);
    }
}

TEST(MemoryTier, NeverHoldsMoreThanItsBytes) {
    for (const Admission admission : {Admission::lru, Admission::tinylfu}) {
        MemoryTier tier({256 * 1024, 4, admission});
        std::mt19937 rng{7};
        std::uniform_int_distribution<int> key{0, 300};
        std::uniform_int_distribution<std::size_t> size{100, 7'000};
        std::uniform_int_distribution<int> op{0, 9};
        for (int i = 0; i < 20'000; ++i) {
            const int k = key(rng);
            const int o = op(rng);
            if (o < 6) {
                request(tier, k, size(rng));
            } else if (o < 9) {
                tier.put(key_of(k), answer_of(size(rng)), 1'000);  // replaces, often larger
            } else {
                tier.erase(key_of(k));
            }
            ASSERT_LE(tier.stats().bytes, tier.max_bytes()) << "op " << i;
        }
        EXPECT_GT(tier.stats().evictions, 0U);
    }
}

}  // namespace
}  // namespace tokenradar::cache
