#include <tokenradar/observatory/rollup_keeper.hpp>

#include <tokenradar/core/clock.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

namespace tokenradar::observatory {
namespace {

using Clock = std::chrono::steady_clock;
// Records are rolled up from the store in batches of this many.
constexpr std::size_t kScanBatch = 4096;
// The longest window the dashboard's leaderboard offers: warm_caches() reads it once.
constexpr std::int64_t kWarmWindowUs = 30 * kDayUs;

// Streams records of `query` into `sink` in batches.
Result<std::size_t> scan_in_batches(store::MeasurementStore& store, const store::RecordQuery& query,
                                    const std::function<void(std::span<const Measurement>)>& sink) {
    std::vector<Measurement> batch;
    batch.reserve(kScanBatch);
    auto scanned = store.scan(query, [&](const Measurement& m) {
        batch.push_back(m);
        if (batch.size() == kScanBatch) {
            sink(batch);
            batch.clear();
        }
    });
    if (!scanned) return scanned.error();
    sink(batch);
    return *scanned;
}

}  // namespace

store::RollupRow to_store_row(const HourRow& row) {
    store::RollupRow out;
    out.hour_us = row.hour_us;
    // The store's rollup columns are the cell labels in slot order, stream (an integer) last.
    static_assert(kCellLabels.back() == Label::stream &&
                  std::tuple_size_v<decltype(out.labels)> == kCellLabelCount - 1);
    std::copy_n(row.cell.values.begin(), out.labels.size(), out.labels.begin());
    out.stream = row.cell.value(Label::stream) == "true";
    out.client_id = row.client_id;
    out.aggregate = row.aggregate.encode();
    return out;
}

Result<HourRow> from_store_row(const store::RollupRow& row) {
    auto aggregate = Aggregate::decode(row.aggregate);
    if (!aggregate) return aggregate.error();
    CellKey cell;
    std::copy(row.labels.begin(), row.labels.end(), cell.values.begin());
    cell.values.back() = kBoolValues[row.stream ? 1 : 0];
    return HourRow{row.hour_us, std::move(cell), row.client_id, std::move(*aggregate)};
}

RollupKeeper::RollupKeeper(std::shared_ptr<RollupIndex> index, RollupKeeperOptions options)
    : index_(std::move(index)), options_(std::move(options)) {
    if (!options_.now_us) options_.now_us = [] { return wall_now_us(); };
}

void RollupKeeper::started(store::MeasurementStore& store) {
    if (auto loaded = load(store); !loaded) {
        spdlog::error("observatory: loading rollups failed: {} (run tokenradar rollup --rebuild)",
                      loaded.error().message);
    }
    loaded_.store(true, std::memory_order_release);
}

Result<void> RollupKeeper::load(store::MeasurementStore& store) {
    const auto began = Clock::now();
    index_->prune(options_.now_us());  // sets the minute floor before anything is added
    std::size_t rows = 0;
    std::size_t bad_rows = 0;
    std::size_t old_rows = 0;
    std::int64_t loading_hour = std::numeric_limits<std::int64_t>::min();
    // Hours before the index's retention stay in the store only (prune() would drop them).
    const std::int64_t first_hour = index_->first_kept_hour(options_.now_us());
    auto watermark = store.load_rollups([&](store::RollupRow&& row) {
        if (row.hour_us < first_hour) {
            ++old_rows;
            return;
        }
        auto hour = from_store_row(row);
        if (!hour) {
            // One damaged row must not hide the rest; it is named so it can be rebuilt.
            if (bad_rows++ == 0)
                spdlog::warn("observatory: skipping a rollup row: {}", hour.error().message);
            return;
        }
        // Rows come in hour order: the hours before this one are whole, and the closed ones
        // fold now, so the load holds one closed hour's client parts, not every saved row.
        if (hour->hour_us > loading_hour) {
            index_->fold_closed(hour->hour_us);
            loading_hour = hour->hour_us;
        }
        index_->load_hour(std::move(*hour));
        ++rows;
    });
    if (!watermark) return watermark.error();
    // The minute level is not saved: refill it from the recent records the saved hours hold.
    store::RecordQuery recent;
    recent.from_ts_us = options_.now_us() - std::chrono::duration_cast<std::chrono::microseconds>(
                                                index_->options().minute_retention)
                                                .count();
    recent.up_to_id = *watermark;
    std::size_t minute_records = 0;
    auto filled = scan_in_batches(store, recent, [&](std::span<const Measurement> batch) {
        minute_records += batch.size();
        index_->add_minutes_only(batch);
    });
    if (!filled) return filled.error();
    // Records committed after the last save: roll them up as if just written (a shared
    // store: up to its ceiling, where following goes on).
    store::RecordQuery after;
    after.after_id = *watermark;
    if (const auto ceiling = store.follow_ceiling(options_.follow_lag)) {
        position_ = std::max(*watermark, *ceiling);
        after.up_to_id = *position_;
    }
    auto caught_up = scan_in_batches(
        store, after, [&](std::span<const Measurement> batch) { index_->add(batch); });
    if (!caught_up) return caught_up.error();
    changed_ = *caught_up > 0;
    // The last loaded hours and the minutes fold here (a closed hour's saved rows are all in).
    prune(options_.now_us());
    save(store);
    const auto loaded = Clock::now();
    warm_caches();
    const auto ms = [](Clock::duration d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    spdlog::info(
        "observatory: {} rollup rows loaded{}{}, {} newer records rolled up, {} recent "
        "records in minute buckets ({} ms; caches filled in {} ms)",
        rows, bad_rows > 0 ? fmt::format(" ({} damaged, skipped)", bad_rows) : "",
        old_rows > 0 ? fmt::format(" ({} older than the retention left in the store)", old_rows)
                     : "",
        *caught_up, minute_records, ms(loaded - began), ms(Clock::now() - loaded));
    return {};
}

// The first leaderboard after a start would fill the index's per-day and per-model caches
// itself: 3.4 s for 30 days over 10 M records (bench/README.md), a dashboard's first load.
// One query of that shape fills them before the server says it is ready; the caches hold
// whole aggregates, so reading one sketch is enough.
void RollupKeeper::warm_caches() {
    const std::int64_t now = options_.now_us();
    Query q;
    q.to_us = now - now % kHourUs + kHourUs;
    q.from_us = q.to_us - kWarmWindowUs;
    q.by = {Label::provider, Label::model};
    q.metrics = metric_bit(Metric::ttft);
    q.counts = false;
    (void)index_->query(q);
}

void RollupKeeper::written(store::MeasurementStore&, std::span<const Measurement> stored) {
    if (position_) return;  // follow() reads them back with every other node's
    index_->add(stored);
    changed_ = changed_ || !stored.empty();
}

void RollupKeeper::follow(store::MeasurementStore& store) {
    const auto ceiling = store.follow_ceiling(options_.follow_lag);
    if (!ceiling || *ceiling <= *position_) return;
    store::RecordQuery q;
    q.after_id = *position_;
    q.up_to_id = *ceiling;
    // Records of hours that have closed would be refused as late: not read (ClickHouse skips
    // the days they are in).
    q.from_ts_us = options_.now_us() - std::chrono::duration_cast<std::chrono::microseconds>(
                                           index_->options().late_allowance + std::chrono::hours(1))
                                           .count();
    auto read =
        scan_in_batches(store, q, [&](std::span<const Measurement> batch) { index_->add(batch); });
    if (!read) {
        // The position stays: the next tick reads the same records again.
        spdlog::warn("observatory: following the store: {}", read.error().message);
        return;
    }
    position_ = *ceiling;
    changed_ = changed_ || *read > 0;
}

void RollupKeeper::tick(store::MeasurementStore& store) {
    const auto now = Clock::now();
    if (position_ && now >= next_follow_) {
        follow(store);
        next_follow_ = now + options_.follow_interval;
    }
    if (now >= next_prune_) {
        prune(options_.now_us());
        next_prune_ = now + options_.prune_interval;
    }
    if (changed_ && now >= next_save_) {
        save(store);
        next_save_ = now + options_.save_interval;
    }
}

void RollupKeeper::stopping(store::MeasurementStore& store) {
    if (position_) follow(store);  // what passed the lag since the last tick
    save(store);
}

void RollupKeeper::prune(std::int64_t now_us) {
    index_->prune(now_us);
    // Refused records are stored but in no rollup: said once per prune, not per record.
    const std::uint64_t late = index_->late_records();
    if (late > late_logged_) {
        spdlog::warn(
            "observatory: {} records arrived after their hour closed (late_allowance {} min) "
            "and are not in the rollups ({} since start; tokenradar rollup --rebuild adds them)",
            late - late_logged_, index_->options().late_allowance.count(), late);
        late_logged_ = late;
    }
}

void RollupKeeper::save(store::MeasurementStore& store) {
    if (!changed_) return;
    // Every committed record is in the index (written() runs after each commit on this
    // thread), so the store's last id is the watermark of what is saved now; a followed
    // store's, the position.
    auto last = position_ ? Result<std::int64_t>(*position_) : store.last_id();
    if (!last) {
        spdlog::warn("observatory: saving rollups: {}", last.error().message);
        return;
    }
    const std::vector<HourRow> rows = index_->take_dirty_hours();
    std::vector<store::RollupRow> out;
    out.reserve(rows.size());
    for (const HourRow& row : rows) out.push_back(to_store_row(row));
    if (auto saved = store.save_rollups(out, *last); !saved) {
        // The rows stay correct in memory; the watermark did not move, so a restart rolls
        // the records up again.
        spdlog::warn("observatory: saving {} rollup rows: {}", out.size(), saved.error().message);
        return;
    }
    changed_ = false;
}

Result<std::size_t> rebuild_rollups(store::MeasurementStore& store) {
    auto last = store.last_id();
    if (!last) return last.error();
    RollupIndex index;
    store::RecordQuery upto;
    upto.up_to_id = *last;  // a record committed meanwhile is caught up at the next start
    auto read =
        scan_in_batches(store, upto, [&](std::span<const Measurement> batch) { index.add(batch); });
    if (!read) return read.error();
    if (auto cleared = store.clear_rollups(); !cleared) return cleared.error();
    std::vector<store::RollupRow> rows;
    for (const HourRow& row : index.take_dirty_hours()) rows.push_back(to_store_row(row));
    if (auto saved = store.save_rollups(rows, *last); !saved) return saved.error();
    return *read;
}

}  // namespace tokenradar::observatory
