#include "sqlite_migrations.hpp"

#include "sqlite_util.hpp"

#include <fmt/format.h>

#include <string>

namespace tokenradar::store {
namespace {

Error too_new(std::string_view path, std::int64_t found, int known) {
    return Error(Errc::unsupported,
                 fmt::format("{}: database schema version {} is newer than this tokenradar "
                             "(it knows versions up to {}): use a newer tokenradar",
                             path, found, known));
}

}  // namespace

Result<int> migrate(sqlite3* db, std::string_view path, std::span<const Migration> migrations) {
    const int latest = migrations.empty() ? 0 : migrations.back().version;
    auto version = query_integer(db, path, "PRAGMA user_version");
    if (!version) return version.error();
    if (*version > latest) return too_new(path, *version, latest);

    for (const Migration& m : migrations) {
        if (m.version <= *version) continue;
        // IMMEDIATE takes the write lock now (waiting up to busy_timeout), so the version read
        // below cannot change before COMMIT.
        if (auto begun = exec(db, path, "BEGIN IMMEDIATE", "migration"); !begun)
            return begun.error();
        const auto rollback = [&] { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); };
        version = query_integer(db, path, "PRAGMA user_version");
        if (!version) {
            rollback();
            return version.error();
        }
        if (*version > latest) {
            rollback();
            return too_new(path, *version, latest);
        }
        if (m.version <= *version) {  // another process applied it meanwhile
            rollback();
            continue;
        }
        const std::string what = fmt::format("migration {}", m.name);
        const std::string sql = fmt::format("{}\n;PRAGMA user_version = {};", m.sql, m.version);
        if (auto applied = exec(db, path, sql.c_str(), what); !applied) {
            rollback();
            return applied.error();
        }
        if (auto committed = exec(db, path, "COMMIT", what); !committed) {
            rollback();
            return committed.error();
        }
        *version = m.version;
    }
    return static_cast<int>(*version);
}

}  // namespace tokenradar::store
