#pragma once
// The in-process tier (L1): answers by exact key, bounded in bytes, each with its expiry.
// Sharded by key, a mutex per shard, least recently used evicted first within a shard. An
// entry over 1/8 of a shard's budget is not admitted (one huge answer would flush the shard).
// Entries are shared and immutable: a replay holds its answer while the tier may drop it.
// Callers pass the wall clock (microseconds); nothing here reads a clock.

#include <tokenradar/cache/answer.hpp>

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

struct MemoryTierOptions {
    std::size_t max_bytes = 256U * 1024 * 1024;
    std::size_t shards = 16;
};

class MemoryTier {
  public:
    explicit MemoryTier(MemoryTierOptions options = {});

    // The answer under `key` unless it expired or, with `max_age_us`, was stored longer ago.
    AnswerPtr get(std::string_view key, std::int64_t now_us,
                  std::optional<std::int64_t> max_age_us = std::nullopt);
    // Stores (or replaces) `key` until `expires_at_us`. False when not admitted (too large).
    bool put(const std::string& key, AnswerPtr answer, std::int64_t expires_at_us);
    void erase(const std::string& key);

    struct Stats {
        std::size_t entries = 0;
        std::size_t bytes = 0;
        std::uint64_t evictions = 0;  // dropped for room
        std::uint64_t expired = 0;    // dropped when found past their expiry
    };
    [[nodiscard]] Stats stats() const;
    [[nodiscard]] std::size_t max_bytes() const noexcept { return shard_budget_ * shards_.size(); }

  private:
    struct Entry {
        std::string key;
        AnswerPtr answer;
        std::int64_t expires_at_us = 0;
        std::size_t bytes = 0;
    };
    struct Shard {
        mutable std::mutex mutex;
        std::list<Entry> lru;  // most recently used first
        std::unordered_map<std::string_view, std::list<Entry>::iterator> index;
        std::size_t bytes = 0;
        std::uint64_t evictions = 0;
        std::uint64_t expired = 0;
    };
    Shard& shard_of(std::string_view key);
    static void drop(Shard& shard, std::list<Entry>::iterator it);

    std::vector<std::unique_ptr<Shard>> shards_;
    std::size_t shard_budget_;
};

}  // namespace tokenradar::cache
