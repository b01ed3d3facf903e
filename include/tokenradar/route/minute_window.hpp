#pragma once
// A count over the last minute in six 10 s slots (a slot older than the minute counts
// nothing): the tokens-per-minute cap and the routing share use it. Not thread-safe: its
// owner holds the lock.

#include <algorithm>
#include <array>
#include <cstdint>

namespace tokenradar::route {

class MinuteWindow {
  public:
    void add(std::int64_t now_ns, std::int64_t n) {
        const std::int64_t slot = now_ns / kSlotNs;
        const auto i = static_cast<std::size_t>(slot % kSlots);
        if (slot_of_[i] != slot) {
            slot_of_[i] = slot;
            count_[i] = 0;
        }
        count_[i] += std::max<std::int64_t>(n, 0);
    }

    [[nodiscard]] std::int64_t sum(std::int64_t now_ns) const {
        const std::int64_t slot = now_ns / kSlotNs;
        std::int64_t total = 0;
        for (std::size_t i = 0; i < count_.size(); ++i) {
            if (slot_of_[i] > slot - kSlots) total += count_[i];
        }
        return total;
    }

  private:
    static constexpr std::int64_t kSlotNs = 10'000'000'000;
    static constexpr std::int64_t kSlots = 6;
    std::array<std::int64_t, kSlots> count_{};
    std::array<std::int64_t, kSlots> slot_of_{-1, -1, -1, -1, -1, -1};  // the 10 s slot each holds
};

}  // namespace tokenradar::route
