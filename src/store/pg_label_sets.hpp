#pragma once
// PostgreSQL's `label_sets` (migrations_pg/0001): each combination of a record's labels once,
// `measurements.label_set` its id, as SQLite's LabelSets (label_sets.hpp) and with the same
// cache in front (label_cache.hpp), so a known combination costs no round trip.
//
// Threads: one per object, as the connection it is used with.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/labels.hpp>

#include "label_cache.hpp"
#include "pg_connection.hpp"

#include <cstdint>
#include <string>

namespace tokenradar::store {

class PgLabelSets {
  public:
    PgLabelSets();

    // The id of the row holding `labels`, added when there is none. Call it inside the
    // caller's write transaction, which the new row then belongs to; after a rollback, call
    // forget_ids(). Another node adding the same labels at once is not an error: its row
    // is used.
    Result<std::int64_t> id_of(PgConnection& db, const Labels& labels);
    // The labels of row `id`, nullptr when there is none. The pointer is valid until the
    // next call on this object.
    Result<const Labels*> labels_of(PgConnection& db, std::int64_t id);
    void forget_ids() noexcept { cache_.forget_ids(); }
    // Another server (a reconnect may reach a new primary): nothing cached holds.
    void forget_all() { cache_ = LabelCache(); }

  private:
    void bind(const Labels& labels);

    std::string find_sql_, add_sql_, read_sql_;
    PgParams params_;
    LabelCache cache_;
};

}  // namespace tokenradar::store
