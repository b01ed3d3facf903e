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
// A store that other nodes write too (ClickHouse: MeasurementStore::follow_ceiling) is
// followed instead: every follow_interval the index takes the records stored since its
// position up to follow_lag ago, this node's own included (written() adds nothing), so every
// node on the database answers for every record, and what an index holds is exactly the
// records up to its position, the watermark it saves (the furthest node's rows win).
// `rebuild_rollups` (tokenradar rollup --rebuild) clears the saved rows so the next start
// recomputes everything from the raw records.

#include <tokenradar/core/error.hpp>
#include <tokenradar/observatory/rollup.hpp>
#include <tokenradar/store/batch_writer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace tokenradar::observatory {

struct RollupKeeperOptions {
    std::chrono::milliseconds save_interval{1000};
    std::chrono::milliseconds prune_interval{60'000};
    // Following a shared store: how often, and how far behind the clock (an insert slower
    // than that, or a node's clock behind by more, is missed until rollup --rebuild).
    std::chrono::milliseconds follow_interval{1'000};
    std::chrono::milliseconds follow_lag{10'000};
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
    // Adds the records after position_ up to the store's ceiling (a shared store).
    void follow(store::MeasurementStore& store);

    std::shared_ptr<RollupIndex> index_;
    RollupKeeperOptions options_;
    std::chrono::steady_clock::time_point next_save_{};
    std::chrono::steady_clock::time_point next_prune_{};
    std::chrono::steady_clock::time_point next_follow_{};
    // Following a shared store: every record up to this id is in the index, none after it.
    std::optional<std::int64_t> position_;
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
