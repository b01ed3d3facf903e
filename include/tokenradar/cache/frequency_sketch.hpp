#pragma once
// TinyLFU's frequency estimate (Einziger, Friedman, Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy", 2017), what MemoryTier's W-TinyLFU admission compares a newcomer and a
// victim with. A count-min sketch of 4-bit counters (4 rows, 16 counters a word) behind a
// doorkeeper (a bloom filter): a key's first access only sets its doorkeeper bits, so the
// one-hit wonders that make up most of a chat workload never reach the counters. After
// 10 x capacity recorded accesses the sketch ages: every counter is halved and the doorkeeper
// cleared, so what was popular long ago fades. Estimates may be high (collisions), never low
// before an aging. Callers pass a 64-bit hash of the key (MemoryTier: XXH3_64bits).
// Not thread-safe: MemoryTier keeps one per shard, under the shard's mutex.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tokenradar::cache {

class FrequencySketch {
  public:
    static constexpr unsigned kMaxCount = 15;         // a counter saturates here
    static constexpr std::size_t kSampleFactor = 10;  // ages after this x capacity accesses

    // Room for about `capacity` distinct keys: counters rounded up to a power of two a row.
    explicit FrequencySketch(std::size_t capacity);

    // One access to the key hashed to `hash`; may age the sketch.
    void record(std::uint64_t hash);
    // Accesses to it since about the last aging: 0 to kMaxCount + 1 (the doorkeeper's one).
    [[nodiscard]] unsigned estimate(std::uint64_t hash) const;
    // Grows (and clears) the sketch when `capacity` keys no longer fit; no-op otherwise.
    void ensure_capacity(std::size_t capacity);

    [[nodiscard]] std::size_t capacity() const noexcept { return width_; }
    [[nodiscard]] std::uint64_t agings() const noexcept { return agings_; }

  private:
    void resize(std::size_t capacity);
    void age();
    [[nodiscard]] std::size_t counter_index(std::uint64_t hash, unsigned row) const noexcept;
    [[nodiscard]] bool in_doorkeeper(std::uint64_t hash) const noexcept;

    std::vector<std::uint64_t> table_;       // kDepth rows of width_ counters
    std::vector<std::uint64_t> doorkeeper_;  // bloom filter bits
    std::size_t width_ = 0;                  // counters a row, a power of two
    unsigned width_bits_ = 0;                // log2(width_)
    std::size_t additions_ = 0;              // accesses since the last aging (halved by it)
    std::uint64_t agings_ = 0;
};

}  // namespace tokenradar::cache
