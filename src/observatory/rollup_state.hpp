#pragma once
// RollupIndex's insides (rollup.cpp answers queries with them, rollup_state.cpp keeps them):
// the buckets of raw per-client aggregates, and the caches of weighted merges queries read.
//
// Threads: everything is changed only under the index's unique lock (add, load_hour, prune).
// Queries hold the shared lock and read; the one thing they write is a stale cache entry,
// which they refill under `fill_mutex` (double-checked: `fresh` is read with acquire, set
// with release after the entry is written), so warm queries never wait for each other.

#include <tokenradar/observatory/rollup.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tokenradar::observatory {

using CellId = std::uint32_t;
using ClientId = std::uint32_t;
using ModelId = std::uint32_t;  // a (provider, model) pair

inline std::int64_t floor_to(std::int64_t t, std::int64_t step) {
    const std::int64_t q = t / step;
    return (q * step > t ? q - 1 : q) * step;
}

// One client's raw aggregate in one bucket of one cell. Behind a pointer so that a bucket's
// list grows without moving aggregates (and keeps no spare ~700-byte slots).
struct ClientPart {
    explicit ClientPart(ClientId id) : client(id), aggregate(std::make_unique<Aggregate>()) {}
    ClientId client;
    bool dirty = false;  // hour level: changed since the last take_dirty_hours()
    std::unique_ptr<Aggregate> aggregate;
};
using CellBucket = std::vector<ClientPart>;  // almost always a handful of clients

// A weighted merge kept for queries; stale after any change to what it merges.
struct CachedMerge {
    void invalidate() noexcept { fresh.store(false, std::memory_order_relaxed); }

    // Allocated by the first fill: a day holds an entry per cell and model with records, and
    // most are never read (only queries filtering by region or task read day cells).
    mutable std::unique_ptr<Aggregate> aggregate;
    mutable bool present = false;  // the fill found data (a day cut by pruning may have none)
    mutable std::atomic<bool> fresh{false};
};

// The cells of one model in one bucket, and their weighted merge.
struct ModelSlot {
    std::vector<CellId> cells;
    CachedMerge merged;
};

// A closed bucket's cells, each the weighted merge of its clients (what merge_weighted gave),
// as Aggregate::pack() bytes back to back: ~0.2 KB a cell-hour of a few records where the
// Aggregate object with its sketch arrays held ~1.6 KB. Unpacked (exactly: every count, sum,
// min and max bit for bit) each time a query or cache fill merges it.
struct FoldedCells {
    [[nodiscard]] bool has(CellId cell) const noexcept {
        return cell < ends.size() && ends[cell] != (cell == 0 ? 0 : ends[cell - 1]);
    }
    [[nodiscard]] std::span<const std::uint8_t> of(CellId cell) const noexcept {
        const std::uint32_t begin = cell == 0 ? 0 : ends[cell - 1];
        return {bytes.data() + begin, ends[cell] - begin};
    }
    [[nodiscard]] std::size_t count() const noexcept;  // cells with records

    std::vector<std::uint8_t> bytes;
    std::vector<std::uint32_t> ends;  // by CellId: where its bytes end (begin: the previous end)
};

// Indexed by id (dense: a few hundred cells, a few dozen models), so a query visits only the
// cells or models it selects, without hashing or chasing a node per entry.
struct Bucket {
    // Open buckets: by CellId, each client's part; empty: no records. Folded: empty.
    std::vector<CellBucket> cells;
    std::vector<std::unique_ptr<ModelSlot>> models;  // by ModelId; null: no records
    FoldedCells folded_cells;                        // folded buckets only (packed)
    bool loose = false;                              // sketches grew since the last compaction
    bool folded = false;  // closed: cells moved to folded_cells, takes no more records

    [[nodiscard]] bool has(CellId cell) const noexcept {
        return folded ? folded_cells.has(cell) : cell < cells.size() && !cells[cell].empty();
    }
};
using Level = std::map<std::int64_t, Bucket>;  // bucket start -> cells

// The weighted merges of whole days, per cell and per model; an entry exists for every cell
// and model with an hour in the day.
struct Day {
    void invalidate() noexcept;

    std::vector<std::unique_ptr<CachedMerge>> cells;   // by CellId
    std::vector<std::unique_ptr<CachedMerge>> models;  // by ModelId
};

// The entry at `id`, created (stale) when missing.
CachedMerge& entry_at(std::vector<std::unique_ptr<CachedMerge>>& entries, std::uint32_t id);
// The entry at `id`, or null.
template <class T>
const T* find_at(const std::vector<std::unique_ptr<T>>& entries, std::uint32_t id) noexcept {
    return id < entries.size() ? entries[id].get() : nullptr;
}

// Adds one bucket of one cell into `into`, each client weighted to the same share of every
// sketch (rollup.hpp, Weighting); the counts too when `counts`.
void merge_weighted(Aggregate& into, const CellBucket& bucket, MetricMask metrics, bool counts);
// merge_weighted of one cell of a bucket, folded or open; the cell must have records (has()).
void merge_cell(Aggregate& into, const Bucket& bucket, CellId cell, MetricMask metrics,
                bool counts);

// Lets the value sets be searched with a string_view.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

struct ModelInfo {
    CellId first_cell;  // its provider and model are the model's
};

struct RollupIndex::State {
    explicit State(RollupOptions o) : options(o) {}

    CellId cell_id(const Labels& labels);
    CellId cell_id(const CellKey& key);
    [[nodiscard]] std::optional<CellId> find_cell(const Labels& labels) const;
    ClientId client_id(const std::string& client);
    // The part of `client` in `cell` at `bucket_us`, created when missing; marks what merges
    // it stale (the bucket's model slot; days are touch_day's). Null when the bucket is folded.
    ClientPart* touch(Resolution resolution, std::int64_t bucket_us, CellId cell, ClientId client);
    // Marks the day caches of the hour's day stale for the cell and its model.
    void touch_day(std::int64_t hour_us, CellId cell);
    // `loading`: closed minutes too (the start-up refill), as long as they are not folded.
    void add_minute(const Measurement& m, CellId cell, ClientId client, bool loading);
    // Folds the buckets that started before `before_us` (Folding in rollup.hpp); hands the
    // dirty parts of folded hours to `folded_rows` first.
    void fold(Resolution resolution, std::int64_t before_us);
    // shrink_to_fit on the aggregates of buckets that started before `before_us` and changed
    // since their last compaction.
    void compact(Resolution resolution, std::int64_t before_us);
    void forget_last_buckets() noexcept {
        last_bucket = {};
        last_day = nullptr;
    }

    // The cache entries, refilled first when stale (shared lock held).
    const CachedMerge& merged(const Bucket& bucket, const ModelSlot& slot) const;
    const CachedMerge& merged_day_cell(std::int64_t day_us, CellId cell,
                                       const CachedMerge& entry) const;
    const CachedMerge& merged_day_model(std::int64_t day_us, ModelId model,
                                        const CachedMerge& entry) const;

    const RollupOptions options;
    mutable std::shared_mutex mutex;
    std::vector<CellKey> cells;
    // Every value each label has in `cells` (LabelBudget asks what is known).
    std::array<std::unordered_set<std::string, StringHash, std::equal_to<>>, kCellLabelCount>
        values;
    std::vector<ModelId> cell_model;
    std::unordered_multimap<std::uint64_t, CellId> cell_index;  // by hash of the labels
    std::vector<ModelInfo> models;
    std::map<std::pair<std::string, std::string>, ModelId> model_ids;
    std::vector<std::string> clients;
    std::unordered_map<std::string, ClientId> client_ids;
    Level minutes;
    Level hours;
    std::int64_t minute_floor_us = std::numeric_limits<std::int64_t>::min();
    // Buckets that start before these are closed (by Resolution: minute, hour).
    std::array<std::int64_t, 2> closed_before{std::numeric_limits<std::int64_t>::min(),
                                              std::numeric_limits<std::int64_t>::min()};
    std::uint64_t late_records = 0;
    // Dirty hour parts folded before take_dirty_hours() took them.
    std::vector<HourRow> folded_rows;
    // Hour parts changed since take_dirty_hours() (each once: ClientPart::dirty).
    std::vector<std::tuple<std::int64_t, CellId, ClientId>> dirty_hours;
    std::map<std::int64_t, Day> days;
    mutable std::recursive_mutex fill_mutex;  // a day-model fill refills model slots
    std::atomic<std::uint64_t> generation{0};

    // Records come in time order: the last bucket (minute, hour) and day are the likely next.
    // Pointers into the maps, valid until prune() erases (which forgets them).
    struct LastBucket {
        std::int64_t start = std::numeric_limits<std::int64_t>::min();
        Bucket* bucket = nullptr;
    };
    std::array<LastBucket, 2> last_bucket{};
    std::int64_t last_day_start = std::numeric_limits<std::int64_t>::min();
    Day* last_day = nullptr;

  private:
    template <class Fill>
    const CachedMerge& fill_if_stale(const CachedMerge& entry, Fill&& fill) const;
    Level& level(Resolution r) noexcept { return r == Resolution::minute ? minutes : hours; }
};

}  // namespace tokenradar::observatory
