#include <tokenradar/sim/prefix_cache.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::sim {
namespace {

// block_tokens 4 = 16 bytes per block.
std::string text(char c, std::size_t bytes) { return std::string(bytes, c); }

TEST(PrefixCache, RepeatedPrefixHitsInFullBlocks) {
    PrefixCache cache(4, 100);
    const std::string prefix = text('a', 64);  // 4 blocks
    EXPECT_EQ(cache.lookup_and_insert(prefix + "first question"), 0);
    EXPECT_EQ(cache.lookup_and_insert(prefix + "another question"), 16);
    EXPECT_EQ(cache.lookup_and_insert(prefix + text('b', 5)), 16);  // partial block not cached
    EXPECT_EQ(cache.lookup_and_insert(text('z', 20)), 0);
}

TEST(PrefixCache, ChainedHashesDependOnEveryEarlierBlock) {
    PrefixCache cache(4, 100);
    const auto a = cache.block_hashes(text('a', 16) + text('c', 16));
    const auto b = cache.block_hashes(text('b', 16) + text('c', 16));
    ASSERT_EQ(a.size(), 2u);
    EXPECT_NE(a[1], b[1]);  // same second block, different prefix
    cache.lookup_and_insert(text('a', 32));
    EXPECT_EQ(cache.lookup_and_insert(text('b', 16) + text('a', 16)), 0);
}

TEST(PrefixCache, BoundedAndEvictsLeastRecentlyUsedTailFirst) {
    PrefixCache cache(4, 3);
    cache.lookup_and_insert(text('a', 48));  // 3 blocks, full
    EXPECT_EQ(cache.size(), 3);
    cache.lookup_and_insert(text('x', 16));  // evicts the tail of the 'a' chain
    EXPECT_EQ(cache.size(), 3);
    EXPECT_EQ(cache.lookup_and_insert(text('a', 48)), 8);
    EXPECT_LE(cache.size(), 3);
}

TEST(PrefixCache, ZeroCapacityIsOff) {
    PrefixCache cache(4, 0);
    cache.lookup_and_insert(text('a', 64));
    EXPECT_EQ(cache.lookup_and_insert(text('a', 64)), 0);
    EXPECT_EQ(cache.size(), 0);
}

}  // namespace
}  // namespace tokenradar::sim
