#pragma once
// RollupIndex's insides (rollup.cpp answers queries with them, rollup_state.cpp keeps them):
// the buckets of raw per-client aggregates, and the caches of weighted merges queries read.
//
// Threads: everything is changed only under the index's unique lock (add, load_hour, prune).
// Queries hold the shared lock and read; what they write is cache entries: a stale model
// entry they refill under `fill_mutex` (double-checked: `fresh` is read with acquire, set
// with release after the entry is written), so warm model-level queries never wait for each
// other; a query shape's entries they read and fill under that shape's mutex (ShapeCache).

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

// A weighted merge kept for queries; stale after any change to what it merges. Kept as
// Aggregate::pack() bytes (a third of the object with its dense sketch arrays) and merged
// straight from them (Aggregate::merge_packed).
struct CachedMerge {
    void invalidate() noexcept { fresh.store(false, std::memory_order_relaxed); }

    mutable std::vector<std::uint8_t> packed;
    mutable std::array<std::uint32_t, kMetricCount> sketch_starts{};  // in `packed`
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
    std::uint64_t version = 0;                       // new at every change (State::touch)
    bool loose = false;                              // sketches grew since the last compaction
    bool folded = false;  // closed: cells moved to folded_cells, takes no more records

    [[nodiscard]] bool has(CellId cell) const noexcept {
        return folded ? folded_cells.has(cell) : cell < cells.size() && !cells[cell].empty();
    }
};
using Level = std::map<std::int64_t, Bucket>;  // bucket start -> cells

// The weighted merges of whole days per model (an entry for every model with an hour in the
// day), and the day's version: any change to one of its hours gives it a new one (the shape
// caches below compare it).
struct Day {
    void invalidate(std::uint64_t new_version) noexcept;

    std::vector<std::unique_ptr<CachedMerge>> models;  // by ModelId
    std::uint64_t version = 0;
};

// Weighted merges per group of one query shape (a filter and a grouping that are not only
// provider and model: `by=task,client_region`, a region filter) for windows without time
// buckets: per whole day, and per hour for the hours a window reads outside whole days, so a
// 30-day window merges ~55 entries of a few groups instead of every cell of every hour. The
// groups are group_keys()'s for the cells there were when it was made (a new cell makes a new
// shape). An entry is fresh while its day's or bucket's version is unchanged. Filled and read
// under `mutex`; prune() drops the least recently used entries beyond
// RollupOptions::shape_cache_bytes.
//
// Windows: a query's leading settled part (closed hours and days, in time order: what can no
// longer change) is also kept merged as one entry per window start, with the start and
// version of every day and hour it merged, so a warm 30-day query merges one entry and the
// open hours. Any change to one of those (a load_hour, a prune that cuts a day) or a window
// that settled one more hour rebuilds it from the day and hour entries.
struct ShapeCache {
    struct Entry {
        std::uint64_t version = 0;  // of the Day or Bucket when filled; 0: never
        std::uint64_t used = 0;     // the shape's last_used when last read
        std::vector<std::vector<std::uint8_t>> groups;  // packed; empty: no records
        // Windows only: (start, version) of each day and hour merged.
        std::vector<std::pair<std::int64_t, std::uint64_t>> units;
    };

    std::mutex mutex;
    std::size_t cell_count = 0;
    // State::shape_clock at the last query (set under shape_mutex, read under `mutex`).
    std::atomic<std::uint64_t> last_used{0};
    std::size_t bytes = 0;  // of the entries' groups
    std::map<std::int64_t, Entry> days;
    std::map<std::int64_t, Entry> hours;
    std::map<std::int64_t, Entry> windows;  // by window start
};

// The entry at `id`, created (stale) when missing.
CachedMerge& entry_at(std::vector<std::unique_ptr<CachedMerge>>& entries, std::uint32_t id);
// The entry at `id`, or null.
template <class T>
const T* find_at(const std::vector<std::unique_ptr<T>>& entries, std::uint32_t id) noexcept {
    return id < entries.size() ? entries[id].get() : nullptr;
}

// Adds `cached` (filled, present) into `into`: the sketches in `metrics`, the counts too when
// `counts`.
inline void merge_cached(Aggregate& into, const CachedMerge& cached, MetricMask metrics,
                         bool counts) {
    if (counts) {
        into.merge_packed(cached.packed, metrics, counts);
        return;
    }
    // Heatmaps and time series: one or two sketches, found without reading the others.
    const std::span<const std::uint8_t> bytes(cached.packed);
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if ((metrics & (1U << i)) == 0) continue;
        into.merge_packed_sketch(static_cast<Metric>(i), bytes.subspan(cached.sketch_starts[i]));
    }
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
    // Marks the day caches of the hour's day stale for the cell's model, and gives the day a
    // new version (the shape caches).
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
    const CachedMerge& merged_day_model(std::int64_t day_us, ModelId model,
                                        const CachedMerge& entry) const;
    // The shape cache of a query's filter and grouping (made when missing, or when cells were
    // added since); least recently used shapes beyond kMaxShapes are dropped.
    std::shared_ptr<ShapeCache> shape_of(const Query& q) const;
    // The entry at `start` of `entries` (a shape's days or hours), refilled first when its
    // version is not `version`: each group's weighted merge of the hours in
    // [start, start + span), cells grouped by `key_group` (-1: not selected). The shape's
    // mutex is held.
    const ShapeCache::Entry& shape_entry(ShapeCache& shape,
                                         std::map<std::int64_t, ShapeCache::Entry>& entries,
                                         std::int64_t start, std::int64_t span,
                                         std::uint64_t version, const std::vector<int>& key_group,
                                         const std::vector<std::uint32_t>& selected,
                                         std::size_t groups) const;
    // Drops shape cache entries of hours before `cutoff_us` (pruned), then the least recently
    // used ones while all of them hold more than shape_cache_bytes. Unique lock held.
    void trim_shapes(std::int64_t cutoff_us);

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
    // The last version given to a day or bucket: one counter, so no two are ever equal.
    std::uint64_t versions = 0;
    mutable std::recursive_mutex fill_mutex;  // a day-model fill refills model slots
    // Shape caches by filter and grouping (shape_key); the map under shape_mutex, each
    // shape's days under its own mutex (shared_ptr: a shape dropped while a query reads it).
    static constexpr std::size_t kMaxShapes = 64;
    mutable std::mutex shape_mutex;
    mutable std::map<std::string, std::shared_ptr<ShapeCache>, std::less<>> shapes;
    mutable std::uint64_t shape_clock = 0;
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
