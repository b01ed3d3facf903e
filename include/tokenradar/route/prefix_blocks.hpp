#pragma once
// Prefix affinity's view of a prompt: chained hashes of fixed-size blocks of the canonical
// prompt (tools, then every message in order), as vLLM's prefix cache and SGLang's router
// see it. Block i's hash covers blocks 0..i, so two prompts share block i's hash exactly when
// they share their first i + 1 blocks. The hash (XXH3, fixed seed) is the same on every node,
// so several gateways place a prompt alike. A partial last block is not hashed.
//
// `AffinityTable` remembers which upstream served which block: bounded, oldest entries
// forgotten first; thread-safe.

#include <tokenradar/dialect/chat.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace tokenradar::route {

// The hashes of the first `max_blocks` full blocks of `block_bytes` bytes.
std::vector<std::uint64_t> prefix_blocks(const dialect::ChatRequest& chat, std::size_t block_bytes,
                                         std::size_t max_blocks);

struct AffinityMatch {
    std::size_t upstream = 0;
    std::size_t blocks = 0;  // how many of the prompt's blocks that upstream has seen
};

class AffinityTable {
  public:
    explicit AffinityTable(std::size_t capacity);

    // The upstream that served the longest prefix of `blocks`.
    [[nodiscard]] std::optional<AffinityMatch> longest(std::span<const std::uint64_t> blocks) const;
    // `upstream` served a prompt of these blocks.
    void remember(std::span<const std::uint64_t> blocks, std::size_t upstream);
    [[nodiscard]] std::size_t size() const;

  private:
    const std::size_t capacity_;
    mutable std::mutex mutex_;
    std::unordered_map<std::uint64_t, std::uint32_t> upstream_of_;
    std::vector<std::uint64_t> order_;  // insertion ring: the next to forget at `next_`
    std::size_t next_ = 0;
};

}  // namespace tokenradar::route
