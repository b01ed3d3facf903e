#include <tokenradar/cache/frequency_sketch.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace tokenradar::cache {
namespace {

// Well-spread hashes for distinct keys, as XXH3 would give.
std::uint64_t hash_of(std::uint64_t i) {
    std::uint64_t z = i + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

TEST(FrequencySketch, CountsAccessesUpToASaturation) {
    FrequencySketch sketch{4096};
    EXPECT_EQ(sketch.estimate(hash_of(1)), 0U);
    for (int i = 0; i < 5; ++i) sketch.record(hash_of(1));
    EXPECT_EQ(sketch.estimate(hash_of(1)), 5U);
    EXPECT_EQ(sketch.estimate(hash_of(2)), 0U);
    for (int i = 0; i < 40; ++i) sketch.record(hash_of(3));
    EXPECT_EQ(sketch.estimate(hash_of(3)), FrequencySketch::kMaxCount + 1);
}

TEST(FrequencySketch, TheDoorkeeperKeepsOneHitKeysOutOfTheCounters) {
    FrequencySketch sketch{4096};
    for (std::uint64_t i = 0; i < 1000; ++i) sketch.record(hash_of(i));
    int ones = 0;
    for (std::uint64_t i = 0; i < 1000; ++i) ones += sketch.estimate(hash_of(i)) == 1 ? 1 : 0;
    EXPECT_GE(ones, 990) << "a first access only sets doorkeeper bits";
}

TEST(FrequencySketch, AgesByHalvingAfterTenTimesItsCapacity) {
    FrequencySketch sketch{4096};
    ASSERT_EQ(sketch.capacity(), 4096U);
    for (int i = 0; i < 12; ++i) sketch.record(hash_of(1));
    ASSERT_EQ(sketch.estimate(hash_of(1)), 12U);
    // Fill the sample with a few other keys (few, so none collides with key 1 in every row).
    const std::size_t sample = FrequencySketch::kSampleFactor * sketch.capacity();
    for (std::size_t i = 12; i < sample; ++i) sketch.record(hash_of(100 + i % 8));
    EXPECT_EQ(sketch.agings(), 1U);
    // 11 in the counters (the first access went to the doorkeeper) halved; doorkeeper cleared.
    EXPECT_EQ(sketch.estimate(hash_of(1)), 5U);
    EXPECT_EQ(sketch.estimate(hash_of(100)), FrequencySketch::kMaxCount / 2);
}

TEST(FrequencySketch, GrowingClearsIt) {
    FrequencySketch sketch{100};
    EXPECT_EQ(sketch.capacity(), 128U);
    for (int i = 0; i < 3; ++i) sketch.record(hash_of(1));
    sketch.ensure_capacity(100);
    EXPECT_EQ(sketch.estimate(hash_of(1)), 3U) << "no growth needed";
    sketch.ensure_capacity(1000);
    EXPECT_EQ(sketch.capacity(), 1024U);
    EXPECT_EQ(sketch.estimate(hash_of(1)), 0U);
}

}  // namespace
}  // namespace tokenradar::cache
