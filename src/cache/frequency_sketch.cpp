#include <tokenradar/cache/frequency_sketch.hpp>

#include <algorithm>
#include <array>
#include <bit>

namespace tokenradar::cache {
namespace {

constexpr unsigned kDepth = 4;
constexpr unsigned kCountersPerWord = 16;
constexpr unsigned kDoorkeeperBitsPerCounter = 16;  // ~1.6 bits a key over a whole sample
constexpr unsigned kDoorkeeperHashes = 2;
constexpr std::size_t kMinWidth = 64;
// Odd multipliers: hash * seed >> (64 - bits) spreads one 64-bit hash over independent slots.
constexpr std::array<std::uint64_t, kDepth + kDoorkeeperHashes> kSeeds = {
    0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL,
    0xd6e8feb86659fd93ULL, 0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL};
constexpr std::uint64_t kHalfMask = 0x7777777777777777ULL;  // each nibble's low 3 bits

std::size_t slot(std::uint64_t hash, std::uint64_t seed, unsigned bits) noexcept {
    return static_cast<std::size_t>((hash * seed) >> (64 - bits));
}

}  // namespace

FrequencySketch::FrequencySketch(std::size_t capacity) { resize(capacity); }

void FrequencySketch::resize(std::size_t capacity) {
    width_ = std::bit_ceil(std::max(capacity, kMinWidth));
    width_bits_ = static_cast<unsigned>(std::countr_zero(width_));
    table_.assign(kDepth * width_ / kCountersPerWord, 0);
    doorkeeper_.assign(width_ * kDoorkeeperBitsPerCounter / 64, 0);
    additions_ = 0;
}

void FrequencySketch::ensure_capacity(std::size_t capacity) {
    if (capacity > width_) resize(capacity);
}

std::size_t FrequencySketch::counter_index(std::uint64_t hash, unsigned row) const noexcept {
    return row * width_ + slot(hash, kSeeds[row], width_bits_);
}

bool FrequencySketch::in_doorkeeper(std::uint64_t hash) const noexcept {
    const unsigned bits = width_bits_ + std::countr_zero(kDoorkeeperBitsPerCounter);
    for (unsigned k = 0; k < kDoorkeeperHashes; ++k) {
        const std::size_t bit = slot(hash, kSeeds[kDepth + k], bits);
        if ((doorkeeper_[bit / 64] & (1ULL << (bit % 64))) == 0) return false;
    }
    return true;
}

void FrequencySketch::record(std::uint64_t hash) {
    if (!in_doorkeeper(hash)) {
        const unsigned bits = width_bits_ + std::countr_zero(kDoorkeeperBitsPerCounter);
        for (unsigned k = 0; k < kDoorkeeperHashes; ++k) {
            const std::size_t bit = slot(hash, kSeeds[kDepth + k], bits);
            doorkeeper_[bit / 64] |= 1ULL << (bit % 64);
        }
    } else {
        for (unsigned row = 0; row < kDepth; ++row) {
            const std::size_t i = counter_index(hash, row);
            const unsigned shift = (i % kCountersPerWord) * 4;
            std::uint64_t& word = table_[i / kCountersPerWord];
            if (((word >> shift) & 0xfU) < kMaxCount) word += 1ULL << shift;
        }
    }
    if (++additions_ >= kSampleFactor * width_) age();
}

unsigned FrequencySketch::estimate(std::uint64_t hash) const {
    unsigned count = kMaxCount;
    for (unsigned row = 0; row < kDepth; ++row) {
        const std::size_t i = counter_index(hash, row);
        const auto c = static_cast<unsigned>(
            (table_[i / kCountersPerWord] >> ((i % kCountersPerWord) * 4)) & 0xfU);
        count = std::min(count, c);
    }
    return count + (in_doorkeeper(hash) ? 1 : 0);
}

void FrequencySketch::age() {
    for (std::uint64_t& word : table_) word = (word >> 1) & kHalfMask;
    std::fill(doorkeeper_.begin(), doorkeeper_.end(), 0);
    additions_ /= 2;
    ++agings_;
}

}  // namespace tokenradar::cache
