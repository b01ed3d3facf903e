#pragma once
// Both directions between a record's labels and their `label_sets` row id, as one connection
// has seen them: what SQLite's LabelSets (label_sets.hpp) and PostgreSQL's PgLabelSets
// (pg_label_sets.hpp) look up before asking their database. Rows are only ever added, never
// changed or deleted, so an id once read keeps its labels; an id handed out inside a
// transaction that was rolled back is forgotten (forget_ids()).
//
// Threads: one per object, as the connection it belongs to.

#include <tokenradar/core/labels.hpp>

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace tokenradar::store {

class LabelCache {
  public:
    LabelCache();

    [[nodiscard]] std::optional<std::int64_t> find_id(const Labels& labels) const;
    void remember_id(const Labels& labels, std::int64_t id);
    // nullptr when `id` is not cached. The pointer is valid until the next non-const call.
    [[nodiscard]] const Labels* find_labels(std::int64_t id) const;
    const Labels* remember_labels(std::int64_t id, Labels labels);
    // The transaction the ids were handed out in was rolled back: they may name other labels.
    void forget_ids() noexcept { ids_.clear(); }

  private:
    struct Known {
        Labels labels;
        std::int64_t id = 0;
    };
    // Every byte of every label, 8 at a time, from a seed of this object's: what submitters
    // send cannot be made to collide on purpose.
    [[nodiscard]] std::uint64_t hash(const Labels& labels) const noexcept;

    std::uint64_t seed_;
    // By hash(labels). std::unordered_map<Labels, ...> would hash every label again for each
    // neighbour in a bucket it looks at (libstdc++ keeps no hash codes for a noexcept hash).
    std::unordered_multimap<std::uint64_t, Known> ids_;
    std::unordered_map<std::int64_t, Labels> labels_;
};

// Sets `label` of `labels` to a value read back from a store. Stored values passed
// set_label()'s checks on the way in; one that no longer does (a value since dropped from the
// table) reads as the label's default.
void set_stored_label(Labels& labels, Label label, std::string_view value);

}  // namespace tokenradar::store
