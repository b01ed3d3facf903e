// RollupIndex's buckets and caches: lookups of cells and clients, where records go, the
// weighted merge of a bucket, and the cache fills (rollup_state.hpp).

#include "rollup_state.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <string_view>

namespace tokenradar::observatory {
namespace {

// A hash of a cell's labels, the same from Labels as from a CellKey (`value_of(i)` is the
// value of kCellLabels[i]); equality is checked after it (collisions only cost a comparison).
template <class ValueOf>
std::uint64_t hash_cell_values(ValueOf value_of) noexcept {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        h = (h ^ std::hash<std::string_view>{}(value_of(i))) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

std::uint64_t cell_hash(const Labels& l) noexcept {
    return hash_cell_values([&l](std::size_t i) { return label_value(l, kCellLabels[i]); });
}

std::uint64_t cell_hash(const CellKey& k) noexcept {
    return hash_cell_values([&k](std::size_t i) { return std::string_view(k.values[i]); });
}

ClientPart& part_of(CellBucket& bucket, ClientId client) {
    for (ClientPart& p : bucket) {
        if (p.client == client) return p;
    }
    return bucket.emplace_back(client);
}

// Weighted counts are rounded to multiples of 2^-kWeightBits (DdSketch::merge_on_grid). Raw
// parts hold integer counts, so every count a query or cache adds up is such a multiple, and
// the sums are exact while below 2^(53 - kWeightBits) = 8.6e9 samples: merges give the same
// bits in any order, which lets the caches add whole days and models where a plain query
// adds cells and hours. (Unrounded, a rank that fell exactly on a bucket boundary went either
// way with the order of the additions.) A count moves by at most 2^-21 per bucket merged.
constexpr int kWeightBits = 20;

}  // namespace

void merge_weighted(Aggregate& into, const CellBucket& bucket, MetricMask metrics, bool counts) {
    if (counts) {
        for (const ClientPart& p : bucket) into.merge_counts(*p.aggregate);
    }
    if (bucket.size() == 1) {
        into.merge_sketches(*bucket.front().aggregate, 1.0, metrics);
        return;
    }
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if ((metrics & (1U << i)) == 0) continue;
        double total = 0;
        double clients = 0;
        for (const ClientPart& p : bucket) {
            const double n = p.aggregate->sketches[i].count();
            total += n;
            clients += n > 0 ? 1 : 0;
        }
        for (const ClientPart& p : bucket) {
            const double n = p.aggregate->sketches[i].count();
            if (n > 0) {
                [[maybe_unused]] auto merged = into.sketches[i].merge_on_grid(
                    p.aggregate->sketches[i], total / (clients * n), kWeightBits);
            }
        }
    }
}

void merge_cell(Aggregate& into, const Bucket& bucket, CellId cell, MetricMask metrics,
                bool counts) {
    if (!bucket.folded) {
        merge_weighted(into, bucket.cells[cell], metrics, counts);
        return;
    }
    // As merge_weighted adds a single part, straight from its bytes.
    into.merge_packed(bucket.folded_cells.of(cell), metrics, counts);
}

std::size_t FoldedCells::count() const noexcept {
    std::size_t n = 0;
    for (CellId cell = 0; cell < ends.size(); ++cell) n += has(cell) ? 1 : 0;
    return n;
}

void Day::invalidate(std::uint64_t new_version) noexcept {
    for (auto& entry : models) {
        if (entry) entry->invalidate();
    }
    version = new_version;
}

CachedMerge& entry_at(std::vector<std::unique_ptr<CachedMerge>>& entries, std::uint32_t id) {
    if (id >= entries.size()) entries.resize(id + 1);
    if (!entries[id]) entries[id] = std::make_unique<CachedMerge>();
    return *entries[id];
}

std::optional<CellId> RollupIndex::State::find_cell(const Labels& l) const {
    const std::uint64_t h = cell_hash(l);
    for (auto [it, end] = cell_index.equal_range(h); it != end; ++it) {
        if (cells[it->second].matches(l)) return it->second;
    }
    return std::nullopt;
}

CellId RollupIndex::State::cell_id(const Labels& l) {
    if (auto id = find_cell(l)) return *id;
    return cell_id(CellKey::of(l));
}

CellId RollupIndex::State::cell_id(const CellKey& k) {
    const std::uint64_t h = cell_hash(k);
    for (auto [it, end] = cell_index.equal_range(h); it != end; ++it) {
        if (cells[it->second] == k) return it->second;
    }
    const auto id = static_cast<CellId>(cells.size());
    cells.push_back(k);
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        const std::string_view v = k.value(kCellLabels[i]);
        if (values[i].find(v) == values[i].end()) values[i].emplace(v);
    }
    cell_index.emplace(h, id);
    auto [model, inserted] = model_ids.try_emplace(
        {std::string(k.value(Label::provider)), std::string(k.value(Label::model))},
        static_cast<ModelId>(models.size()));
    if (inserted) models.push_back({id});
    cell_model.push_back(model->second);
    return id;
}

ClientId RollupIndex::State::client_id(const std::string& client) {
    auto [it, inserted] = client_ids.try_emplace(client, static_cast<ClientId>(clients.size()));
    if (inserted) clients.push_back(client);
    return it->second;
}

ClientPart* RollupIndex::State::touch(Resolution resolution, std::int64_t bucket_us, CellId cell,
                                      ClientId client) {
    LastBucket& last = last_bucket[resolution == Resolution::minute ? 0 : 1];
    if (last.bucket == nullptr || last.start != bucket_us)
        last = {bucket_us, &level(resolution)[bucket_us]};
    Bucket& bucket = *last.bucket;
    if (bucket.folded) return nullptr;
    bucket.loose = true;
    bucket.version = ++versions;
    if (cell >= bucket.cells.size()) bucket.cells.resize(cells.size());
    CellBucket& parts = bucket.cells[cell];
    const ModelId model = cell_model[cell];
    if (model >= bucket.models.size()) bucket.models.resize(models.size());
    auto& slot = bucket.models[model];
    if (!slot) slot = std::make_unique<ModelSlot>();
    if (parts.empty()) slot->cells.push_back(cell);
    slot->merged.invalidate();
    return &part_of(parts, client);
}

void RollupIndex::State::touch_day(std::int64_t hour_us, CellId cell) {
    const std::int64_t day_us = floor_to(hour_us, kDayUs);
    if (last_day == nullptr || last_day_start != day_us) {
        last_day = &days[day_us];
        last_day_start = day_us;
    }
    entry_at(last_day->models, cell_model[cell]).invalidate();
    last_day->version = ++versions;
}

void RollupIndex::State::add_minute(const Measurement& m, CellId cell, ClientId client,
                                    bool loading) {
    const std::int64_t minute = floor_to(m.ts_us, kMinuteUs);
    if (minute < minute_floor_us || (!loading && minute < closed_before[0])) return;
    if (ClientPart* part = touch(Resolution::minute, minute, cell, client)) part->aggregate->add(m);
}

void RollupIndex::State::fold(Resolution resolution, std::int64_t before_us) {
    Level& l = level(resolution);
    for (auto it = l.begin(); it != l.end() && it->first < before_us; ++it) {
        Bucket& bucket = it->second;
        if (bucket.folded) continue;
        FoldedCells& folded = bucket.folded_cells;
        folded.ends.assign(bucket.cells.size(), 0);
        for (CellId cell = 0; cell < bucket.cells.size(); ++cell) {
            CellBucket& parts = bucket.cells[cell];
            if (!parts.empty()) {
                for (ClientPart& p : parts) {
                    if (!p.dirty) continue;  // only hour parts are ever dirty
                    folded_rows.push_back(
                        {it->first, cells[cell], clients[p.client], *p.aggregate});
                    p.dirty = false;
                }
                // A single part is already its own weighted merge (merge_weighted adds it
                // with weight 1); several become the merge that every query of them computed.
                // Its extremes and sums are kept as floats (Folding in rollup.hpp).
                if (parts.size() == 1) {
                    parts.front().aggregate->round_to_float();
                    parts.front().aggregate->pack(folded.bytes);
                } else {
                    Aggregate merged;
                    merge_weighted(merged, parts, kAllMetrics, true);
                    merged.round_to_float();
                    merged.pack(folded.bytes);
                }
                CellBucket().swap(parts);  // freed as we go: the fold's peak stays one bucket
            }
            assert(folded.bytes.size() <= std::numeric_limits<std::uint32_t>::max());
            folded.ends[cell] = static_cast<std::uint32_t>(folded.bytes.size());
        }
        folded.bytes.shrink_to_fit();
        std::vector<CellBucket>().swap(bucket.cells);
        bucket.folded = true;
        bucket.loose = false;
    }
}

void RollupIndex::State::compact(Resolution resolution, std::int64_t before_us) {
    Level& l = level(resolution);
    for (auto it = l.begin(); it != l.end() && it->first < before_us; ++it) {
        if (!it->second.loose) continue;
        for (CellBucket& parts : it->second.cells) {
            for (ClientPart& p : parts) p.aggregate->shrink_to_fit();
        }
        it->second.loose = false;
    }
}

template <class Fill>
const CachedMerge& RollupIndex::State::fill_if_stale(const CachedMerge& entry, Fill&& fill) const {
    if (entry.fresh.load(std::memory_order_acquire)) return entry;
    std::lock_guard lock(fill_mutex);
    if (!entry.fresh.load(std::memory_order_relaxed)) {
        Aggregate merged;
        entry.present = false;
        fill(merged, entry);
        entry.packed.clear();
        if (entry.present) merged.pack(entry.packed, &entry.sketch_starts);
        entry.packed.shrink_to_fit();  // kept until the next change: no growth room
        entry.fresh.store(true, std::memory_order_release);
    }
    return entry;
}

const CachedMerge& RollupIndex::State::merged(const Bucket& bucket, const ModelSlot& slot) const {
    return fill_if_stale(slot.merged, [&](Aggregate& into, const CachedMerge& e) {
        for (CellId cell : slot.cells) merge_cell(into, bucket, cell, kAllMetrics, true);
        e.present = !slot.cells.empty();
    });
}

const CachedMerge& RollupIndex::State::merged_day_model(std::int64_t day_us, ModelId model,
                                                        const CachedMerge& entry) const {
    return fill_if_stale(entry, [&](Aggregate& into, const CachedMerge& e) {
        for (auto h = hours.lower_bound(day_us); h != hours.end() && h->first < day_us + kDayUs;
             ++h) {
            if (const ModelSlot* slot = find_at(h->second.models, model)) {
                const CachedMerge& hour = merged(h->second, *slot);
                if (!hour.present) continue;
                merge_cached(into, hour, kAllMetrics, true);
                e.present = true;
            }
        }
    });
}

namespace {

// A query's filter and grouping as one string: what makes its groups, given the cells.
std::string shape_key(const Query& q) {
    std::string key;
    for (Label l : q.by) key += static_cast<char>('A' + static_cast<int>(l));
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        const auto& values = q.filter.allowed[i];
        if (values.empty()) continue;
        key += '\0';
        key += std::to_string(i);
        for (const std::string& v : values) {
            key += '\1';
            key += v;  // check_label_value: no control characters in a value
        }
    }
    return key;
}

}  // namespace

std::shared_ptr<ShapeCache> RollupIndex::State::shape_of(const Query& q) const {
    const std::string key = shape_key(q);
    std::lock_guard lock(shape_mutex);
    auto it = shapes.find(key);
    if (it == shapes.end() || it->second->cell_count != cells.size()) {
        if (it == shapes.end() && shapes.size() >= kMaxShapes) {
            const auto oldest =
                std::min_element(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
                    return a.second->last_used.load(std::memory_order_relaxed) <
                           b.second->last_used.load(std::memory_order_relaxed);
                });
            shapes.erase(oldest);
        }
        auto shape = std::make_shared<ShapeCache>();
        shape->cell_count = cells.size();
        it = shapes.insert_or_assign(key, std::move(shape)).first;
    }
    it->second->last_used.store(++shape_clock, std::memory_order_relaxed);
    return it->second;
}

const ShapeCache::Entry& RollupIndex::State::shape_entry(
    ShapeCache& shape, std::map<std::int64_t, ShapeCache::Entry>& entries, std::int64_t start,
    std::int64_t span, std::uint64_t version, const std::vector<int>& key_group,
    const std::vector<std::uint32_t>& selected, std::size_t groups) const {
    ShapeCache::Entry& entry = entries[start];
    entry.used = shape.last_used.load(std::memory_order_relaxed);
    if (entry.version == version) return entry;
    std::vector<std::optional<Aggregate>> merged(groups);
    for (auto h = hours.lower_bound(start); h != hours.end() && h->first < start + span; ++h) {
        for (CellId cell : selected) {
            if (!h->second.has(cell)) continue;
            auto& into = merged[static_cast<std::size_t>(key_group[cell])];
            if (!into) into.emplace();
            merge_cell(*into, h->second, cell, kAllMetrics, true);
        }
    }
    for (const auto& group : entry.groups) shape.bytes -= group.capacity();
    entry.groups.assign(groups, {});
    for (std::size_t g = 0; g < groups; ++g) {
        if (!merged[g]) continue;
        merged[g]->pack(entry.groups[g]);
        entry.groups[g].shrink_to_fit();
        shape.bytes += entry.groups[g].capacity();
    }
    entry.version = version;
    return entry;
}

void RollupIndex::State::trim_shapes(std::int64_t cutoff_us) {
    std::lock_guard lock(shape_mutex);
    const auto drop = [](ShapeCache& shape, auto it, auto& entries) {
        for (const auto& group : it->second.groups) shape.bytes -= group.capacity();
        return entries.erase(it);
    };
    std::size_t total = 0;
    for (auto& [key, shape] : shapes) {
        for (auto* entries : {&shape->days, &shape->hours, &shape->windows}) {
            // A day entry starts at its day: one cut by the cutoff is refilled on use.
            for (auto it = entries->begin(); it != entries->end() && it->first < cutoff_us;)
                it = drop(*shape, it, *entries);
        }
        total += shape->bytes;
    }
    if (total <= options.shape_cache_bytes) return;
    struct Used {
        std::uint64_t used;
        ShapeCache* shape;
        std::map<std::int64_t, ShapeCache::Entry>* entries;
        std::int64_t start;
    };
    std::vector<Used> all;
    for (auto& [key, shape] : shapes) {
        for (auto* entries : {&shape->days, &shape->hours, &shape->windows}) {
            for (const auto& [start, entry] : *entries)
                all.push_back({entry.used, shape.get(), entries, start});
        }
    }
    std::sort(all.begin(), all.end(), [](const Used& a, const Used& b) { return a.used < b.used; });
    for (const Used& u : all) {
        if (total <= options.shape_cache_bytes) break;
        const std::size_t before = u.shape->bytes;
        drop(*u.shape, u.entries->find(u.start), *u.entries);
        total -= before - u.shape->bytes;
    }
    std::erase_if(shapes, [](const auto& kv) {
        return kv.second->days.empty() && kv.second->hours.empty() && kv.second->windows.empty();
    });
}

}  // namespace tokenradar::observatory
