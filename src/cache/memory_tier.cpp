#include <tokenradar/cache/memory_tier.hpp>

#include <algorithm>
#include <functional>

namespace tokenradar::cache {

MemoryTier::MemoryTier(MemoryTierOptions options)
    : shard_budget_(options.max_bytes / std::max<std::size_t>(1, options.shards)) {
    const std::size_t n = std::max<std::size_t>(1, options.shards);
    shards_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) shards_.push_back(std::make_unique<Shard>());
}

MemoryTier::Shard& MemoryTier::shard_of(std::string_view key) {
    // Keys are digests: their first bytes are already uniform.
    std::size_t h = 0;
    for (std::size_t i = 0; i < std::min<std::size_t>(8, key.size()); ++i) {
        h = (h << 8) | static_cast<unsigned char>(key[i]);
    }
    if (key.size() < 8) h = std::hash<std::string_view>{}(key);
    return *shards_[h % shards_.size()];
}

void MemoryTier::drop(Shard& shard, std::list<Entry>::iterator it) {
    shard.bytes -= it->bytes;
    shard.index.erase(it->key);
    shard.lru.erase(it);
}

AnswerPtr MemoryTier::get(std::string_view key, std::int64_t now_us,
                          std::optional<std::int64_t> max_age_us) {
    Shard& shard = shard_of(key);
    const std::lock_guard lock(shard.mutex);
    const auto found = shard.index.find(key);
    if (found == shard.index.end()) return nullptr;
    const auto it = found->second;
    if (it->expires_at_us <= now_us) {
        ++shard.expired;
        drop(shard, it);
        return nullptr;
    }
    if (max_age_us && now_us - it->answer->stored_at_us > *max_age_us) return nullptr;
    shard.lru.splice(shard.lru.begin(), shard.lru, it);
    return it->answer;
}

bool MemoryTier::put(const std::string& key, AnswerPtr answer, std::int64_t expires_at_us) {
    const std::size_t bytes = answer->bytes() + 2 * key.size() + sizeof(Entry) + 64;
    if (bytes > shard_budget_ / 8) return false;
    Shard& shard = shard_of(key);
    const std::lock_guard lock(shard.mutex);
    if (const auto found = shard.index.find(key); found != shard.index.end()) {
        drop(shard, found->second);
    }
    while (shard.bytes + bytes > shard_budget_ && !shard.lru.empty()) {
        ++shard.evictions;
        drop(shard, std::prev(shard.lru.end()));
    }
    shard.lru.push_front(Entry{key, std::move(answer), expires_at_us, bytes});
    shard.index.emplace(shard.lru.front().key, shard.lru.begin());
    shard.bytes += bytes;
    return true;
}

void MemoryTier::erase(const std::string& key) {
    Shard& shard = shard_of(key);
    const std::lock_guard lock(shard.mutex);
    if (const auto found = shard.index.find(key); found != shard.index.end()) {
        drop(shard, found->second);
    }
}

MemoryTier::Stats MemoryTier::stats() const {
    Stats s;
    for (const auto& shard : shards_) {
        const std::lock_guard lock(shard->mutex);
        s.entries += shard->lru.size();
        s.bytes += shard->bytes;
        s.evictions += shard->evictions;
        s.expired += shard->expired;
    }
    return s;
}

}  // namespace tokenradar::cache
