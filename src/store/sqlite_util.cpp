#include "sqlite_util.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tokenradar::store {

Error sqlite_error(std::string_view path, sqlite3* db, std::string_view what) {
    const int code = db == nullptr ? SQLITE_CANTOPEN : sqlite3_errcode(db);
    const char* message = db == nullptr ? "out of memory" : sqlite3_errmsg(db);
    const Errc errc =
        code == SQLITE_BUSY || code == SQLITE_LOCKED ? Errc::overloaded : Errc::internal;
    return Error(errc, fmt::format("{}: {}: {}", path, what, message));
}

Result<void> exec(sqlite3* db, std::string_view path, const char* sql, std::string_view what) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
        return sqlite_error(path, db, what);
    }
    return {};
}

Result<Statement> prepare(sqlite3* db, std::string_view path, std::string_view sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &raw, nullptr) != SQLITE_OK) {
        return sqlite_error(path, db, fmt::format("prepare '{}'", sql.substr(0, 40)));
    }
    return Statement(raw);
}

Result<std::int64_t> query_integer(sqlite3* db, std::string_view path, const char* sql) {
    auto statement = prepare(db, path, sql);
    if (!statement) return statement.error();
    if (sqlite3_step(statement->get()) != SQLITE_ROW) return sqlite_error(path, db, sql);
    return sqlite3_column_int64(statement->get(), 0);
}

int step_once(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc;
}

Result<void> set_journal(sqlite3* db, std::string_view path) {
    {
        auto statement = prepare(db, path, "PRAGMA journal_mode=WAL");
        if (!statement) return sqlite_error(path, db, "set WAL journal");
        if (sqlite3_step(statement->get()) != SQLITE_ROW) {
            return sqlite_error(path, db, "set WAL journal");
        }
        const auto* mode = reinterpret_cast<const char*>(sqlite3_column_text(statement->get(), 0));
        if (mode == nullptr || std::string_view(mode) != "wal") {
            spdlog::warn("{}: journal mode is {}, not WAL (readers will block the writer)", path,
                         mode == nullptr ? "unknown" : mode);
        }
    }
    return exec(db, path, "PRAGMA synchronous=NORMAL", "set synchronous");
}

}  // namespace tokenradar::store
