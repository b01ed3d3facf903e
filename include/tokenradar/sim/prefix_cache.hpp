#pragma once
// The simulated provider's KV/prompt cache: an LRU set of chained prompt-block hashes.
// Block i covers prompt tokens [i*B, (i+1)*B) (B = block_tokens; 4 bytes per token, see
// tokens.hpp) and its hash includes the hash of block i-1, so a hit on block i means the
// whole prefix up to it matches. Only full blocks are cached. Thread-safe (one mutex;
// operations are O(blocks in the prompt)). Never suspends, no I/O.

#include <cstdint>
#include <list>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tokenradar::sim {

class PrefixCache {
  public:
    // capacity_blocks == 0 disables the cache (every lookup returns 0, nothing is stored).
    PrefixCache(std::int64_t block_tokens, std::int64_t capacity_blocks);

    PrefixCache(const PrefixCache&) = delete;
    PrefixCache& operator=(const PrefixCache&) = delete;

    // Number of prompt tokens covered by the longest cached chain of full blocks from the
    // start of the prompt (a multiple of block_tokens), then inserts/refreshes every full
    // block of this prompt. Blocks are touched last-to-first so that, under eviction, a
    // chain loses its tail before its head (as paged-attention engines do).
    std::int64_t lookup_and_insert(std::string_view prompt);

    // The chained hashes of the full blocks of `prompt` (exposed for tests and for the
    // gateway's prefix-affinity router, which must agree on the definition).
    [[nodiscard]] std::vector<std::uint64_t> block_hashes(std::string_view prompt) const;

    [[nodiscard]] std::int64_t size() const;
    [[nodiscard]] std::int64_t block_tokens() const noexcept { return block_tokens_; }
    [[nodiscard]] std::int64_t capacity_blocks() const noexcept { return capacity_blocks_; }

  private:
    using Lru = std::list<std::uint64_t>;  // front = most recently used

    std::int64_t block_tokens_;
    std::int64_t capacity_blocks_;
    mutable std::mutex mutex_;
    Lru lru_;
    std::unordered_map<std::uint64_t, Lru::iterator> index_;
};

}  // namespace tokenradar::sim
