#include "lane_records.hpp"

#include <sys/mman.h>

#include <algorithm>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL, which is ignored
#endif

namespace tokenradar::bench {

void prefault(void* data, std::size_t bytes) noexcept {
    constexpr std::uintptr_t kPage = 4096;
    constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t end = begin + bytes;
    const std::uintptr_t huge_begin = (begin + kHuge - 1) / kHuge * kHuge;
    const std::uintptr_t huge_end = end / kHuge * kHuge;
    // Page addresses are arithmetic on the allocation's address by nature.
    if (huge_begin < huge_end) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr)
        ::madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
    }
    // Populating maps pages as if written without changing their contents, so the pages at the
    // edges, which may hold other allocations, are safe to include.
    const std::uintptr_t page_begin = begin / kPage * kPage;
    const std::uintptr_t page_end = (end + kPage - 1) / kPage * kPage;
    if (page_begin < page_end) {
        // NOLINTNEXTLINE(performance-no-int-to-ptr)
        ::madvise(reinterpret_cast<void*>(page_begin), page_end - page_begin, MADV_POPULATE_WRITE);
    }
}

void LaneRecords::add(std::uint64_t completion, Measurement&& m) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) chunks_.emplace_back().reserve(kChunk);
    chunks_.back().push_back(std::move(m));
    completions_.push_back(completion);
}

std::vector<Measurement> LaneRecords::merge(const std::vector<LaneRecords*>& lanes) {
    std::size_t total = 0;
    for (const LaneRecords* lane : lanes) total += lane->size();
    std::vector<Measurement> merged;
    merged.reserve(total);
    prefault(merged.data(), total * sizeof(Measurement));
    std::vector<std::size_t> at(lanes.size(), 0);
    while (merged.size() < total) {
        std::size_t from = lanes.size();
        for (std::size_t l = 0; l < lanes.size(); ++l) {
            if (at[l] == lanes[l]->size()) continue;
            if (from == lanes.size() ||
                lanes[l]->completions_[at[l]] < lanes[from]->completions_[at[from]]) {
                from = l;
            }
        }
        merged.push_back(std::move(lanes[from]->at(at[from]++)));
    }
    return merged;
}

}  // namespace tokenradar::bench
