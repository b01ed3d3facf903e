#pragma once
// Where a run keeps its records while it runs: per lane (I/O thread), without a lock, in
// fixed chunks of memory that is populated with huge pages ahead of use; merged into one list
// in completion order when the run ends.
//
// Why the memory is prepared: every request leaves an 808-byte Measurement behind, and on
// the VMs we measure on a first write to a fresh 4 KiB page costs ~15-30 us (the hypervisor
// maps it); touching 256 MiB page by page took 2.1 s, the same memory as transparent huge
// pages populated up front (MADV_HUGEPAGE + MADV_POPULATE_WRITE) 0.05 s. Elsewhere the
// advice is a no-op or a small gain. Not thread-safe: one lane's thread at a time.

#include <tokenradar/core/measurement.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace tokenradar::bench {

// Asks the kernel to back [data, data + bytes) with huge pages where 2 MiB-aligned and to
// map all of it now (so later first writes do not fault). Best effort: errors are ignored.
void prefault(void* data, std::size_t bytes) noexcept;

// A vector allocator whose blocks are 2 MiB-aligned, rounded up to 2 MiB and prefault()ed.
template <class T>
struct PrefaultedAllocator {
    using value_type = T;
    static constexpr std::size_t kHugePage = std::size_t{2} << 20;

    PrefaultedAllocator() = default;
    template <class U>
    // Implicit, as the allocator requirements ask (rebinding copies convert).
    // NOLINTNEXTLINE(google-explicit-constructor)
    PrefaultedAllocator(const PrefaultedAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = (n * sizeof(T) + kHugePage - 1) / kHugePage * kHugePage;
        void* p = ::operator new (bytes, std::align_val_t{kHugePage});
        prefault(p, bytes);
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t) noexcept {
        ::operator delete (p, std::align_val_t{kHugePage});
    }

    template <class U>
    bool operator==(const PrefaultedAllocator<U>&) const noexcept {
        return true;
    }
};

class LaneRecords {
  public:
    // `completion` orders records across lanes: it must grow within each lane.
    void add(std::uint64_t completion, Measurement&& m);
    std::size_t size() const noexcept { return completions_.size(); }

    // Moves the records of all `lanes` into one list ordered by completion; leaves the lanes'
    // records moved-from (their count unchanged).
    static std::vector<Measurement> merge(const std::vector<LaneRecords*>& lanes);

  private:
    // 4 MiB of records per chunk: records never move while the run adds more.
    static constexpr std::size_t kChunk = (std::size_t{4} << 20) / sizeof(Measurement);
    using Chunk = std::vector<Measurement, PrefaultedAllocator<Measurement>>;

    Measurement& at(std::size_t i) noexcept { return chunks_[i / kChunk][i % kChunk]; }

    std::vector<Chunk> chunks_;
    std::vector<std::uint64_t> completions_;
};

}  // namespace tokenradar::bench
