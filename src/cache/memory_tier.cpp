#include <tokenradar/cache/memory_tier.hpp>

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace tokenradar::cache {
namespace {

constexpr std::size_t kWindowPercent = 1;      // the window at first and at least (Caffeine)
constexpr std::size_t kMaxWindowPercent = 80;  // the hill climber's ceiling
constexpr std::size_t kProtectedPercent = 80;  // of the main part
// Caffeine's hill climber: a step of 6.25% of the shard, decaying by 2% a sample, restarted
// when the hit ratio moves by 5 points; a sample is 10 lookups an entry (at least 1,000).
constexpr double kStepPercent = 6.25;
constexpr double kStepDecay = 0.98;
constexpr double kRestartThreshold = 0.05;
constexpr std::uint64_t kSamplePerEntry = 10;
constexpr std::uint64_t kMinSample = 1'000;
// What a cached answer weighs before the sketch has seen the shard's real entries: it sizes
// the sketch at first, which then grows with the entry count.
constexpr std::size_t kAssumedEntryBytes = 2048;

std::uint64_t hash_of(std::string_view key) noexcept { return XXH3_64bits(key.data(), key.size()); }

}  // namespace

MemoryTier::MemoryTier(MemoryTierOptions options)
    : shard_budget_(options.max_bytes / std::max<std::size_t>(1, options.shards)),
      admission_(options.admission) {
    const std::size_t n = std::max<std::size_t>(1, options.shards);
    const bool tinylfu = admission_ == Admission::tinylfu;
    const std::size_t sketch_capacity = tinylfu ? shard_budget_ / kAssumedEntryBytes : 0;
    const std::size_t window = tinylfu ? shard_budget_ * kWindowPercent / 100 : shard_budget_;
    shards_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        shards_.push_back(std::make_unique<Shard>(
            sketch_capacity, window, (shard_budget_ - window) * kProtectedPercent / 100));
        shards_.back()->step = -kStepPercent / 100 * static_cast<double>(shard_budget_);
    }
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

void MemoryTier::drop(Shard& shard, EntryList::iterator it) {
    shard.bytes -= it->bytes;
    shard.segment_bytes[it->segment] -= it->bytes;
    shard.index.erase(it->key);
    shard.lists[it->segment].erase(it);
}

void MemoryTier::move_to(Shard& shard, EntryList::iterator it, Segment to) {
    shard.segment_bytes[it->segment] -= it->bytes;
    shard.segment_bytes[to] += it->bytes;
    shard.lists[to].splice(shard.lists[to].begin(), shard.lists[it->segment], it);
    it->segment = to;
}

void MemoryTier::on_hit(Shard& shard, EntryList::iterator it) {
    if (it->segment != kProbation) {
        move_to(shard, it, it->segment);  // to the front of its own list
        return;
    }
    move_to(shard, it, kProtected);
    while (shard.segment_bytes[kProtected] > shard.protected_budget) {
        move_to(shard, std::prev(shard.lists[kProtected].end()), kProbation);
    }
}

// Caffeine's climber, per shard: keep moving the window's size the way that raised the hit
// ratio, turn back when it fell. The entries follow at the next put: a larger window takes
// room from main's least recently used, a smaller one sends candidates to admission.
void MemoryTier::climb(Shard& shard) const {
    const auto lookups = static_cast<double>(shard.sample_hits + shard.sample_misses);
    const double hit_ratio = static_cast<double>(shard.sample_hits) / lookups;
    const double change = hit_ratio - shard.previous_hit_ratio;
    const double amount = change >= 0 ? shard.step : -shard.step;
    const double restart =
        (amount >= 0 ? 1 : -1) * kStepPercent / 100 * static_cast<double>(shard_budget_);
    shard.step = std::abs(change) >= kRestartThreshold ? restart : kStepDecay * amount;
    shard.previous_hit_ratio = hit_ratio;
    shard.sample_hits = 0;
    shard.sample_misses = 0;
    const double budget = static_cast<double>(shard_budget_);
    const double low = budget * kWindowPercent / 100;
    const double high = budget * kMaxWindowPercent / 100;
    const double window = std::clamp(static_cast<double>(shard.window_budget) + amount, low, high);
    shard.window_budget = static_cast<std::size_t>(window);
    shard.protected_budget = (shard_budget_ - shard.window_budget) * kProtectedPercent / 100;
}

void MemoryTier::count_lookup(Shard& shard, bool hit) const {
    if (admission_ != Admission::tinylfu) return;
    ++(hit ? shard.sample_hits : shard.sample_misses);
    const std::uint64_t sample =
        std::max<std::uint64_t>(kMinSample, kSamplePerEntry * shard.index.size());
    if (shard.sample_hits + shard.sample_misses >= sample) climb(shard);
}

AnswerPtr MemoryTier::get(std::string_view key, std::int64_t now_us,
                          std::optional<std::int64_t> max_age_us) {
    const bool counts = admission_ == Admission::tinylfu;
    const std::uint64_t hash = counts ? hash_of(key) : 0;
    Shard& shard = shard_of(key);
    const std::lock_guard lock(shard.mutex);
    if (counts) shard.sketch.record(hash);
    const auto found = shard.index.find(key);
    if (found == shard.index.end()) {
        count_lookup(shard, false);
        return nullptr;
    }
    const auto it = found->second;
    if (it->expires_at_us <= now_us) {
        ++shard.expired;
        drop(shard, it);
        count_lookup(shard, false);
        return nullptr;
    }
    if (max_age_us && now_us - it->answer->stored_at_us > *max_age_us) {
        count_lookup(shard, false);
        return nullptr;
    }
    on_hit(shard, it);
    count_lookup(shard, true);
    return it->answer;
}

// The candidate (the window's least recently used) moves to probation and stays only while it
// is more frequent than each victim it takes room from: probation's least recently used, or
// protected's when probation holds the candidate alone. A tie keeps the victim; an expired
// victim goes without a contest (its past popularity buys nothing now). "Now" is the newest
// answer's storing time (`stored_at`), which nothing here can read later than it is.
void MemoryTier::admit_or_drop(Shard& shard, EntryList::iterator candidate,
                               std::int64_t now_us) const {
    move_to(shard, candidate, kProbation);
    const unsigned frequency = shard.sketch.estimate(candidate->hash);
    while (shard.bytes > shard_budget_) {
        auto victim = std::prev(shard.lists[kProbation].end());
        if (victim == candidate) {
            if (shard.lists[kProtected].empty()) return;  // nothing in main to take room from
            victim = std::prev(shard.lists[kProtected].end());
        }
        if (victim->expires_at_us <= now_us) {
            ++shard.expired;
            drop(shard, victim);
            continue;
        }
        ++shard.evictions;
        if (frequency > shard.sketch.estimate(victim->hash)) {
            drop(shard, victim);
        } else {
            ++shard.rejected;
            drop(shard, candidate);
            return;
        }
    }
}

void MemoryTier::make_room(Shard& shard, std::int64_t now_us) {
    while (shard.segment_bytes[kWindow] > shard.window_budget) {
        const auto oldest = std::prev(shard.lists[kWindow].end());
        if (admission_ == Admission::lru) {
            ++shard.evictions;
            drop(shard, oldest);
        } else {
            admit_or_drop(shard, oldest, now_us);
        }
    }
    // The bound holds whatever the policy left: the least valuable go first.
    for (const Segment s : {kProbation, kProtected, kWindow}) {
        while (shard.bytes > shard_budget_ && !shard.lists[s].empty()) {
            ++shard.evictions;
            drop(shard, std::prev(shard.lists[s].end()));
        }
    }
}

bool MemoryTier::put(const std::string& key, AnswerPtr answer, std::int64_t expires_at_us) {
    const std::size_t bytes = answer->bytes() + 2 * key.size() + sizeof(Entry) + 64;
    if (bytes > shard_budget_ / 8) return false;
    const std::uint64_t hash = admission_ == Admission::tinylfu ? hash_of(key) : 0;
    const std::int64_t now_us = answer->stored_at_us;
    Shard& shard = shard_of(key);
    const std::lock_guard lock(shard.mutex);
    if (const auto found = shard.index.find(key); found != shard.index.end()) {
        // A replacement keeps the entry's place: it earned it.
        const auto it = found->second;
        shard.bytes = shard.bytes - it->bytes + bytes;
        shard.segment_bytes[it->segment] = shard.segment_bytes[it->segment] - it->bytes + bytes;
        it->answer = std::move(answer);
        it->expires_at_us = expires_at_us;
        it->bytes = bytes;
        move_to(shard, it, it->segment);
    } else {
        auto& window = shard.lists[kWindow];
        window.push_front(Entry{key, std::move(answer), expires_at_us, bytes, hash, kWindow});
        shard.index.emplace(window.front().key, window.begin());
        shard.bytes += bytes;
        shard.segment_bytes[kWindow] += bytes;
        if (admission_ == Admission::tinylfu) shard.sketch.ensure_capacity(shard.index.size());
    }
    make_room(shard, now_us);
    return shard.index.contains(key);
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
        s.entries += shard->index.size();
        s.bytes += shard->bytes;
        s.evictions += shard->evictions;
        s.expired += shard->expired;
        s.rejected += shard->rejected;
    }
    return s;
}

}  // namespace tokenradar::cache
