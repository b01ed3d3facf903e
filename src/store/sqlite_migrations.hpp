#pragma once
// Numbered schema migrations (migrations/NNNN_name.sql, embedded at build time) and the code
// that applies them. The schema version lives in `PRAGMA user_version`.

#include <tokenradar/core/error.hpp>

#include "migration.hpp"

#include <span>
#include <string_view>

struct sqlite3;

namespace tokenradar::store {

// The migrations compiled into this binary (generated migrations.cpp).
std::span<const Migration> builtin_migrations() noexcept;

// Brings `db` to the last version of `migrations`, applying each missing one in its own
// transaction together with its user_version bump, so a failure leaves the previous version
// intact. Safe against another process migrating the same file at the same time (the version
// is re-read under the write lock). A database newer than `migrations` is an Errc::unsupported
// error naming both versions. Returns the version now in force. `path` names the file in errors.
Result<int> migrate(sqlite3* db, std::string_view path, std::span<const Migration> migrations);

// Registers the SQL functions the builtin migrations call on `db` (before migrate()):
// tokenradar_pack(response_id, received_us, http_status, sched_offset_ns, headers_ns, ...,
// relay_max_ns), the columns of schema version 2 in packed_record.hpp's field order (the
// response id's text first, token_source as 'usage' or 'estimate', NULL for absent), which
// returns them packed (format 1) for migration 3.
Result<void> add_migration_functions(sqlite3* db, std::string_view path);

}  // namespace tokenradar::store
