// RollupIndex: minute and hour buckets x label cell x client, weighted merges on query, and
// caches of those merges for queries. See rollup.hpp for the contract.
//
// What a query merges, cheapest first (all computed on first use after a change, then kept):
// - per day and cell, the weighted hours of the day (long windows without time buckets);
// - per bucket and model (provider + model), the weighted cells of that model, and per day and
//   model, those of the day's hours: queries that filter and group by nothing but provider
//   and model (the leaderboard, heatmaps, time series of whole models) merge 24 models per
//   hour instead of every cell and client;
// - otherwise each cell's clients, weighted, per bucket.
// Weighted counts lie on a 2^-20 grid (rollup_state.cpp), so every merged sum is exact and
// the caches answer bit for bit what a merge of every cell and client would (rollup_test).

#include "rollup_state.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace tokenradar::observatory {
namespace {

// The labels a model-level cache can answer for.
bool model_label(Label l) noexcept { return l == Label::provider || l == Label::model; }

bool model_level(const Query& q) {
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        if (!model_label(kCellLabels[i]) && !q.filter.allowed[i].empty()) return false;
    }
    return std::all_of(q.by.begin(), q.by.end(), model_label);
}

// The groups a query reads into, worked out once.
struct QueryGroups {
    std::vector<int> key_group;  // each cell's (or model's) group; -1: the filter excludes it
    std::vector<std::vector<std::string>> labels;  // each group's values of q.by
    std::vector<std::uint32_t> selected;           // the keys the filter selects
};

QueryGroups group_keys(const Query& q, const std::vector<CellKey>& cells,
                       const std::vector<ModelInfo>& models, bool by_model) {
    QueryGroups groups;
    groups.key_group.assign(by_model ? models.size() : cells.size(), -1);
    std::map<std::vector<std::string>, int> seen;
    for (std::size_t k = 0; k < groups.key_group.size(); ++k) {
        // A model stands for its first cell: only provider and model are read.
        const CellKey& cell = cells[by_model ? models[k].first_cell : k];
        if (!q.filter.matches(cell)) continue;
        std::vector<std::string> labels;
        labels.reserve(q.by.size());
        for (Label l : q.by) labels.emplace_back(cell.value(l));
        auto [it, inserted] = seen.try_emplace(labels, static_cast<int>(groups.labels.size()));
        if (inserted) groups.labels.push_back(std::move(labels));
        groups.key_group[k] = it->second;
    }
    // A query visits only the selected cells or models.
    for (std::size_t k = 0; k < groups.key_group.size(); ++k) {
        if (groups.key_group[k] >= 0) groups.selected.push_back(static_cast<std::uint32_t>(k));
    }
    return groups;
}

// The whole days [from, to) a query reads from the day caches: hour queries without time
// buckets only; an empty range otherwise.
std::pair<std::int64_t, std::int64_t> cached_days(const Query& q, std::int64_t from,
                                                  std::int64_t to) {
    if (q.resolution != Resolution::hour || q.by_bucket) return {0, 0};
    return {floor_to(from + kDayUs - 1, kDayUs), floor_to(to, kDayUs)};
}

}  // namespace

void Filter::allow(Label label, std::string value) {
    allowed[cell_slot(label)].push_back(std::move(value));
}

bool Filter::matches(const CellKey& cell) const noexcept {
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        const auto& values = allowed[i];
        if (values.empty()) continue;
        const std::string_view v = cell.value(kCellLabels[i]);
        if (std::find(values.begin(), values.end(), v) == values.end()) return false;
    }
    return true;
}

RollupIndex::RollupIndex(RollupOptions options) : state_(std::make_unique<State>(options)) {}
RollupIndex::~RollupIndex() = default;

void RollupIndex::add(std::span<const Measurement> records) {
    if (records.empty()) return;
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    const std::uint64_t late_before = s.late_records;
    for (const Measurement& m : records) {
        const std::int64_t hour = floor_to(m.ts_us, kHourUs);
        if (hour < s.closed_before[1]) {
            ++s.late_records;  // before cell_id(): a refused record brings no label value
            continue;
        }
        const CellId cell = s.cell_id(m.labels);
        const ClientId client = s.client_id(m.client_id);
        // Not folded: every folded bucket starts before closed_before.
        ClientPart& part = *s.touch(Resolution::hour, hour, cell, client);
        part.aggregate->add(m);
        if (!part.dirty) {
            part.dirty = true;
            s.dirty_hours.emplace_back(hour, cell, client);
        }
        s.touch_day(hour, cell);
        s.add_minute(m, cell, client, false);
    }
    if (s.late_records - late_before < records.size())
        s.generation.fetch_add(1, std::memory_order_release);
}

void RollupIndex::add_minutes_only(std::span<const Measurement> records) {
    if (records.empty()) return;
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    for (const Measurement& m : records)
        s.add_minute(m, s.cell_id(m.labels), s.client_id(m.client_id), true);
    s.generation.fetch_add(1, std::memory_order_release);
}

void RollupIndex::load_hour(HourRow row) {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    const CellId cell = s.cell_id(row.cell);
    const ClientId client = s.client_id(row.client_id);
    const std::int64_t hour = floor_to(row.hour_us, kHourUs);
    ClientPart* part = s.touch(Resolution::hour, hour, cell, client);
    if (part == nullptr) {
        ++s.late_records;
        return;
    }
    *part->aggregate = std::move(row.aggregate);
    s.touch_day(hour, cell);
    s.generation.fetch_add(1, std::memory_order_release);
}

void RollupIndex::fold_closed(std::int64_t before_us) {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    // Answers do not change (prune() below): no generation bump.
    s.fold(Resolution::hour, std::min(before_us, s.closed_before[1]));
}

std::vector<HourRow> RollupIndex::take_dirty_hours() {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    std::sort(s.dirty_hours.begin(), s.dirty_hours.end());  // rows in (hour, cell, client) order
    std::vector<HourRow> rows = std::move(s.folded_rows);   // older hours: folded first
    s.folded_rows.clear();
    rows.reserve(rows.size() + s.dirty_hours.size());
    for (const auto& [hour, cell, client] : s.dirty_hours) {
        const auto bucket = s.hours.find(hour);
        if (bucket == s.hours.end()) continue;  // pruned since
        if (cell >= bucket->second.cells.size()) continue;
        for (ClientPart& p : bucket->second.cells[cell]) {
            if (p.client != client || !p.dirty) continue;
            rows.push_back({hour, s.cells[cell], s.clients[client], *p.aggregate});
            p.dirty = false;
        }
    }
    s.dirty_hours.clear();
    return rows;
}

void RollupIndex::prune(std::int64_t now_us) {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    const auto erase_before = [](Level& level, std::int64_t cutoff) {
        const auto end = level.lower_bound(cutoff);
        const bool any = end != level.begin();
        level.erase(level.begin(), end);
        return any;
    };
    s.minute_floor_us = floor_to(now_us - s.options.minute_retention.count() * kHourUs, kMinuteUs);
    std::int64_t shape_cutoff = std::numeric_limits<std::int64_t>::min();
    s.forget_last_buckets();
    bool changed = erase_before(s.minutes, s.minute_floor_us);
    if (s.options.hour_retention.count() > 0) {
        const std::int64_t cutoff = first_kept_hour(now_us);
        changed = erase_before(s.hours, cutoff) || changed;
        const std::int64_t first_day = floor_to(cutoff, kDayUs);
        s.days.erase(s.days.begin(), s.days.lower_bound(first_day));
        // A day cut in two by the cutoff is rebuilt from the hours left.
        if (auto d = s.days.find(first_day); d != s.days.end()) {
            d->second.invalidate(++s.versions);
        }
        shape_cutoff = cutoff;
    }
    // Closed buckets are folded. Answers do not change (nor generation() and the caches): a
    // folded part is the weighted merge every query of its bucket made.
    const std::int64_t open_from = now_us - s.options.late_allowance.count() * kMinuteUs;
    for (const Resolution r : {Resolution::minute, Resolution::hour}) {
        const std::int64_t step = r == Resolution::minute ? kMinuteUs : kHourUs;
        std::int64_t& closed = s.closed_before[r == Resolution::minute ? 0 : 1];
        closed = std::max(closed, floor_to(open_from, step));
        s.fold(r, closed);
    }
    // Buckets that have passed rarely take more records (a late one regrows a sketch, and
    // the bucket is compacted again at the next prune): give back the sketches' growth room.
    s.compact(Resolution::minute, floor_to(now_us, kMinuteUs) - 5 * kMinuteUs);
    s.compact(Resolution::hour, floor_to(now_us, kHourUs) - kHourUs);
    s.trim_shapes(shape_cutoff);
    if (changed) s.generation.fetch_add(1, std::memory_order_release);
}

std::int64_t RollupIndex::first_kept_hour(std::int64_t now_us) const noexcept {
    const std::chrono::hours kept = state_->options.hour_retention;
    if (kept.count() == 0) return std::numeric_limits<std::int64_t>::min();
    return floor_to(now_us - kept.count() * kHourUs, kHourUs);
}

std::uint64_t RollupIndex::late_records() const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    return s.late_records;
}

Groups RollupIndex::query(const Query& q) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    const std::int64_t step = q.resolution == Resolution::minute ? kMinuteUs : kHourUs;
    const Level& level = q.resolution == Resolution::minute ? s.minutes : s.hours;
    const std::int64_t from = floor_to(q.from_us, step);
    const std::int64_t to = q.to_us;
    const bool by_model = model_level(q);

    const QueryGroups grouping = group_keys(q, s.cells, s.models, by_model);
    const std::vector<int>& key_group = grouping.key_group;
    const std::vector<std::vector<std::string>>& group_labels = grouping.labels;
    const std::vector<std::uint32_t>& selected = grouping.selected;
    Groups out;
    using Accumulators = std::vector<std::optional<Aggregate>>;  // by group
    Accumulators plain(group_labels.size());
    Accumulators* acc = &plain;  // where the bucket being read goes
    // Each group's last entry in `out`: buckets are flushed in time order, so a group's next
    // bucket goes right after it (a time series of 24 models x 720 hours inserts at a hint
    // instead of searching the map with label comparisons).
    std::vector<std::optional<Groups::iterator>> last_of(group_labels.size());
    const auto flush = [&](Accumulators& groups, std::int64_t bucket_us) {
        for (std::size_t g = 0; g < groups.size(); ++g) {
            if (!groups[g]) continue;
            GroupKey key{group_labels[g], bucket_us};
            last_of[g] = last_of[g] ? out.emplace_hint(std::next(*last_of[g]), std::move(key),
                                                       std::move(*groups[g]))
                                    : out.emplace(std::move(key), std::move(*groups[g])).first;
            groups[g].reset();
        }
    };
    // With bucket_key: accumulators per key, and the first bucket start that had it.
    std::map<std::int64_t, std::pair<std::int64_t, Accumulators>> keyed;
    const auto group_of = [&](std::uint32_t key) -> Aggregate& {
        auto& a = (*acc)[static_cast<std::size_t>(key_group[key])];
        if (!a) a.emplace();
        return *a;
    };
    const auto add_cached = [&](Aggregate& into, const CachedMerge& c) {
        merge_cached(into, c, q.metrics, q.counts);
    };
    // Any other shape without time buckets at hour resolution reads its groups per day and
    // per hour (ShapeCache): a few merges per hour or day instead of every cell.
    const bool by_shape =
        !by_model && !q.by_bucket && q.resolution == Resolution::hour && !selected.empty();
    std::shared_ptr<ShapeCache> shape;
    std::unique_lock<std::mutex> shape_lock;
    if (by_shape) {
        shape = s.shape_of(q);
        shape_lock = std::unique_lock(shape->mutex);
    }
    const auto add_entry = [&](const ShapeCache::Entry& entry) {
        for (std::size_t g = 0; g < entry.groups.size(); ++g) {
            if (entry.groups[g].empty()) continue;
            auto& a = plain[g];
            if (!a) a.emplace();
            a->merge_packed(entry.groups[g], q.metrics, q.counts);
        }
    };
    const auto add_bucket = [&](const Bucket& bucket) {
        for (std::uint32_t key : selected) {
            if (by_model) {
                if (const ModelSlot* slot = find_at(bucket.models, key)) {
                    add_cached(group_of(key), s.merged(bucket, *slot));
                }
            } else if (bucket.has(key)) {
                merge_cell(group_of(key), bucket, key, q.metrics, q.counts);
            }
        }
    };

    const auto [days_from, days_to] = cached_days(q, from, to);
    if (by_shape) {
        // The days and the hours outside them, in time order; the leading settled ones come
        // from the window entry, the others from their own entries (open hours: their cells).
        struct Unit {
            std::int64_t start;
            std::uint64_t version;
            const Bucket* hour;  // null: a day
            bool settled;
        };
        std::vector<Unit> units;
        const auto add_hours = [&](std::int64_t a, std::int64_t b) {
            for (auto it = level.lower_bound(a); it != level.end() && it->first < b; ++it)
                units.push_back({it->first, it->second.version, &it->second, it->second.folded});
        };
        const bool days = days_from < days_to;
        add_hours(from, days ? std::min(days_from, to) : to);
        if (days) {
            for (auto d = s.days.lower_bound(days_from); d != s.days.end() && d->first < days_to;
                 ++d) {
                units.push_back({d->first, d->second.version, nullptr,
                                 d->first + kDayUs <= s.closed_before[1]});
            }
            add_hours(std::max(days_to, from), to);
        }
        std::size_t settled = 0;
        while (settled < units.size() && units[settled].settled) ++settled;
        const auto unit_entry = [&](const Unit& u) -> const ShapeCache::Entry& {
            return s.shape_entry(*shape, u.hour ? shape->hours : shape->days, u.start,
                                 u.hour ? kHourUs : kDayUs, u.version, key_group, selected,
                                 plain.size());
        };
        if (settled > 0) {
            ShapeCache::Entry& window = shape->windows[from];
            window.used = shape->last_used.load(std::memory_order_relaxed);
            bool same = window.units.size() == settled;
            for (std::size_t i = 0; same && i < settled; ++i) {
                same = window.units[i] == std::pair(units[i].start, units[i].version);
            }
            if (!same) {
                std::vector<std::optional<Aggregate>> merged(plain.size());
                window.units.clear();
                for (std::size_t i = 0; i < settled; ++i) {
                    const ShapeCache::Entry& e = unit_entry(units[i]);
                    for (std::size_t g = 0; g < e.groups.size(); ++g) {
                        if (e.groups[g].empty()) continue;
                        if (!merged[g]) merged[g].emplace();
                        merged[g]->merge_packed(e.groups[g]);
                    }
                    window.units.emplace_back(units[i].start, units[i].version);
                }
                for (const auto& group : window.groups) shape->bytes -= group.capacity();
                window.groups.assign(plain.size(), {});
                for (std::size_t g = 0; g < merged.size(); ++g) {
                    if (!merged[g]) continue;
                    merged[g]->pack(window.groups[g]);
                    window.groups[g].shrink_to_fit();
                    shape->bytes += window.groups[g].capacity();
                }
            }
            add_entry(window);
        }
        for (std::size_t i = settled; i < units.size(); ++i) {
            if (units[i].hour != nullptr && !units[i].hour->folded) {
                add_bucket(*units[i].hour);  // open: its clients change with every record
            } else {
                add_entry(unit_entry(units[i]));
            }
        }
        flush(plain, -1);
        return out;
    }
    for (auto it = level.lower_bound(from); it != level.end() && it->first < to; ++it) {
        if (it->first >= days_from && it->first < days_to) {
            it = std::prev(level.lower_bound(days_to));
            continue;
        }
        if (q.by_bucket && q.bucket_key) {
            const std::int64_t group_key = q.bucket_key(it->first);
            if (group_key == kSkipBucket) continue;
            auto [k, inserted] = keyed.try_emplace(group_key);
            if (inserted) k->second = {it->first, Accumulators(group_labels.size())};
            acc = &k->second.second;
        }
        add_bucket(it->second);
        if (q.by_bucket && !q.bucket_key) flush(plain, it->first);
    }
    for (auto& [key, first_and_groups] : keyed) {
        flush(first_and_groups.second, first_and_groups.first);
    }
    const auto first_day = s.days.lower_bound(days_from);
    const bool any_day = first_day != s.days.end() && first_day->first < days_to;
    if (any_day && by_model) {
        for (auto day = first_day; day != s.days.end() && day->first < days_to; ++day) {
            for (std::uint32_t key : selected) {
                const CachedMerge* entry = find_at(day->second.models, key);
                if (entry == nullptr) continue;
                const CachedMerge& c = s.merged_day_model(day->first, key, *entry);
                if (c.present) add_cached(group_of(key), c);
            }
        }
    }
    if (!q.by_bucket) flush(plain, -1);
    return out;
}

std::array<std::vector<std::string>, kCellLabelCount> RollupIndex::labels(
    std::int64_t from_us, std::int64_t to_us) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    std::vector<bool> seen(s.cells.size(), false);
    for (auto it = s.hours.lower_bound(floor_to(from_us, kHourUs));
         it != s.hours.end() && it->first < to_us; ++it) {
        for (CellId c = 0; c < s.cells.size(); ++c) {
            if (it->second.has(c)) seen[c] = true;
        }
    }
    std::array<std::set<std::string, std::less<>>, kCellLabelCount> sets;
    for (std::size_t c = 0; c < s.cells.size(); ++c) {
        if (!seen[c]) continue;
        for (std::size_t i = 0; i < kCellLabelCount; ++i)
            sets[i].emplace(s.cells[c].value(kCellLabels[i]));
    }
    std::array<std::vector<std::string>, kCellLabelCount> out;
    for (std::size_t i = 0; i < kCellLabelCount; ++i) out[i].assign(sets[i].begin(), sets[i].end());
    return out;
}

bool RollupIndex::has_value(Label label, std::string_view value) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    const auto& values = s.values[cell_slot(label)];
    return values.find(value) != values.end();
}

bool RollupIndex::has_cell(const Labels& labels) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    return s.find_cell(labels).has_value();
}

std::size_t RollupIndex::value_count(Label label) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    return s.values[cell_slot(label)].size();
}

std::size_t RollupIndex::cell_count() const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    return s.cells.size();
}

const RollupOptions& RollupIndex::options() const noexcept { return state_->options; }

IndexSize RollupIndex::size() const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    IndexSize size;
    const auto count = [&](const Aggregate& a) {
        for (const stats::DdSketch& sketch : a.sketches) {
            size.sketch_buckets += sketch.allocated_buckets();
        }
    };
    const auto count_cached = [&](const CachedMerge& c) {
        if (!c.fresh.load(std::memory_order_acquire)) return;
        ++size.cached;
        size.cached_bytes += c.packed.capacity();
    };
    for (const Level* level : {&s.minutes, &s.hours}) {
        for (const auto& [start, bucket] : *level) {
            ++size.buckets;
            if (bucket.folded) {
                const std::size_t n = bucket.folded_cells.count();
                size.parts += n;
                size.folded += n;
                size.folded_bytes += bucket.folded_cells.bytes.capacity();
            }
            for (const CellBucket& parts : bucket.cells) {
                size.parts += parts.size();
                for (const ClientPart& p : parts) count(*p.aggregate);
            }
            for (const auto& slot : bucket.models) {
                if (slot) count_cached(slot->merged);
            }
        }
    }
    for (const auto& [start, day] : s.days) {
        for (const auto& entry : day.models) {
            if (entry) count_cached(*entry);
        }
    }
    std::lock_guard shapes_lock(s.shape_mutex);
    for (const auto& [key, shape] : s.shapes) {
        std::lock_guard shape_lock(shape->mutex);
        size.cached += shape->days.size() + shape->hours.size() + shape->windows.size();
        size.cached_bytes += shape->bytes;
        size.shape_bytes += shape->bytes;
    }
    return size;
}

std::uint64_t RollupIndex::generation() const noexcept {
    return state_->generation.load(std::memory_order_acquire);
}

}  // namespace tokenradar::observatory
