#pragma once
// The semantic cache's nearest-neighbour index: entries of (vector, question, payload,
// expiry) in scopes, looked up by similarity and then by the lexical guard.
//
// - Scopes are opaque strings the caller computes (tenant + virtual model + a hash of the
//   system prompt, tools and parameters). A lookup sees only its own scope's entries.
// - Vectors: any dimension fixed at construction (BuiltinEmbedder's, or an upstream
//   embedding model's); normalised here, so similarity is the cosine. A vector of the wrong
//   size or all zeros is refused.
// - The payload is the exact cache's key of the cached answer (the entry "expires with its
//   exact twin": erase(scope, payload) when the twin goes, and the same expiry time). One
//   entry per (scope, payload): inserting the payload again replaces it.
// - A scope of at most `flat_limit` entries is scanned exactly (a contiguous array: no graph
//   overhead for the many small scopes); a larger one gets an hnswlib HNSW graph (inner
//   product on normalised vectors). hnswlib 0.6.2 can only mark an element deleted, so a
//   graph is rebuilt from its live entries when the deleted outnumber them, and becomes a
//   flat scan again when few are left. A rebuild re-inserts every live entry (~1 ms each
//   in a 100k graph, so tens of seconds for a 50k scope: bench/README.md, "The semantic
//   cache") on the thread whose erase, remove_expired or insert (eviction) made it due,
//   which returns only then. It holds the scope's exclusive lock only for the swap: it
//   copies the live entries under the shared lock, builds the new graph holding no lock
//   (lookups use the old graph meanwhile, inserts and erases go on), adds the entries
//   inserted meanwhile in rounds under the shared lock, and under the exclusive lock adds
//   the last few (at most 16 unless inserts outpace it for 8 rounds:
//   SemanticIndexStats::rebuild_max_locked_adds), marks the entries erased meanwhile and
//   swaps. One rebuild per scope at a time; its snapshot costs as much memory again as the
//   live entries' vectors.
// - Bounded memory: at most `max_entries` entries over all scopes (exceeded by at most the
//   number of concurrent inserts); an insert over the bound evicts the oldest inserted
//   entries first. Expired entries are never returned; remove_expired() frees them (call it
//   now and then, e.g. once a minute), eviction frees the oldest.
// - No clock is read: callers pass now_us (microseconds, any fixed epoch) to every call.
// - Thread-safe: lookups of one scope share its lock, inserts, erases and a rebuild's swap
//   take it alone; scopes live in sharded maps. No call suspends or does I/O.
// - find() never waits for a scope's lock: it try-locks it shared
//   (std::shared_mutex::try_lock_shared) and, when a writer holds it, returns at once with
//   `busy` set and no hit (the gateway counts a miss). Writers hold it for about one graph
//   insert (~1 ms in a 100k graph), an erase for microseconds. find() takes a shard's mutex
//   only for a map lookup; nothing holds a shard's mutex while waiting for a scope. So
//   find() can run on an I/O thread. insert(), erase() and remove_expired() wait for the
//   scope's lock and may run a whole rebuild: call them off the I/O thread.

#include <tokenradar/cache/lexical_guard.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tokenradar::cache {

struct SemanticIndexOptions {
    std::size_t dimension = 0;          // required: the embedder's dimension
    std::size_t max_entries = 100'000;  // over all scopes
    std::size_t neighbours = 8;         // candidates a lookup checks (k)
    std::size_t flat_limit = 1024;      // a scope grows a graph beyond this many entries
    std::size_t hnsw_m = 16;            // hnswlib's M (links per node; level 0 has 2 M)
    // hnswlib's ef at insert and at lookup (>= neighbours). Hashed n-gram vectors are nearly
    // orthogonal to all but their near-duplicates, which makes graph search costly: these
    // keep lookups over 100k entries well under 1 ms (bench/README.md, "The semantic cache").
    std::size_t hnsw_ef_construction = 64;
    std::size_t hnsw_ef_search = 32;
    GuardOptions guard;
};

struct SemanticMatch {
    std::string payload;   // the exact cache's key
    std::string question;  // the cached question it answered
    float similarity = 0;
};

struct SemanticLookup {
    std::optional<SemanticMatch> hit;
    // The highest similarity among the live candidates, hit or not (for the gateway's
    // similarity histogram); -1 when the scope had no live candidate.
    float best_similarity = -1;
    // A candidate over the threshold failed the guard; guard_reason is the most similar one's.
    bool guard_rejected = false;
    GuardReason guard_reason = GuardReason::none;
    // The scope's lock was held exclusively (an insert, an erase, a rebuild's swap): nothing
    // was looked up, hit is empty and best_similarity -1. Count it as a miss. (The standard
    // lets try_lock_shared fail spuriously too; glibc's does not.)
    bool busy = false;
};

struct SemanticIndexStats {
    std::size_t entries = 0;  // live (expired ones included until removed)
    std::size_t scopes = 0;
    std::size_t graph_scopes = 0;  // scopes with an HNSW graph
    std::size_t rebuilds = 0;      // graphs rebuilt (or turned back into flat scans) so far
    std::size_t evictions = 0;     // entries dropped for max_entries
    // The most entries any rebuild added to its new graph under the scope's exclusive lock
    // (the inserts its last catch-up round found): that hold lasts about as many graph
    // inserts, plus marking the entries erased during the rebuild (microseconds each).
    std::size_t rebuild_max_locked_adds = 0;
};

namespace detail {
struct SemanticIndexAccess;  // tests only: detail/semantic_index_access.hpp
}

class SemanticIndex {
  public:
    // options.dimension > 0, max_entries > 0, neighbours > 0 (asserted).
    explicit SemanticIndex(SemanticIndexOptions options);
    ~SemanticIndex();
    SemanticIndex(const SemanticIndex&) = delete;
    SemanticIndex& operator=(const SemanticIndex&) = delete;

    std::size_t dimension() const;

    // False (nothing stored) for a vector of the wrong size or all zeros, or an entry already
    // expired at now_us.
    bool insert(std::string_view scope, std::span<const float> vector, std::string_view question,
                std::string_view payload, std::int64_t expires_at_us, std::int64_t now_us);

    // The most similar live entry of `scope` with similarity >= threshold whose question is
    // lexically compatible with query_text, among the `neighbours` nearest. Never waits for
    // the scope's lock: `busy` when a writer holds it (see above).
    SemanticLookup find(std::string_view scope, std::span<const float> vector,
                        std::string_view query_text, float threshold, std::int64_t now_us) const;

    // False when the scope has no entry with that payload. Waits for the scope's lock; runs a
    // rebuild when one is due (and returns when it is done).
    bool erase(std::string_view scope, std::string_view payload);

    // Removes every entry expired at now_us (expires_at_us <= now_us); O(entries). Returns
    // how many.
    std::size_t remove_expired(std::int64_t now_us);

    SemanticIndexStats stats() const;

  private:
    friend struct detail::SemanticIndexAccess;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tokenradar::cache
