#pragma once
// The `label_sets` table: each distinct combination of a record's labels (core/labels.hpp:
// provider, model, endpoint, regions, task, source, cache, route, api, stream) once, and
// `measurements.label_set` its id. A gateway sees few combinations, so a row carries one
// integer instead of eleven text columns (each a bind and its VDBE work on every insert), and
// SQL still groups by any label through the view `measurements_labelled`.
//
// Rows are only ever added: never changed, and never deleted (retention deletes measurements,
// and what it leaves behind is a few rows per combination ever seen). So an id, once read,
// keeps its labels, and both directions are cached (label_cache.hpp) for the connection's life.
//
// Threads: one per object, as the connection it belongs to (SqliteStore's).

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/labels.hpp>

#include "label_cache.hpp"
#include "sqlite_util.hpp"

#include <cstdint>
#include <string>

namespace tokenradar::store {

class LabelSets {
  public:
    static Result<LabelSets> prepare(sqlite3* db, std::string path);

    // The id of the row holding `labels`, added when there is none. Call it inside the
    // caller's write transaction (BEGIN IMMEDIATE), which the new row then belongs to; after
    // a rollback, call forget_ids().
    Result<std::int64_t> id_of(const Labels& labels);
    // The labels of row `id`, nullptr when there is none (an error is SQLite's). The pointer
    // is valid until the next call on this object.
    Result<const Labels*> labels_of(std::int64_t id);
    // The write transaction that id_of ran in was rolled back: the rows it added are gone,
    // and their ids may be given to other labels.
    void forget_ids() noexcept { cache_.forget_ids(); }

  private:
    LabelSets(sqlite3* db, std::string path);
    void bind(sqlite3_stmt* s, const Labels& labels) const;

    sqlite3* db_;
    std::string path_;
    Statement find_, add_, read_;
    LabelCache cache_;
};

}  // namespace tokenradar::store
