#include "label_cache.hpp"

#include <cstring>
#include <random>

namespace tokenradar::store {
namespace {

// Entries each cache keeps before it starts over: a gateway has a few dozen combinations;
// an observatory's submitters may bring many, and each costs one lookup after a start-over.
constexpr std::size_t kMaxCached = 4096;

}  // namespace

LabelCache::LabelCache() : seed_(std::random_device()() | 1ULL << 32U) {}

std::uint64_t LabelCache::hash(const Labels& labels) const noexcept {
    constexpr std::uint64_t kOdd = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio
    const auto mix = [](std::uint64_t h, std::uint64_t word) {
        h = (h ^ word) * kOdd;
        return h ^ (h >> 29U);
    };
    const auto load = [](const char* p, auto word) {
        std::memcpy(&word, p, sizeof word);
        return static_cast<std::uint64_t>(word);
    };
    std::uint64_t h = mix(seed_, static_cast<std::uint64_t>(labels.cache) |
                                     static_cast<std::uint64_t>(labels.route) << 8U |
                                     static_cast<std::uint64_t>(labels.stream) << 16U);
    for (const std::string* text :
         {&labels.provider, &labels.model, &labels.endpoint, &labels.upstream_region,
          &labels.client_region, &labels.task, &labels.source, &labels.api, &labels.client_key}) {
        // Two words that hold every byte (overlapping where the text is shorter than 16), as
        // wyhash reads short input; 8 bytes at a time before the last 8 of a longer one.
        const char* p = text->data();
        const std::size_t n = text->size();
        std::uint64_t first = 0;
        std::uint64_t last = 0;
        if (n >= 8) {
            std::size_t at = 0;
            for (; n - at > 16; at += 8) h = mix(h, load(p + at, std::uint64_t{}));
            first = load(p + at, std::uint64_t{});
            last = load(p + n - 8, std::uint64_t{});
        } else if (n >= 4) {
            first = load(p, std::uint32_t{});
            last = load(p + n - 4, std::uint32_t{});
        } else if (n > 0) {
            first = static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8U |
                    static_cast<unsigned char>(p[n - 1]) << 16U;
        }
        h = mix(mix(h ^ n, first), last);
    }
    return h;
}

std::optional<std::int64_t> LabelCache::find_id(const Labels& labels) const {
    for (auto [it, end] = ids_.equal_range(hash(labels)); it != end; ++it) {
        if (it->second.labels == labels) return it->second.id;
    }
    return std::nullopt;
}

void LabelCache::remember_id(const Labels& labels, std::int64_t id) {
    if (ids_.size() >= kMaxCached) ids_.clear();
    ids_.emplace(hash(labels), Known{labels, id});
}

const Labels* LabelCache::find_labels(std::int64_t id) const {
    const auto it = labels_.find(id);
    return it == labels_.end() ? nullptr : &it->second;
}

const Labels* LabelCache::remember_labels(std::int64_t id, Labels labels) {
    if (labels_.size() >= kMaxCached) labels_.clear();
    return &labels_.insert_or_assign(id, std::move(labels)).first->second;
}

void set_stored_label(Labels& labels, Label label, std::string_view value) {
    static const Labels defaults;  // what a value no longer allowed falls back to
    if (!set_label(labels, label, value)) {
        (void)set_label(labels, label, label_value(defaults, label));
    }
}

}  // namespace tokenradar::store
