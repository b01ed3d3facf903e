#pragma once
// Keeps a RollupIndex in step with the store, on the store's writer thread (a
// store::WriteListener given to the BatchWriter):
// - started: loads the saved rollup rows, then rolls up the records stored after their
//   watermark (a crash between a commit and the next save loses no rollup) and fills the
//   minute level from the recent records;
// - written: adds each committed batch;
// - tick: saves the changed hour rows with the new watermark at most every save_interval,
//   and prunes every minute (retention, and folding the buckets that closed; records refused
//   as late since the last prune are logged);
// - stopping: saves what changed.
// `rebuild_rollups` (tokenradar rollup --rebuild) clears the saved rows so the next start
// recomputes everything from the raw records.

#include <tokenradar/core/error.hpp>
#include <tokenradar/observatory/rollup.hpp>
#include <tokenradar/store/batch_writer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace tokenradar::observatory {

struct RollupKeeperOptions {
    std::chrono::milliseconds save_interval{1000};
    std::chrono::milliseconds prune_interval{60'000};
    // Wall clock in UTC microseconds (tests pass their own).
    std::function<std::int64_t()> now_us;
};

class RollupKeeper final : public store::WriteListener {
  public:
    explicit RollupKeeper(std::shared_ptr<RollupIndex> index, RollupKeeperOptions options = {});

    void started(store::MeasurementStore& store) override;
    void written(store::MeasurementStore& store, std::span<const Measurement> stored) override;
    void tick(store::MeasurementStore& store) override;
    void stopping(store::MeasurementStore& store) override;

    // True once started() has loaded everything (readiness of the query API).
    [[nodiscard]] bool loaded() const noexcept { return loaded_.load(std::memory_order_acquire); }

  private:
    Result<void> load(store::MeasurementStore& store);
    void save(store::MeasurementStore& store);
    void prune(std::int64_t now_us);
    void warm_caches();

    std::shared_ptr<RollupIndex> index_;
    RollupKeeperOptions options_;
    std::chrono::steady_clock::time_point next_save_{};
    std::chrono::steady_clock::time_point next_prune_{};
    bool changed_ = false;
    std::uint64_t late_logged_ = 0;
    std::atomic<bool> loaded_{false};
};

// Rolls up every stored record from scratch: clears the saved rows, recomputes them and
// saves them with the store's last id as watermark. Returns how many records it read.
Result<std::size_t> rebuild_rollups(store::MeasurementStore& store);

// The store's form of an hour row and back.
store::RollupRow to_store_row(const HourRow& row);
Result<HourRow> from_store_row(const store::RollupRow& row);

}  // namespace tokenradar::observatory
