#include "../../../src/bench/lane_records.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tokenradar::bench {
namespace {

Measurement record(std::uint64_t n) {
    Measurement m;
    m.request_id = "request-" + std::to_string(n) + "-with-a-heap-sized-id";
    m.t.send = static_cast<std::int64_t>(n);
    return m;
}

TEST(LaneRecords, MergeOrdersByCompletionAcrossLanesAndChunks) {
    // Lane a holds most records (several chunks), b and c some, interleaved.
    LaneRecords a, b, c;
    constexpr std::uint64_t kTotal = 12'000;
    for (std::uint64_t n = 0; n < kTotal; ++n) {
        LaneRecords& lane = n % 7 == 3 ? b : n % 11 == 5 ? c : a;
        lane.add(n, record(n));
    }
    EXPECT_EQ(a.size() + b.size() + c.size(), kTotal);
    const std::vector<Measurement> merged = LaneRecords::merge({&a, &b, &c});
    ASSERT_EQ(merged.size(), kTotal);
    for (std::uint64_t n = 0; n < kTotal; ++n) {
        ASSERT_EQ(merged[n].request_id, record(n).request_id) << n;
        ASSERT_EQ(merged[n].t.send, static_cast<std::int64_t>(n));
    }
}

TEST(LaneRecords, MergeOfNothingIsEmpty) {
    LaneRecords a;
    EXPECT_TRUE(LaneRecords::merge({&a}).empty());
    EXPECT_TRUE(LaneRecords::merge({}).empty());
}

TEST(Prefault, KeepsContentsAndTheAllocatorAlignsToHugePages) {
    std::vector<unsigned char> bytes(3 << 20);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 31);
    prefault(bytes.data() + 5, bytes.size() - 10);
    for (std::size_t i = 0; i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], static_cast<unsigned char>(i * 31)) << i;

    std::vector<std::uint64_t, PrefaultedAllocator<std::uint64_t>> numbers;
    numbers.reserve(1000);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(numbers.data()) % (std::uintptr_t{2} << 20), 0u);
    for (std::uint64_t i = 0; i < 1000; ++i) numbers.push_back(i * i);
    EXPECT_EQ(numbers[999], 999u * 999u);
}

}  // namespace
}  // namespace tokenradar::bench
