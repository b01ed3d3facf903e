#pragma once
// The in-process tier (L1): answers by exact key, bounded in bytes, each with its expiry.
// Sharded by key, a mutex per shard. An entry over 1/8 of a shard's budget is not admitted
// (one huge answer would flush the shard). Entries are shared and immutable: a replay holds
// its answer while the tier may drop it. Callers pass the wall clock (microseconds); nothing
// here reads a clock.
//
// Two policies per shard (MemoryTierOptions::admission):
// - tinylfu (the default): W-TinyLFU as in Caffeine. A new entry goes into a window LRU (1%
//   of the shard's bytes to start); one pushed out of it enters the main part (segmented LRU:
//   probation 20%, protected 80%; a hit in probation promotes) only if its estimated frequency
//   beats that of main's victim, else it is dropped. Frequencies are counted on every get (hit
//   or miss: the gateway's put follows the miss that counted) in a FrequencySketch per shard,
//   keyed by XXH3_64bits of the key. A hill climber per shard resizes the window (1-80%):
//   after each sample of lookups (10 an entry) it keeps moving the way that raised the hit
//   ratio and turns back when it fell, so recency-biased traffic grows it. It keeps frequent
//   answers through floods of one-off questions and scans.
// - lru: least recently used evicted first.
// bench/README.md ("L1 admission") has the measurement that chose the default.

#include <tokenradar/cache/answer.hpp>
#include <tokenradar/cache/frequency_sketch.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tokenradar::cache {

using AnswerPtr = std::shared_ptr<const CachedAnswer>;

enum class Admission : std::uint8_t { lru, tinylfu };

struct MemoryTierOptions {
    std::size_t max_bytes = 256U * 1024 * 1024;
    std::size_t shards = 16;
    Admission admission = Admission::tinylfu;  // bench/README.md, "L1 admission"
};

class MemoryTier {
  public:
    explicit MemoryTier(MemoryTierOptions options = {});

    // The answer under `key` unless it expired or, with `max_age_us`, was stored longer ago.
    AnswerPtr get(std::string_view key, std::int64_t now_us,
                  std::optional<std::int64_t> max_age_us = std::nullopt);
    // Stores (or replaces, in place) `key` until `expires_at_us`. False when not kept: too
    // large, or (tinylfu) it left the window at once and lost to main's victim.
    bool put(const std::string& key, AnswerPtr answer, std::int64_t expires_at_us);
    void erase(const std::string& key);

    struct Stats {
        std::size_t entries = 0;
        std::size_t bytes = 0;
        std::uint64_t evictions = 0;  // dropped for room (rejected ones included)
        std::uint64_t expired = 0;    // dropped past their expiry: when found, or as a victim
        std::uint64_t rejected = 0;   // tinylfu: left the window and lost to main's victim
    };
    [[nodiscard]] Stats stats() const;
    [[nodiscard]] std::size_t max_bytes() const noexcept { return shard_budget_ * shards_.size(); }
    [[nodiscard]] Admission admission() const noexcept { return admission_; }

  private:
    // Where an entry is: lru keeps every entry in `window` (the whole shard is its window).
    enum Segment : std::uint8_t { kWindow, kProbation, kProtected, kSegments };
    struct Entry {
        std::string key;
        AnswerPtr answer;
        std::int64_t expires_at_us = 0;
        std::size_t bytes = 0;
        std::uint64_t hash = 0;  // XXH3_64bits(key), tinylfu only
        Segment segment = kWindow;
    };
    using EntryList = std::list<Entry>;  // most recently used first
    struct Shard {
        Shard(std::size_t sketch_capacity, std::size_t window, std::size_t protected_bytes)
            : window_budget(window), protected_budget(protected_bytes), sketch(sketch_capacity) {}
        mutable std::mutex mutex;
        std::array<EntryList, kSegments> lists;
        std::array<std::size_t, kSegments> segment_bytes{};
        std::unordered_map<std::string_view, EntryList::iterator> index;
        std::size_t bytes = 0;
        std::size_t window_budget;     // lru: the whole shard
        std::size_t protected_budget;  // tinylfu: 80% of the rest
        FrequencySketch sketch;        // tinylfu only
        // tinylfu's hill climber: hits and misses of the current sample, the last sample's
        // hit ratio, and the next change of the window's size in bytes (signed).
        std::uint64_t sample_hits = 0;
        std::uint64_t sample_misses = 0;
        double previous_hit_ratio = 0;
        double step = 0;
        std::uint64_t evictions = 0;
        std::uint64_t expired = 0;
        std::uint64_t rejected = 0;
    };
    Shard& shard_of(std::string_view key);
    static void drop(Shard& shard, EntryList::iterator it);
    static void move_to(Shard& shard, EntryList::iterator it, Segment to);
    static void on_hit(Shard& shard, EntryList::iterator it);
    void make_room(Shard& shard, std::int64_t now_us);
    void count_lookup(Shard& shard, bool hit) const;
    void climb(Shard& shard) const;
    void admit_or_drop(Shard& shard, EntryList::iterator candidate, std::int64_t now_us) const;

    std::vector<std::unique_ptr<Shard>> shards_;
    std::size_t shard_budget_;
    Admission admission_;
};

}  // namespace tokenradar::cache
