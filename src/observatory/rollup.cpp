// RollupIndex: minute and hour buckets x label cell x client, weighted merges on query, and a
// lazily rebuilt cache of whole days for long windows. See rollup.hpp for the contract.

#include <tokenradar/observatory/rollup.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

namespace tokenradar::observatory {
namespace {

using CellId = std::uint32_t;
using ClientId = std::uint32_t;

std::int64_t floor_to(std::int64_t t, std::int64_t step) {
    const std::int64_t q = t / step;
    return (q * step > t ? q - 1 : q) * step;
}

// One client's raw aggregate in one bucket of one cell. Almost always one entry per bucket.
struct ClientPart {
    explicit ClientPart(ClientId id) : client(id) {}
    ClientId client;
    Aggregate aggregate;
};
using CellBucket = std::vector<ClientPart>;
using BucketCells = std::unordered_map<CellId, CellBucket>;
using Level = std::map<std::int64_t, BucketCells>;  // bucket start -> cells

Aggregate& part_of(CellBucket& bucket, ClientId client) {
    for (ClientPart& p : bucket) {
        if (p.client == client) return p.aggregate;
    }
    return bucket.emplace_back(client).aggregate;
}

// Adds one bucket of one cell into `into`, each client weighted to the same share of every
// sketch (rollup.hpp, Weighting).
void merge_weighted(Aggregate& into, const CellBucket& bucket, MetricMask metrics) {
    if (bucket.size() == 1) {
        into.merge(bucket.front().aggregate, 1.0, metrics);
        return;
    }
    for (const ClientPart& p : bucket) into.merge(p.aggregate, 1.0, 0);  // counts only
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if ((metrics & (1U << i)) == 0) continue;
        double total = 0;
        double clients = 0;
        for (const ClientPart& p : bucket) {
            const double n = p.aggregate.sketches[i].count();
            total += n;
            clients += n > 0 ? 1 : 0;
        }
        for (const ClientPart& p : bucket) {
            const double n = p.aggregate.sketches[i].count();
            if (n > 0) [[maybe_unused]] auto merged = into.sketches[i].merge(p.aggregate.sketches[i], total / (clients * n));
        }
    }
}

}  // namespace

void Filter::allow(Label label, std::string value) {
    allowed[static_cast<std::size_t>(label)].push_back(std::move(value));
}

bool Filter::matches(const CellKey& cell) const noexcept {
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        const auto& values = allowed[i];
        if (values.empty()) continue;
        const std::string_view v = cell.value(kAllLabels[i]);
        if (std::find(values.begin(), values.end(), v) == values.end()) return false;
    }
    return true;
}

struct RollupIndex::State {
    explicit State(RollupOptions o) : options(o) {}

    CellId cell_id(const Labels& labels) {
        CellKey key = CellKey::of(labels);
        if (last_cell && cells[*last_cell] == key) return *last_cell;
        auto [it, inserted] = cell_ids.try_emplace(std::move(key), static_cast<CellId>(cells.size()));
        if (inserted) cells.push_back(it->first);
        last_cell = it->second;
        return it->second;
    }
    CellId cell_id(const CellKey& key) {
        auto [it, inserted] = cell_ids.try_emplace(key, static_cast<CellId>(cells.size()));
        if (inserted) cells.push_back(it->first);
        return it->second;
    }
    ClientId client_id(const std::string& client) {
        auto [it, inserted] = client_ids.try_emplace(client, static_cast<ClientId>(clients.size()));
        if (inserted) clients.push_back(client);
        return it->second;
    }

    void add_minute(const Measurement& m, CellId cell, ClientId client) {
        const std::int64_t minute = floor_to(m.ts_us, kMinuteUs);
        if (minute < minute_floor_us) return;
        part_of(minutes[minute][cell], client).add(m);
    }

    void mark_day_dirty(std::int64_t hour_us, CellId cell) {
        auto day = days.find(floor_to(hour_us, kDayUs));
        if (day == days.end()) return;  // never computed: nothing stale
        auto entry = day->second.find(cell);
        if (entry != day->second.end()) entry->second.dirty = true;
    }

    // The weighted day aggregate of one cell, rebuilt from its hours when stale. Called with
    // the shared lock held and day_mutex locked.
    const Aggregate& day_aggregate(std::int64_t day_us, CellId cell) const {
        DayEntry& entry = days[day_us][cell];
        if (entry.dirty) {
            entry.aggregate = Aggregate();
            for (auto h = hours.lower_bound(day_us); h != hours.end() && h->first < day_us + kDayUs; ++h) {
                if (auto c = h->second.find(cell); c != h->second.end()) {
                    merge_weighted(entry.aggregate, c->second, kAllMetrics);
                }
            }
            entry.dirty = false;
        }
        return entry.aggregate;
    }

    const RollupOptions options;
    mutable std::shared_mutex mutex;
    std::vector<CellKey> cells;
    std::map<CellKey, CellId> cell_ids;
    std::optional<CellId> last_cell;
    std::vector<std::string> clients;
    std::unordered_map<std::string, ClientId> client_ids;
    Level minutes;
    Level hours;
    std::int64_t minute_floor_us = std::numeric_limits<std::int64_t>::min();
    std::set<std::tuple<std::int64_t, CellId, ClientId>> dirty_hours;

    struct DayEntry {
        Aggregate aggregate;
        bool dirty = true;
    };
    mutable std::mutex day_mutex;  // guards days while queries share the state lock
    mutable std::map<std::int64_t, std::unordered_map<CellId, DayEntry>> days;

    std::atomic<std::uint64_t> generation{0};
};

RollupIndex::RollupIndex(RollupOptions options) : state_(std::make_unique<State>(options)) {}
RollupIndex::~RollupIndex() = default;

void RollupIndex::add(std::span<const Measurement> records) {
    if (records.empty()) return;
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    for (const Measurement& m : records) {
        const CellId cell = s.cell_id(m.labels);
        const ClientId client = s.client_id(m.client_id);
        const std::int64_t hour = floor_to(m.ts_us, kHourUs);
        part_of(s.hours[hour][cell], client).add(m);
        s.dirty_hours.emplace(hour, cell, client);
        s.mark_day_dirty(hour, cell);
        s.add_minute(m, cell, client);
    }
    s.generation.fetch_add(1, std::memory_order_release);
}

void RollupIndex::add_minutes_only(std::span<const Measurement> records) {
    if (records.empty()) return;
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    for (const Measurement& m : records) s.add_minute(m, s.cell_id(m.labels), s.client_id(m.client_id));
    s.generation.fetch_add(1, std::memory_order_release);
}

void RollupIndex::load_hour(HourRow row) {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    const CellId cell = s.cell_id(row.cell);
    const ClientId client = s.client_id(row.client_id);
    const std::int64_t hour = floor_to(row.hour_us, kHourUs);
    part_of(s.hours[hour][cell], client) = std::move(row.aggregate);
    s.mark_day_dirty(hour, cell);
    s.generation.fetch_add(1, std::memory_order_release);
}

std::vector<HourRow> RollupIndex::take_dirty_hours() {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    std::vector<HourRow> rows;
    rows.reserve(s.dirty_hours.size());
    for (const auto& [hour, cell, client] : s.dirty_hours) {
        const auto bucket = s.hours.find(hour);
        if (bucket == s.hours.end()) continue;  // pruned since
        const auto parts = bucket->second.find(cell);
        if (parts == bucket->second.end()) continue;
        for (const ClientPart& p : parts->second) {
            if (p.client == client) rows.push_back({hour, s.cells[cell], s.clients[client], p.aggregate});
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
    bool changed = erase_before(s.minutes, s.minute_floor_us);
    if (s.options.hour_retention.count() > 0) {
        const std::int64_t cutoff =
            floor_to(now_us - s.options.hour_retention.count() * kHourUs, kHourUs);
        changed = erase_before(s.hours, cutoff) || changed;
        std::lock_guard day_lock(s.day_mutex);
        s.days.erase(s.days.begin(), s.days.lower_bound(floor_to(cutoff, kDayUs)));
        // A day cut in two by the cutoff is rebuilt from the hours left.
        if (auto d = s.days.find(floor_to(cutoff, kDayUs)); d != s.days.end()) {
            for (auto& [cell, entry] : d->second) entry.dirty = true;
        }
    }
    if (changed) s.generation.fetch_add(1, std::memory_order_release);
}

Groups RollupIndex::query(const Query& q) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    const std::int64_t step = q.resolution == Resolution::minute ? kMinuteUs : kHourUs;
    const Level& level = q.resolution == Resolution::minute ? s.minutes : s.hours;
    const std::int64_t from = floor_to(q.from_us, step);
    const std::int64_t to = q.to_us;

    // Each cell's group (or -1 when the filter excludes it), worked out once per cell.
    std::vector<int> cell_group(s.cells.size(), -1);
    std::vector<std::vector<std::string>> group_labels;
    {
        std::map<std::vector<std::string>, int> seen;
        for (std::size_t c = 0; c < s.cells.size(); ++c) {
            if (!q.filter.matches(s.cells[c])) continue;
            std::vector<std::string> labels;
            labels.reserve(q.by.size());
            for (Label l : q.by) labels.emplace_back(s.cells[c].value(l));
            auto [it, inserted] = seen.try_emplace(labels, static_cast<int>(group_labels.size()));
            if (inserted) group_labels.push_back(std::move(labels));
            cell_group[c] = it->second;
        }
    }
    Groups out;
    std::vector<std::optional<Aggregate>> acc(group_labels.size());
    const auto flush = [&](std::int64_t bucket_us) {
        for (std::size_t g = 0; g < acc.size(); ++g) {
            if (!acc[g]) continue;
            out.emplace(GroupKey{group_labels[g], bucket_us}, std::move(*acc[g]));
            acc[g].reset();
        }
    };
    const auto add_bucket = [&](const BucketCells& cells) {
        for (const auto& [cell, bucket] : cells) {
            const int g = cell_group[cell];
            if (g < 0) continue;
            auto& a = acc[static_cast<std::size_t>(g)];
            if (!a) a.emplace();
            merge_weighted(*a, bucket, q.metrics);
        }
    };

    // Whole days from the day cache (hour queries without time buckets only).
    std::int64_t days_from = 0;
    std::int64_t days_to = 0;
    if (q.resolution == Resolution::hour && !q.by_bucket) {
        days_from = floor_to(from + kDayUs - 1, kDayUs);
        days_to = floor_to(to, kDayUs);
    }
    for (auto it = level.lower_bound(from); it != level.end() && it->first < to; ++it) {
        if (it->first >= days_from && it->first < days_to) {
            it = std::prev(level.lower_bound(days_to));
            continue;
        }
        add_bucket(it->second);
        if (q.by_bucket) flush(it->first);
    }
    if (days_from < days_to) {
        std::lock_guard day_lock(s.day_mutex);
        std::set<CellId> present;
        for (std::int64_t day = days_from; day < days_to; day += kDayUs) {
            present.clear();
            for (auto h = s.hours.lower_bound(day); h != s.hours.end() && h->first < day + kDayUs; ++h) {
                for (const auto& [cell, bucket] : h->second) {
                    if (cell_group[cell] >= 0) present.insert(cell);
                }
            }
            for (CellId cell : present) {
                auto& a = acc[static_cast<std::size_t>(cell_group[cell])];
                if (!a) a.emplace();
                a->merge(s.day_aggregate(day, cell), 1.0, q.metrics);
            }
        }
    }
    if (!q.by_bucket) flush(-1);
    return out;
}

std::array<std::vector<std::string>, kLabelCount> RollupIndex::labels(std::int64_t from_us,
                                                                      std::int64_t to_us) const {
    const State& s = *state_;
    std::shared_lock lock(s.mutex);
    std::vector<bool> seen(s.cells.size(), false);
    for (auto it = s.hours.lower_bound(floor_to(from_us, kHourUs)); it != s.hours.end() && it->first < to_us; ++it) {
        for (const auto& [cell, bucket] : it->second) seen[cell] = true;
    }
    std::array<std::set<std::string, std::less<>>, kLabelCount> sets;
    for (std::size_t c = 0; c < s.cells.size(); ++c) {
        if (!seen[c]) continue;
        for (std::size_t i = 0; i < kLabelCount; ++i) sets[i].emplace(s.cells[c].value(kAllLabels[i]));
    }
    std::array<std::vector<std::string>, kLabelCount> out;
    for (std::size_t i = 0; i < kLabelCount; ++i) out[i].assign(sets[i].begin(), sets[i].end());
    return out;
}

const RollupOptions& RollupIndex::options() const noexcept { return state_->options; }

std::uint64_t RollupIndex::generation() const noexcept {
    return state_->generation.load(std::memory_order_acquire);
}

}  // namespace tokenradar::observatory
