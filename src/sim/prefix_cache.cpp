#include <tokenradar/sim/prefix_cache.hpp>

#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/sim/tokens.hpp>

#include <cassert>

namespace tokenradar::sim {

PrefixCache::PrefixCache(std::int64_t block_tokens, std::int64_t capacity_blocks)
    : block_tokens_(block_tokens), capacity_blocks_(capacity_blocks) {
    assert(block_tokens_ >= 1);
    assert(capacity_blocks_ >= 0);
}

std::vector<std::uint64_t> PrefixCache::block_hashes(std::string_view prompt) const {
    const auto block_bytes = static_cast<std::size_t>(block_tokens_ * kBytesPerEstimatedToken);
    std::vector<std::uint64_t> out;
    out.reserve(prompt.size() / block_bytes);
    std::uint64_t chain = 0xcbf29ce484222325ULL;  // FNV offset basis: block 0's "parent"
    for (std::size_t at = 0; at + block_bytes <= prompt.size(); at += block_bytes) {
        chain = fnv1a64(prompt.substr(at, block_bytes), chain);
        out.push_back(chain);
    }
    return out;
}

std::int64_t PrefixCache::lookup_and_insert(std::string_view prompt) {
    if (capacity_blocks_ == 0) return 0;
    const auto hashes = block_hashes(prompt);  // hashed outside the lock
    std::lock_guard lock(mutex_);
    std::size_t hits = 0;
    while (hits < hashes.size() && index_.contains(hashes[hits])) ++hits;
    for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
        if (auto found = index_.find(*it); found != index_.end()) {
            lru_.splice(lru_.begin(), lru_, found->second);
            continue;
        }
        if (static_cast<std::int64_t>(lru_.size()) >= capacity_blocks_) {
            index_.erase(lru_.back());
            lru_.pop_back();
        }
        lru_.push_front(*it);
        index_.emplace(*it, lru_.begin());
    }
    return static_cast<std::int64_t>(hits) * block_tokens_;
}

std::int64_t PrefixCache::size() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::int64_t>(lru_.size());
}

}  // namespace tokenradar::sim
