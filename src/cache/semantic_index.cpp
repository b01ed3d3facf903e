#include <tokenradar/cache/semantic_index.hpp>

#include <tokenradar/cache/detail/semantic_index_access.hpp>

// hnswlib 0.6.2 is header-only and defines non-inline functions (cpuid, AVXCapable) in
// hnswlib.h: this must stay the only translation unit that includes it. Under TSan its
// addPoint reports lock-order inversions between its own per-node locks, even from one
// thread; every writer of a live graph holds the scope's exclusive lock here (a rebuild's new
// graph has one writer, the rebuilding thread, until it is swapped in under that lock), so
// they cannot deadlock (run TSan with detect_deadlocks=0 or a `deadlock:hnswlib`
// suppression). No data race is reported
// (SemanticIndexTest.TakesConcurrentInsertsLookupsAndErases).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <hnswlib/hnswlib.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cmath>
#include <deque>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace tokenradar::cache {
namespace {

using Graph = hnswlib::HierarchicalNSW<float>;

constexpr std::size_t kShards = 16;
// A graph is rebuilt when its deleted elements outnumber the live ones and are at least this
// many (a handful of deletes in a small graph is not worth a rebuild).
constexpr std::size_t kMinDeadForRebuild = 32;
// A rebuild catches up with the inserts made while it built its graph in rounds outside the
// exclusive lock, until at most this many are left (or the rounds run out): those it adds
// under the lock, so the lock's longest hold is about this many graph inserts.
constexpr std::size_t kMaxLockedCatchUp = 16;
constexpr int kMaxCatchUpRounds = 8;
// hnswlib's own level generator seed: the same graph for the same inserts, run after run.
constexpr std::size_t kGraphSeed = 100;

struct Entry {
    std::string question;
    std::string payload;
    std::int64_t expires_at_us = 0;
    std::uint64_t seq = 0;  // the insert's global sequence number; 0: the slot is free
};

// One scope's entries. Labels index `entries`, the flat array and the graph alike. A deque:
// its elements never move, so `by_payload` can key on views of their payloads.
struct Scope {
    explicit Scope(std::string k) : key(std::move(k)) {}

    const std::string key;
    mutable std::shared_mutex mutex;
    bool retired = false;  // removed from its shard's map (empty); inserts look again
    std::deque<Entry> entries;
    std::unordered_map<std::string_view, std::size_t> by_payload;
    std::vector<std::size_t> free_labels;  // not in the graph (every free label when flat)
    std::vector<std::size_t> dead_labels;  // marked deleted in the graph
    std::vector<float> flat;               // flat scan: entries.size() * dimension floats
    std::unique_ptr<Graph> graph;          // beyond flat_limit entries
    std::size_t live = 0;
    // A rebuild is under way (one per scope at a time); the entries inserted meanwhile, as
    // (label, seq), for it to add to its new graph. Labels removed meanwhile go to
    // dead_labels (a graph exists throughout), so none is reused before the swap.
    bool rebuilding = false;
    std::vector<std::pair<std::size_t, std::uint64_t>> added_while_rebuilding;
};

// Entries as (label, seq) and their vectors, dimension floats each.
struct Batch {
    std::vector<std::pair<std::size_t, std::uint64_t>> members;
    std::vector<float> vectors;
};

struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<Scope>> scopes;
};

// Insertion order over all scopes, for eviction. Items whose entry has gone (erased,
// expired, replaced) stay until popped or compacted away: `seq` tells them apart.
struct FifoItem {
    std::weak_ptr<Scope> scope;
    std::size_t label = 0;
    std::uint64_t seq = 0;
};

struct Candidate {
    float similarity = 0;
    std::size_t label = 0;
};

}  // namespace

struct SemanticIndex::Impl {
    explicit Impl(SemanticIndexOptions o)
        : options(o),
          space(o.dimension),
          distance(space.get_dist_func()),
          distance_param(space.get_dist_func_param()) {}

    SemanticIndexOptions options;
    hnswlib::InnerProductSpace space;  // distance = 1 - dot product; outlives every graph
    hnswlib::DISTFUNC<float> distance;
    void* distance_param;
    std::array<Shard, kShards> shards;
    std::mutex fifo_mutex;
    std::deque<FifoItem> fifo;
    std::atomic<std::size_t> live{0};
    std::atomic<std::uint64_t> next_seq{1};
    std::atomic<std::size_t> rebuilds{0};
    std::atomic<std::size_t> evictions{0};
    std::atomic<std::size_t> rebuild_max_locked_adds{0};
    std::function<void()> rebuild_hook;  // tests only (detail::SemanticIndexAccess)

    Shard& shard_for(std::string_view scope) {
        return shards[std::hash<std::string_view>{}(scope) % kShards];
    }

    std::shared_ptr<Scope> lookup_scope(std::string_view scope) {
        Shard& shard = shard_for(scope);
        const std::lock_guard lock(shard.mutex);
        const auto it = shard.scopes.find(std::string{scope});
        return it == shard.scopes.end() ? nullptr : it->second;
    }

    std::shared_ptr<Scope> scope_for_insert(std::string_view scope) {
        Shard& shard = shard_for(scope);
        const std::lock_guard lock(shard.mutex);
        auto& slot = shard.scopes[std::string{scope}];
        if (!slot) slot = std::make_shared<Scope>(std::string{scope});
        return slot;
    }

    // Drops an empty scope from its shard. Lock order everywhere: shard, then scope; fifo,
    // then scope. Nothing takes a shard or the fifo while holding a scope.
    void retire_if_empty(std::string_view key, const std::shared_ptr<Scope>& scope) {
        Shard& shard = shard_for(key);
        const std::lock_guard shard_lock(shard.mutex);
        const auto it = shard.scopes.find(std::string{key});
        if (it == shard.scopes.end() || it->second != scope) return;
        // Never wait for a scope while holding its shard: lookups take the shard's mutex and
        // must not wait behind anything long. A busy scope stays until remove_expired retries.
        const std::unique_lock scope_lock(scope->mutex, std::try_to_lock);
        if (!scope_lock.owns_lock() || scope->live != 0) return;
        scope->retired = true;
        shard.scopes.erase(it);
    }

    const float* graph_vector(const Graph& graph, std::size_t label) const {
        return reinterpret_cast<const float*>(
            graph.getDataByInternalId(graph.label_lookup_.at(label)));
    }

    std::unique_ptr<Graph> new_graph(std::size_t capacity) {
        auto graph = std::make_unique<Graph>(&space, capacity, options.hnsw_m,
                                             options.hnsw_ef_construction, kGraphSeed);
        graph->setEf(std::max(options.hnsw_ef_search, options.neighbours));
        return graph;
    }

    void add_to_graph(Graph& graph, const float* vector, std::size_t label) {
        if (graph.cur_element_count >= graph.max_elements_) {
            graph.resizeIndex(graph.max_elements_ * 2);
        }
        graph.addPoint(vector, label);
    }

    // The scope's vectors move from the flat array into a new graph.
    void promote(Scope& s) {
        const std::size_t dim = options.dimension;
        auto graph = new_graph(std::max(options.flat_limit, s.live) * 2);
        for (std::size_t label = 0; label < s.entries.size(); ++label) {
            if (s.entries[label].seq != 0) add_to_graph(*graph, &s.flat[label * dim], label);
        }
        s.graph = std::move(graph);
        std::vector<float>().swap(s.flat);
    }

    // Called under the exclusive lock. True when a graph with more deleted elements than live
    // ones is due for a rebuild and none is under way: the caller then runs rebuild() once it
    // has let go of the lock.
    bool start_rebuild_if_due(Scope& s) {
        if (!s.graph || s.rebuilding || s.dead_labels.size() <= s.live ||
            s.dead_labels.size() < kMinDeadForRebuild) {
            return false;
        }
        s.rebuilding = true;
        s.added_while_rebuilding.clear();
        return true;
    }

    // The entries inserted since the rebuild began, from the `from`th on, that are still live,
    // with their vectors (under the scope's lock, shared or exclusive).
    void copy_live(const Scope& s, std::size_t from, Batch& out) const {
        const std::size_t dim = options.dimension;
        for (std::size_t i = from; i < s.added_while_rebuilding.size(); ++i) {
            const auto [label, seq] = s.added_while_rebuilding[i];
            if (s.entries[label].seq != seq) continue;  // removed since
            out.members.emplace_back(label, seq);
            const float* v = graph_vector(*s.graph, label);
            out.vectors.insert(out.vectors.end(), v, v + dim);
        }
    }

    // The new graph, or the new flat array when few entries are left.
    struct Rebuilt {
        std::unique_ptr<Graph> graph;
        std::vector<float> flat;
        void add(Impl& impl, const Batch& batch) {
            const std::size_t dim = impl.options.dimension;
            for (std::size_t i = 0; i < batch.members.size(); ++i) {
                const std::size_t label = batch.members[i].first;
                const float* v = &batch.vectors[i * dim];
                if (graph) {
                    impl.add_to_graph(*graph, v, label);
                } else {
                    flat.resize(std::max(flat.size(), (label + 1) * dim));
                    std::copy(v, v + dim, flat.begin() + static_cast<std::ptrdiff_t>(label * dim));
                }
            }
        }
    };

    // Builds the scope's graph again from its live entries (or a flat array when at most
    // flat_limit / 2 are left), on the calling thread, holding the exclusive lock only for
    // the swap: a snapshot under the shared lock, the build with no lock (lookups and writers
    // go on with the old graph, which keeps marking deletions), catch-up rounds for the
    // inserts made meanwhile under the shared lock, then under the exclusive lock the last
    // few inserts, the deletions since the snapshot marked in the new graph, and the swap.
    // Labels stay: the fifo and by_payload hold them. Only after start_rebuild_if_due().
    void rebuild(Scope& s) {
        try {
            rebuild_and_swap(s);
        } catch (...) {
            // Out of memory, most likely: the old graph stays, a later erase may try again.
            const std::unique_lock lock(s.mutex);
            s.rebuilding = false;
            std::vector<std::pair<std::size_t, std::uint64_t>>().swap(s.added_while_rebuilding);
            throw;
        }
    }

    void rebuild_and_swap(Scope& s) {
        const std::size_t dim = options.dimension;
        Batch snapshot;
        Rebuilt built;
        std::size_t dead_at_snapshot = 0;
        std::size_t journal_done = 0;
        {
            const std::shared_lock lock(s.mutex);
            assert(s.rebuilding && s.graph);
            dead_at_snapshot = s.dead_labels.size();
            journal_done = s.added_while_rebuilding.size();
            snapshot.members.reserve(s.live);
            snapshot.vectors.reserve(s.live * dim);
            for (std::size_t label = 0; label < s.entries.size(); ++label) {
                if (s.entries[label].seq == 0) continue;
                snapshot.members.emplace_back(label, s.entries[label].seq);
                const float* v = graph_vector(*s.graph, label);
                snapshot.vectors.insert(snapshot.vectors.end(), v, v + dim);
            }
            if (s.live > options.flat_limit / 2) {
                built.graph = new_graph(std::max(options.flat_limit, s.live) * 2);
            } else {
                built.flat.resize(s.entries.size() * dim);
            }
        }
        built.add(*this, snapshot);
        snapshot = Batch{};  // its vectors: as large as the graph's
        if (rebuild_hook) rebuild_hook();
        for (int round = 0; round < kMaxCatchUpRounds; ++round) {
            Batch batch;
            {
                const std::shared_lock lock(s.mutex);
                if (s.added_while_rebuilding.size() - journal_done <= kMaxLockedCatchUp) break;
                copy_live(s, journal_done, batch);
                journal_done = s.added_while_rebuilding.size();
            }
            built.add(*this, batch);
        }

        // Declared before the lock: the old graph (hundreds of MB for 100k entries) is freed
        // after it is let go.
        std::unique_ptr<Graph> old_graph;
        std::vector<float> old_flat;
        std::vector<std::pair<std::size_t, std::uint64_t>> old_journal;
        const std::unique_lock lock(s.mutex);
        Batch last;
        copy_live(s, journal_done, last);
        built.add(*this, last);
        // Labels dead at the snapshot are in neither graph from now on: free. Those removed
        // since are marked deleted in the new graph when it has them, else free too.
        s.free_labels.insert(s.free_labels.end(), s.dead_labels.begin(),
                             s.dead_labels.begin() + static_cast<std::ptrdiff_t>(dead_at_snapshot));
        std::vector<std::size_t> dead;
        for (std::size_t i = dead_at_snapshot; i < s.dead_labels.size(); ++i) {
            const std::size_t label = s.dead_labels[i];
            if (built.graph && built.graph->label_lookup_.count(label) != 0) {
                built.graph->markDelete(label);
                dead.push_back(label);
            } else {
                s.free_labels.push_back(label);
            }
        }
        s.dead_labels = std::move(dead);
        old_graph = std::move(s.graph);
        if (built.graph) {
            s.graph = std::move(built.graph);
        } else {
            built.flat.resize(std::max(built.flat.size(), s.entries.size() * dim));
            old_flat.swap(s.flat);
            s.flat = std::move(built.flat);
        }
        s.rebuilding = false;
        old_journal.swap(s.added_while_rebuilding);
        rebuilds.fetch_add(1, std::memory_order_relaxed);
        std::size_t max = rebuild_max_locked_adds.load(std::memory_order_relaxed);
        while (last.members.size() > max &&
               !rebuild_max_locked_adds.compare_exchange_weak(max, last.members.size(),
                                                              std::memory_order_relaxed)) {
        }
    }

    std::uint64_t add_entry(Scope& s, const std::vector<float>& vector, std::string_view question,
                            std::string_view payload, std::int64_t expires_at_us,
                            std::size_t& label) {
        if (s.free_labels.empty()) {
            label = s.entries.size();
            s.entries.emplace_back();
        } else {
            label = s.free_labels.back();
            s.free_labels.pop_back();
        }
        Entry& e = s.entries[label];
        e.question.assign(question);
        e.payload.assign(payload);
        e.expires_at_us = expires_at_us;
        e.seq = next_seq.fetch_add(1, std::memory_order_relaxed);
        s.by_payload.emplace(std::string_view{e.payload}, label);
        if (s.rebuilding) s.added_while_rebuilding.emplace_back(label, e.seq);
        ++s.live;
        live.fetch_add(1, std::memory_order_relaxed);

        const std::size_t dim = options.dimension;
        if (!s.graph && s.live > options.flat_limit) {
            // Into the flat array first, then all of it into the new graph.
            s.flat.resize(std::max(s.flat.size(), (label + 1) * dim));
            std::copy(vector.begin(), vector.end(),
                      s.flat.begin() + static_cast<std::ptrdiff_t>(label * dim));
            promote(s);
        } else if (!s.graph) {
            s.flat.resize(std::max(s.flat.size(), (label + 1) * dim));
            std::copy(vector.begin(), vector.end(),
                      s.flat.begin() + static_cast<std::ptrdiff_t>(label * dim));
        } else {
            add_to_graph(*s.graph, vector.data(), label);
        }
        return e.seq;
    }

    void remove_label(Scope& s, std::size_t label) {
        Entry& e = s.entries[label];
        s.by_payload.erase(std::string_view{e.payload});  // before the string goes
        std::string().swap(e.question);
        std::string().swap(e.payload);
        e.seq = 0;
        if (s.graph) {
            s.graph->markDelete(label);
            s.dead_labels.push_back(label);
        } else {
            s.free_labels.push_back(label);
        }
        --s.live;
        live.fetch_sub(1, std::memory_order_relaxed);
    }

    bool item_is_live(const FifoItem& item) const {
        const auto s = item.scope.lock();
        if (!s) return false;
        const std::shared_lock lock(s->mutex);
        return item.label < s->entries.size() && s->entries[item.label].seq == item.seq;
    }

    // Evicts the oldest entries until there is room for one more.
    void make_room() {
        while (live.load(std::memory_order_relaxed) >= options.max_entries) {
            FifoItem item;
            {
                const std::lock_guard lock(fifo_mutex);
                if (fifo.empty()) return;
                item = std::move(fifo.front());
                fifo.pop_front();
            }
            const auto s = item.scope.lock();
            if (!s) continue;
            bool now_empty = false;
            bool rebuild_due = false;
            {
                const std::unique_lock lock(s->mutex);
                if (item.label >= s->entries.size() || s->entries[item.label].seq != item.seq) {
                    continue;
                }
                remove_label(*s, item.label);
                rebuild_due = start_rebuild_if_due(*s);
                now_empty = s->live == 0;
            }
            evictions.fetch_add(1, std::memory_order_relaxed);
            if (rebuild_due) rebuild(*s);
            if (now_empty) retire_if_empty(s->key, s);
        }
    }

    void push_fifo(FifoItem item) {
        const std::lock_guard lock(fifo_mutex);
        fifo.push_back(std::move(item));
        // Erased and expired entries leave items behind; drop them once they outnumber the
        // live ones (amortised O(1) per insert).
        if (fifo.size() > 2 * options.max_entries + 1024) {
            std::deque<FifoItem> kept;
            for (auto& i : fifo) {
                if (item_is_live(i)) kept.push_back(std::move(i));
            }
            fifo.swap(kept);
        }
    }

    std::vector<Candidate> nearest(const Scope& s, const float* query, std::int64_t now_us) const {
        const std::size_t k = options.neighbours;
        std::vector<Candidate> out;
        if (s.graph) {
            auto found = s.graph->searchKnn(query, k);
            while (!found.empty()) {
                out.push_back({1.0F - found.top().first, found.top().second});
                found.pop();
            }
        } else {
            const std::size_t dim = options.dimension;
            out.reserve(k + 1);
            for (std::size_t label = 0; label < s.entries.size(); ++label) {
                const Entry& e = s.entries[label];
                if (e.seq == 0 || e.expires_at_us <= now_us) continue;
                const float sim = 1.0F - distance(query, &s.flat[label * dim], distance_param);
                if (out.size() == k && sim <= out.back().similarity) continue;
                // Keep the k best, most similar first (k is small: insertion into a sorted run).
                auto pos = std::find_if(out.begin(), out.end(),
                                        [&](const Candidate& c) { return sim > c.similarity; });
                out.insert(pos, Candidate{sim, label});
                if (out.size() > k) out.pop_back();
            }
        }
        std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
            return a.similarity > b.similarity;
        });
        return out;
    }

    // The unit vector of `vector`, or nothing for a wrong size, a zero or a non-finite vector.
    std::optional<std::vector<float>> normalised(std::span<const float> vector) const {
        if (vector.size() != options.dimension) return std::nullopt;
        double norm2 = 0;
        for (const float v : vector) norm2 += static_cast<double>(v) * v;
        if (!(norm2 > 0) || !std::isfinite(norm2)) return std::nullopt;
        const auto scale = static_cast<float>(1.0 / std::sqrt(norm2));
        std::vector<float> out(vector.begin(), vector.end());
        for (float& v : out) v *= scale;
        return out;
    }
};

SemanticIndex::SemanticIndex(SemanticIndexOptions options)
    : impl_(std::make_unique<Impl>(options)) {
    assert(options.dimension > 0 && options.max_entries > 0 && options.neighbours > 0);
}

SemanticIndex::~SemanticIndex() = default;

std::size_t SemanticIndex::dimension() const { return impl_->options.dimension; }

bool SemanticIndex::insert(std::string_view scope, std::span<const float> vector,
                           std::string_view question, std::string_view payload,
                           std::int64_t expires_at_us, std::int64_t now_us) {
    auto unit = impl_->normalised(vector);
    if (!unit || expires_at_us <= now_us) return false;
    impl_->make_room();
    for (;;) {
        auto s = impl_->scope_for_insert(scope);
        FifoItem item;
        {
            const std::unique_lock lock(s->mutex);
            if (s->retired) continue;  // emptied and dropped meanwhile: a new one
            if (const auto it = s->by_payload.find(payload); it != s->by_payload.end()) {
                impl_->remove_label(*s, it->second);
            }
            item.seq = impl_->add_entry(*s, *unit, question, payload, expires_at_us, item.label);
        }
        item.scope = s;
        impl_->push_fifo(std::move(item));
        return true;
    }
}

SemanticLookup SemanticIndex::find(std::string_view scope, std::span<const float> vector,
                                   std::string_view query_text, float threshold,
                                   std::int64_t now_us) const {
    SemanticLookup result;
    const auto unit = impl_->normalised(vector);
    if (!unit) return result;
    const auto s = impl_->lookup_scope(scope);
    if (!s) return result;
    const std::shared_lock lock(s->mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
        result.busy = true;
        return result;
    }
    std::optional<LexicalProfile> query_profile;
    for (const Candidate& c : impl_->nearest(*s, unit->data(), now_us)) {
        const Entry& e = s->entries[c.label];
        if (e.seq == 0 || e.expires_at_us <= now_us) continue;
        result.best_similarity = std::max(result.best_similarity, c.similarity);
        if (c.similarity < threshold) break;  // most similar first
        if (!query_profile) query_profile = lexical_profile(query_text);
        const GuardVerdict verdict =
            check_lexical(*query_profile, lexical_profile(e.question), impl_->options.guard);
        if (verdict.compatible()) {
            result.hit = SemanticMatch{e.payload, e.question, c.similarity};
            break;
        }
        if (!result.guard_rejected) {
            result.guard_rejected = true;
            result.guard_reason = verdict.reason;
        }
    }
    return result;
}

bool SemanticIndex::erase(std::string_view scope, std::string_view payload) {
    const auto s = impl_->lookup_scope(scope);
    if (!s) return false;
    bool now_empty = false;
    bool rebuild_due = false;
    {
        const std::unique_lock lock(s->mutex);
        const auto it = s->by_payload.find(payload);
        if (s->retired || it == s->by_payload.end()) return false;
        impl_->remove_label(*s, it->second);
        rebuild_due = impl_->start_rebuild_if_due(*s);
        now_empty = s->live == 0;
    }
    if (rebuild_due) impl_->rebuild(*s);
    if (now_empty) impl_->retire_if_empty(scope, s);
    return true;
}

std::size_t SemanticIndex::remove_expired(std::int64_t now_us) {
    std::vector<std::pair<std::string, std::shared_ptr<Scope>>> all;
    for (Shard& shard : impl_->shards) {
        const std::lock_guard lock(shard.mutex);
        for (const auto& [key, s] : shard.scopes) all.emplace_back(key, s);
    }
    std::size_t removed = 0;
    for (const auto& [key, s] : all) {
        bool now_empty = false;
        bool rebuild_due = false;
        {
            const std::unique_lock lock(s->mutex);
            for (std::size_t label = 0; label < s->entries.size(); ++label) {
                const Entry& e = s->entries[label];
                if (e.seq != 0 && e.expires_at_us <= now_us) {
                    impl_->remove_label(*s, label);
                    ++removed;
                }
            }
            rebuild_due = impl_->start_rebuild_if_due(*s);
            now_empty = s->live == 0 && !s->retired;
        }
        if (rebuild_due) impl_->rebuild(*s);
        if (now_empty) impl_->retire_if_empty(key, s);
    }
    return removed;
}

SemanticIndexStats SemanticIndex::stats() const {
    SemanticIndexStats st;
    st.entries = impl_->live.load(std::memory_order_relaxed);
    st.rebuilds = impl_->rebuilds.load(std::memory_order_relaxed);
    st.evictions = impl_->evictions.load(std::memory_order_relaxed);
    st.rebuild_max_locked_adds = impl_->rebuild_max_locked_adds.load(std::memory_order_relaxed);
    std::vector<std::shared_ptr<Scope>> all;
    for (Shard& shard : impl_->shards) {
        const std::lock_guard lock(shard.mutex);
        for (const auto& [key, s] : shard.scopes) all.push_back(s);
    }
    st.scopes = all.size();
    for (const auto& s : all) {  // no shard held while waiting for a scope
        const std::shared_lock scope_lock(s->mutex);
        if (s->graph) ++st.graph_scopes;
    }
    return st;
}

namespace detail {

std::shared_ptr<void> SemanticIndexAccess::hold_exclusive(SemanticIndex& index,
                                                          std::string_view scope) {
    auto s = index.impl_->lookup_scope(scope);
    if (!s) return nullptr;
    s->mutex.lock();
    Scope* raw = s.get();
    return {raw, [s = std::move(s)](Scope*) { s->mutex.unlock(); }};
}

void SemanticIndexAccess::on_rebuild_built(SemanticIndex& index, std::function<void()> hook) {
    index.impl_->rebuild_hook = std::move(hook);
}

}  // namespace detail

}  // namespace tokenradar::cache
