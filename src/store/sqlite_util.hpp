#pragma once
// Small RAII and error helpers over the SQLite C API, private to the store.

#include <tokenradar/core/error.hpp>

#include <sqlite3.h>

#include <memory>
#include <string_view>

namespace tokenradar::store {

struct DbCloser {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using DbHandle = std::unique_ptr<sqlite3, DbCloser>;

struct StatementFinalizer {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

// "PATH: WHAT: <SQLite's message>". A busy or locked database is Errc::overloaded (another
// connection holds the write lock longer than busy_timeout); everything else is internal.
Error sqlite_error(std::string_view path, sqlite3* db, std::string_view what);

// Runs one or more statements that return no rows.
Result<void> exec(sqlite3* db, std::string_view path, const char* sql, std::string_view what);

Result<Statement> prepare(sqlite3* db, std::string_view path, std::string_view sql);

// Steps a statement that returns no rows and resets it, so it holds no lock afterwards.
int step_once(sqlite3_stmt* s);

// journal_mode=WAL (readers never block the writer; a commit is one sequential append; a
// warning when the file cannot have it) and synchronous=NORMAL (no fsync per commit, still
// safe against a killed process).
Result<void> set_journal(sqlite3* db, std::string_view path);

// The single integer a PRAGMA or SELECT returns.
Result<std::int64_t> query_integer(sqlite3* db, std::string_view path, const char* sql);

}  // namespace tokenradar::store
