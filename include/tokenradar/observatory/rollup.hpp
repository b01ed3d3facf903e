#pragma once
// Rollups: what the observatory keeps of measurement records, per time bucket (minute and
// hour) x label cell x client, so any percentile over any window and label subset is a merge
// of DDSketches, never a scan of raw rows.
//
//     RollupIndex index;                         // in memory; persisted through take_dirty_hours()
//     index.add(records);                        // writer thread, after the records committed
//     auto groups = index.query({.from_us = ..., .to_us = ..., .by = {Label::provider,
//     Label::model}});
//
// Weighting (per client per bucket, as speed-test sites do): inside one bucket of one cell,
// each client (Measurement::client_id: "" for records this process measured, the submitter
// for ingested ones) gets the same total weight, and the weights add up to the bucket's
// sample count: client c with n_c of the N samples among k clients has weight N / (k n_c)
// per sample. One busy client cannot own a percentile; counts still say how many samples
// stand behind a number. The bucket is the query's resolution (an hour, or a minute for
// minute queries).
//
// Folding: a bucket takes records until `late_allowance` after its end (prune() with that
// `now` closes it); then prune() folds its client parts into one part per cell, their
// weighted merge, and drops them, so a closed bucket costs one aggregate per cell however
// many clients fed it, and answers what its parts did (the weights were fixed when it closed):
// every bucket count bit for bit, each sketch's min, max and sum rounded outward to a float
// (Aggregate::round_to_float, a relative 2^-24: no 4-digit answer moves but by a tie). Folded
// cells are kept packed (Aggregate::pack, ~0.15 KB for a cell-hour of a dozen records instead of
// ~1.6 KB as objects) and merged from their bytes (merge_packed). A record
// for a closed bucket is refused and counted (late_records()): the weights of a folded bucket
// cannot take one more client. Saved rows stay the raw per-client parts (a part changed since the
// last take_dirty_hours() is handed out when folded).
//
// Levels: minute buckets are kept for `minute_retention` (they serve short windows and
// minute time series); hour buckets for `hour_retention` (0 = for ever). Caches inside the
// index, filled by the first query that needs them after a change, kept packed
// (Aggregate::pack) and merged straight from their bytes (merge_packed): per bucket and model
// (provider + model) the weighted cells, per day and model the hours of those (queries that
// filter and group only by provider and model); for any other filter and grouping without
// time buckets ("shapes": `by=task,client_region`, a region filter) each group per day, per
// hour outside whole days, and a window's settled part (closed days and hours) as one entry,
// at most `shape_cache_bytes` of them. Weighted counts lie on a 2^-20 grid so that these
// partial sums add up to exactly what a cell-by-cell merge gives (DdSketch::merge_on_grid).
// prune() also gives back the growth room of sketches in buckets that have passed (an hour
// after its end, minutes after five).
//
// Threads: add(), take_dirty_hours(), load_hour() and prune() from one writer thread;
// query(), labels() and generation() from any number of threads at once (a shared lock:
// a long query delays the writer's next add(), never the request path).

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/observatory/cell.hpp>
#include <tokenradar/stats/ddsketch.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {

// The timed metrics a rollup keeps a sketch of (milliseconds).
enum class Metric : std::uint8_t { ttft, tpot, e2e, e2e500, overhead };
inline constexpr std::size_t kMetricCount = 5;
using MetricMask = std::uint8_t;
inline constexpr MetricMask kAllMetrics = 0x1F;
constexpr MetricMask metric_bit(Metric m) noexcept {
    return static_cast<MetricMask>(1U << static_cast<unsigned>(m));
}

// What one bucket of one cell (or a merge of many) holds.
struct Aggregate {
    std::uint64_t samples = 0;         // records (attempts), ok or not
    std::uint64_t first_attempts = 0;  // records with attempt == 1: client requests
    std::map<std::string, std::uint64_t, std::less<>> statuses;  // "ok", "http_429", ...
    std::uint64_t prompt_tokens = 0, cached_prompt_tokens = 0, output_tokens = 0,
                  reasoning_tokens = 0;
    // Indexed by Cache and Route (kCacheNames, kRouteNames). Their encoding (encode()) holds
    // one count per value, so a value added to the table needs a new encoding version.
    std::array<std::uint64_t, kCacheNames.size()> cache{};
    std::array<std::uint64_t, kRouteNames.size()> route{};
    // Successful records only (metrics.md: failures are counted, not timed), milliseconds,
    // indexed by Metric.
    std::array<stats::DdSketch, kMetricCount> sketches;

    [[nodiscard]] const stats::DdSketch& sketch(Metric m) const noexcept {
        return sketches[static_cast<std::size_t>(m)];
    }
    [[nodiscard]] std::uint64_t errors() const noexcept;  // samples - statuses["ok"]

    void add(const Measurement& m);
    // Counts add as they are; the sketches in `metrics` add with their counts times `weight`.
    void merge(const Aggregate& other, double weight = 1.0, MetricMask metrics = kAllMetrics);
    // merge()'s two halves: every count; only the sketches.
    void merge_counts(const Aggregate& other);
    void merge_sketches(const Aggregate& other, double weight = 1.0,
                        MetricMask metrics = kAllMetrics);
    // Releases the sketches' growth room (DdSketch::shrink_to_fit); changes no value.
    void shrink_to_fit();
    // DdSketch::round_to_float on every sketch: a folded cell packs 12 bytes smaller a sketch.
    void round_to_float() noexcept;

    // Versioned bytes for the store's rollup rows; decode names the field on bad input.
    [[nodiscard]] std::vector<std::uint8_t> encode() const;
    static Result<Aggregate> decode(std::span<const std::uint8_t> bytes);
    // A smaller in-memory form for folded buckets (not for storage: no version): the counts
    // as varints and the sketches packed (DdSketch::pack). unpack(pack()) == *this; unpack()
    // is for bytes pack() wrote (it reads nothing outside them but checks nothing else).
    // With `sketch_starts`: where each sketch's bytes begin in `out` (merge_packed_sketch).
    void pack(std::vector<std::uint8_t>& out,
              std::array<std::uint32_t, kMetricCount>* sketch_starts = nullptr) const;
    static Aggregate unpack(std::span<const std::uint8_t> bytes);
    // merge_sketches(unpack(bytes), 1, metrics), and merge_counts too when `counts`, without
    // building the aggregate: the same bits, no allocation (folded cells and cache entries
    // are merged this way).
    void merge_packed(std::span<const std::uint8_t> bytes, MetricMask metrics = kAllMetrics,
                      bool counts = true);
    // Only sketch `m`, from the packed sketch that starts at `sketch` (pack's sketch_starts):
    // what a merge without counts of a few sketches reads, skipping the rest.
    void merge_packed_sketch(Metric m, std::span<const std::uint8_t> sketch);

    friend bool operator==(const Aggregate&, const Aggregate&) = default;
};

enum class Resolution { minute, hour };

// Allowed values per label; an empty list allows any.
struct Filter {
    std::array<std::vector<std::string>, kCellLabelCount> allowed;

    void allow(Label label, std::string value);
    [[nodiscard]] bool matches(const CellKey& cell) const noexcept;
};

struct Query {
    std::int64_t from_us = 0;  // [from_us, to_us): bucket starts are snapped to the resolution
    std::int64_t to_us = 0;
    Resolution resolution = Resolution::hour;
    Filter filter;
    std::vector<Label> by;   // group by these labels (none: one group)
    bool by_bucket = false;  // and by bucket start (time series, heatmaps)
    // With by_bucket: buckets with equal bucket_key(start) are merged into one group, keyed
    // by the earliest of their starts (a heatmap's local hour and weekday: one group per
    // slot instead of one per hour of the window). Empty: every bucket is its own group.
    // A bucket whose key is kSkipBucket is left out unread (the status page's baselines: the
    // same hours of earlier weeks, not the weeks between them).
    std::function<std::int64_t(std::int64_t bucket_us)> bucket_key;
    MetricMask metrics = kAllMetrics;  // sketches to merge (the others stay empty): cheaper
    // Merge the counts (samples, statuses, tokens, cache, route)? Heatmaps, time series and
    // distributions read only sketch counts; without counts their groups' counts stay zero.
    bool counts = true;
};

inline constexpr std::int64_t kSkipBucket = std::numeric_limits<std::int64_t>::min();

struct GroupKey {
    std::vector<std::string> labels;  // values of Query::by, in order
    std::int64_t bucket_us = -1;      // bucket start (UTC us) when Query::by_bucket, else -1
    friend auto operator<=>(const GroupKey&, const GroupKey&) = default;
};

using Groups = std::map<GroupKey, Aggregate>;

// One persisted hour row: the raw (unweighted) aggregate of one client in one cell-hour.
struct HourRow {
    std::int64_t hour_us = 0;
    CellKey cell;
    std::string client_id;
    Aggregate aggregate;
};

// What an index holds (bench/observatory reports it).
struct IndexSize {
    std::size_t buckets = 0;         // minute and hour buckets
    std::size_t parts = 0;           // aggregates: client parts and folded cells
    std::size_t folded = 0;          // of which folded cells (closed buckets)
    std::size_t cached = 0;          // cache entries filled (models, days of models and shapes)
    std::size_t cached_bytes = 0;    // their packed aggregates
    std::size_t shape_bytes = 0;     // of which the shape caches'
    std::size_t sketch_buckets = 0;  // client parts' DDSketch buckets (8 bytes each), room included
    std::size_t folded_bytes = 0;    // the folded cells' packed aggregates
};

struct RollupOptions {
    std::chrono::hours minute_retention{6};
    std::chrono::hours hour_retention{0};  // 0 = keep
    // How long after its end a bucket still takes records (then it is folded, see Folding).
    std::chrono::minutes late_allowance{60};
    // The query shape caches (per day and hour, per group of a filter and grouping that is
    // not only provider and model) keep at most about this many bytes: prune() drops the
    // least recently used entries beyond it.
    std::size_t shape_cache_bytes = std::size_t{32} << 20;
};

class RollupIndex {
  public:
    explicit RollupIndex(RollupOptions options = {});
    ~RollupIndex();
    RollupIndex(const RollupIndex&) = delete;
    RollupIndex& operator=(const RollupIndex&) = delete;

    // Adds committed records to the minute and hour levels (minute only when the record is
    // older than minute_retention) and marks their hour rows dirty. Bumps generation(). A
    // record whose hour closed at the last prune() is refused and counted (late_records());
    // one whose minute closed goes to its hour only.
    void add(std::span<const Measurement> records);
    // Adds to the minute level only (start-up: hours already loaded from the store), closed
    // minutes included as long as they are not folded yet.
    void add_minutes_only(std::span<const Measurement> records);
    // Replaces one hour row (start-up, from the store; before the prune() that folds its
    // hour, else it is refused and counted as late). Bumps generation().
    void load_hour(HourRow row);
    // Folds the hour buckets that start before `before_us` and were closed by the last
    // prune(): RollupKeeper's load calls it each time the store's rows (in hour order) move
    // to a later hour, so a start holds one closed hour's client parts at a time, not every
    // saved row. A later load_hour() into a folded hour is refused as late.
    void fold_closed(std::int64_t before_us);
    // The hour rows changed since the last call, for the store to upsert.
    std::vector<HourRow> take_dirty_hours();
    // Drops buckets past their retention as of `now_us`, closes the buckets that ended
    // late_allowance before it and folds them (see Folding).
    void prune(std::int64_t now_us);
    // The first hour bucket prune(now_us) keeps (hour_retention; the lowest int64 when 0).
    [[nodiscard]] std::int64_t first_kept_hour(std::int64_t now_us) const noexcept;
    // Records refused because their hour bucket had closed (since the index was made).
    [[nodiscard]] std::uint64_t late_records() const;

    // Weighted merges per group; see Weighting above. Shared lock.
    [[nodiscard]] Groups query(const Query& query) const;
    // Every value each label has in [from_us, to_us) at hour resolution (filter selects).
    [[nodiscard]] std::array<std::vector<std::string>, kCellLabelCount> labels(
        std::int64_t from_us, std::int64_t to_us) const;
    // Whether any record the index holds (in any bucket, pruned ones included, since the
    // process started) had `value` for `label`, or had exactly these labels' cell; how many
    // distinct values and cells that is. Shared lock: LabelBudget's view of what is known.
    [[nodiscard]] bool has_value(Label label, std::string_view value) const;
    [[nodiscard]] bool has_cell(const Labels& labels) const;
    [[nodiscard]] std::size_t value_count(Label label) const;
    [[nodiscard]] std::size_t cell_count() const;
    [[nodiscard]] const RollupOptions& options() const noexcept;
    // Walks everything (shared lock): for benchmarks and tests, not the request path.
    [[nodiscard]] IndexSize size() const;
    // Changes whenever add()/load_hour()/prune() changed something: part of the API's ETags.
    [[nodiscard]] std::uint64_t generation() const noexcept;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

inline constexpr std::int64_t kMinuteUs = 60'000'000;
inline constexpr std::int64_t kHourUs = 3'600'000'000;
inline constexpr std::int64_t kDayUs = 24 * kHourUs;

}  // namespace tokenradar::observatory
