#include <tokenradar/cache/semantic_index.hpp>

// hnswlib 0.6.2 is header-only and defines non-inline functions (cpuid, AVXCapable) in
// hnswlib.h: this must stay the only translation unit that includes it. Under TSan its
// addPoint reports lock-order inversions between its own per-node locks, even from one
// thread; every writer of a graph holds the scope's exclusive lock here, so they cannot
// deadlock (run TSan with detect_deadlocks=0 or a `deadlock:hnswlib` suppression). No data
// race is reported (SemanticIndexTest.TakesConcurrentInsertsLookupsAndErases).
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
        const std::unique_lock scope_lock(scope->mutex);
        if (scope->live != 0) return;
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

    // A graph with more deleted elements than live ones is built again from the live ones,
    // or becomes a flat scan when few are left. Labels stay: the fifo and by_payload hold them.
    void rebuild_if_worth_it(Scope& s) {
        if (!s.graph || s.dead_labels.size() <= s.live ||
            s.dead_labels.size() < kMinDeadForRebuild) {
            return;
        }
        const std::size_t dim = options.dimension;
        const Graph& old = *s.graph;
        if (s.live <= options.flat_limit / 2) {
            std::vector<float> flat(s.entries.size() * dim);
            for (std::size_t label = 0; label < s.entries.size(); ++label) {
                if (s.entries[label].seq == 0) continue;
                const float* v = graph_vector(old, label);
                std::copy(v, v + dim, flat.begin() + static_cast<std::ptrdiff_t>(label * dim));
            }
            s.flat = std::move(flat);
            s.graph.reset();
        } else {
            auto graph = new_graph(std::max(options.flat_limit, s.live) * 2);
            for (std::size_t label = 0; label < s.entries.size(); ++label) {
                if (s.entries[label].seq != 0)
                    add_to_graph(*graph, graph_vector(old, label), label);
            }
            s.graph = std::move(graph);
        }
        s.free_labels.insert(s.free_labels.end(), s.dead_labels.begin(), s.dead_labels.end());
        s.dead_labels.clear();
        rebuilds.fetch_add(1, std::memory_order_relaxed);
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
            {
                const std::unique_lock lock(s->mutex);
                if (item.label >= s->entries.size() || s->entries[item.label].seq != item.seq) {
                    continue;
                }
                remove_label(*s, item.label);
                rebuild_if_worth_it(*s);
                now_empty = s->live == 0;
            }
            evictions.fetch_add(1, std::memory_order_relaxed);
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
    const std::shared_lock lock(s->mutex);
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
    {
        const std::unique_lock lock(s->mutex);
        const auto it = s->by_payload.find(payload);
        if (s->retired || it == s->by_payload.end()) return false;
        impl_->remove_label(*s, it->second);
        impl_->rebuild_if_worth_it(*s);
        now_empty = s->live == 0;
    }
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
        {
            const std::unique_lock lock(s->mutex);
            for (std::size_t label = 0; label < s->entries.size(); ++label) {
                const Entry& e = s->entries[label];
                if (e.seq != 0 && e.expires_at_us <= now_us) {
                    impl_->remove_label(*s, label);
                    ++removed;
                }
            }
            impl_->rebuild_if_worth_it(*s);
            now_empty = s->live == 0 && !s->retired;
        }
        if (now_empty) impl_->retire_if_empty(key, s);
    }
    return removed;
}

SemanticIndexStats SemanticIndex::stats() const {
    SemanticIndexStats st;
    st.entries = impl_->live.load(std::memory_order_relaxed);
    st.rebuilds = impl_->rebuilds.load(std::memory_order_relaxed);
    st.evictions = impl_->evictions.load(std::memory_order_relaxed);
    for (Shard& shard : impl_->shards) {
        const std::lock_guard lock(shard.mutex);
        st.scopes += shard.scopes.size();
        for (const auto& [key, s] : shard.scopes) {
            const std::shared_lock scope_lock(s->mutex);
            if (s->graph) ++st.graph_scopes;
        }
    }
    return st;
}

}  // namespace tokenradar::cache
