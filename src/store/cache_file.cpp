#include "owner_lock.hpp"
#include "sqlite_util.hpp"

#include <tokenradar/store/cache_file.hpp>

#include <fmt/format.h>

#include <utility>

namespace tokenradar::store {
namespace {

// PRAGMA application_id of a cache file ("TRCF"): what tells it from the measurement store or
// anyone else's SQLite file, which open() refuses rather than fill with cache rows.
constexpr std::int64_t kApplicationId = 0x54524346;

// A rowid table (not WITHOUT ROWID): values are large, and a WITHOUT ROWID row lives in the
// key's B-tree. `bytes` is the value's length, so the total is kept without reading values.
constexpr std::string_view kSchemaSql =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE IF NOT EXISTS entries ("
    " key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL, bytes INTEGER NOT NULL,"
    " stored_at_us INTEGER NOT NULL, expires_at_us INTEGER NOT NULL) STRICT;"
    "CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at_us, stored_at_us);"
    "PRAGMA application_id = {};"
    "COMMIT;";

constexpr std::string_view kGetSql =
    "SELECT value FROM entries WHERE key = ?1 AND expires_at_us > ?2";
constexpr std::string_view kOldBytesSql = "SELECT bytes FROM entries WHERE key = ?1";
constexpr std::string_view kPutSql =
    "INSERT OR REPLACE INTO entries (key, value, bytes, stored_at_us, expires_at_us) "
    "VALUES (?1, ?2, ?3, ?4, ?5)";
// The soonest to expire, then the oldest: what a bounded cache loses least by dropping; never
// the entry being stored (?1).
constexpr std::string_view kEvictSql =
    "DELETE FROM entries WHERE rowid = (SELECT rowid FROM entries WHERE key != ?1 "
    "ORDER BY expires_at_us, stored_at_us LIMIT 1) RETURNING bytes";
constexpr std::string_view kDeleteSql = "DELETE FROM entries WHERE key = ?1 RETURNING bytes";
constexpr std::string_view kSweepSql =
    "DELETE FROM entries WHERE expires_at_us <= ?1 RETURNING bytes";

void bind_bytes(sqlite3_stmt* s, int index, std::string_view bytes) {
    // An empty view may have a null data(), which would bind NULL.
    sqlite3_bind_blob64(s, index, bytes.empty() ? "" : bytes.data(), bytes.size(), SQLITE_STATIC);
}

Error not_a_cache_file(const std::string& path, std::string_view why) {
    return Error(Errc::bad_request, fmt::format("{}: not a TokenRadar cache file ({})", path, why));
}

// Refuses a file that is not ours; creates the schema in one that is new (empty).
Result<void> check_or_create(sqlite3* db, const std::string& path) {
    auto id = query_integer(db, path, "PRAGMA application_id");
    if (!id) return not_a_cache_file(path, sqlite3_errmsg(db));
    if (*id == kApplicationId) return {};
    if (*id != 0) return not_a_cache_file(path, fmt::format("application id {:#x}", *id));
    auto tables = query_integer(db, path, "SELECT count(*) FROM sqlite_schema");
    if (!tables) return tables.error();
    if (*tables != 0) return not_a_cache_file(path, "a SQLite database of something else");
    const std::string schema = fmt::format(kSchemaSql, kApplicationId);
    return exec(db, path, schema.c_str(), "create the cache table");
}

}  // namespace

struct CacheFile::Statements {
    Statement begin, commit, rollback, get, old_bytes, put, evict, sweep, erase;
};

CacheFile::CacheFile(std::string path, sqlite3* db, const CacheFileOptions& options,
                     std::unique_ptr<OwnerLock> owner)
    : path_(std::move(path)), db_(db), options_(options), owner_(std::move(owner)) {}

CacheFile::~CacheFile() {
    statements_.reset();  // statements first: close_v2 would otherwise defer the close
    sqlite3_close_v2(db_);
}

Result<std::unique_ptr<CacheFile>> CacheFile::open(const std::string& path,
                                                   const CacheFileOptions& options) {
    // One process per file: the byte total is kept in memory, and another process's
    // evictions and sweeps would make it drift.
    auto owner = OwnerLock::acquire(path);
    if (!owner) return owner.error();
    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(path.c_str(), &raw,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    DbHandle db(raw);
    if (rc != SQLITE_OK) return sqlite_error(path, raw, "cannot open");
    sqlite3_busy_timeout(db.get(), static_cast<int>(options.busy_timeout.count()));
    if (auto checked = check_or_create(db.get(), path); !checked) return checked.error();
    if (auto journal = set_journal(db.get(), path); !journal) return journal.error();

    std::unique_ptr<CacheFile> file(new CacheFile(path, db.release(), options, std::move(*owner)));
    auto statements = std::make_unique<Statements>();
    for (auto [slot, text] :
         {std::pair{&statements->begin, std::string_view("BEGIN IMMEDIATE")},
          std::pair{&statements->commit, std::string_view("COMMIT")},
          std::pair{&statements->rollback, std::string_view("ROLLBACK")},
          std::pair{&statements->get, kGetSql}, std::pair{&statements->old_bytes, kOldBytesSql},
          std::pair{&statements->put, kPutSql}, std::pair{&statements->evict, kEvictSql},
          std::pair{&statements->sweep, kSweepSql}, std::pair{&statements->erase, kDeleteSql}}) {
        auto prepared = prepare(file->db_, path, text);
        if (!prepared) return prepared.error();
        *slot = std::move(*prepared);
    }
    file->statements_ = std::move(statements);
    auto totals = prepare(file->db_, path, "SELECT count(*), coalesce(sum(bytes), 0) FROM entries");
    if (!totals) return totals.error();
    if (sqlite3_step(totals->get()) != SQLITE_ROW) {
        return sqlite_error(path, file->db_, "count the entries");
    }
    file->stats_.entries = static_cast<std::uint64_t>(sqlite3_column_int64(totals->get(), 0));
    file->stats_.bytes = static_cast<std::uint64_t>(sqlite3_column_int64(totals->get(), 1));
    return file;
}

Result<std::optional<std::string>> CacheFile::get(std::string_view key, std::int64_t now_us) {
    sqlite3_stmt* s = statements_->get.get();
    bind_bytes(s, 1, key);
    sqlite3_bind_int64(s, 2, now_us);
    const int rc = sqlite3_step(s);
    std::optional<std::string> value;
    if (rc == SQLITE_ROW) {
        const auto* data = static_cast<const char*>(sqlite3_column_blob(s, 0));
        value.emplace(data == nullptr ? std::string()
                                      : std::string(data, static_cast<std::size_t>(
                                                              sqlite3_column_bytes(s, 0))));
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        Error error = sqlite_error(path_, db_, "read an entry");
        sqlite3_reset(s);
        return error;
    }
    sqlite3_reset(s);
    return value;
}

Result<bool> CacheFile::put(std::string_view key, std::string_view bytes,
                            std::int64_t expires_at_us, std::int64_t now_us) {
    if (bytes.size() > options_.max_bytes) {
        // Nothing is stored, and an older answer under the key must not outlive this one.
        if (auto erased = erase(key); !erased) return erased.error();
        return false;
    }
    if (now_us >= next_sweep_us_) {
        next_sweep_us_ = now_us + options_.sweep_interval.count();
        if (auto swept = remove_expired(now_us); !swept) return swept.error();
    }
    Statements& s = *statements_;
    if (step_once(s.begin.get()) != SQLITE_DONE) return sqlite_error(path_, db_, "store an entry");
    CacheFileStats after = stats_;  // kept only if the transaction commits
    auto written = [&]() -> Result<void> {
        sqlite3_stmt* old = s.old_bytes.get();
        bind_bytes(old, 1, key);
        const int rc = sqlite3_step(old);
        if (rc == SQLITE_ROW) {
            after.bytes -= static_cast<std::uint64_t>(sqlite3_column_int64(old, 0));
            --after.entries;
        }
        sqlite3_reset(old);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return sqlite_error(path_, db_, "store an entry");
        sqlite3_stmt* put = s.put.get();
        bind_bytes(put, 1, key);
        bind_bytes(put, 2, bytes);
        sqlite3_bind_int64(put, 3, static_cast<std::int64_t>(bytes.size()));
        sqlite3_bind_int64(put, 4, now_us);
        sqlite3_bind_int64(put, 5, expires_at_us);
        if (step_once(put) != SQLITE_DONE) return sqlite_error(path_, db_, "store an entry");
        ++after.entries;
        after.bytes += bytes.size();
        while (after.bytes > options_.max_bytes) {
            sqlite3_stmt* evict = s.evict.get();
            bind_bytes(evict, 1, key);
            const int evicted = sqlite3_step(evict);
            if (evicted == SQLITE_ROW) {
                after.bytes -= static_cast<std::uint64_t>(sqlite3_column_int64(evict, 0));
                --after.entries;
                ++after.evictions;
            }
            sqlite3_reset(evict);
            if (evicted != SQLITE_ROW) return sqlite_error(path_, db_, "evict an entry");
        }
        return {};
    }();
    if (!written) {
        step_once(s.rollback.get());
        return written.error();
    }
    if (step_once(s.commit.get()) != SQLITE_DONE) {
        Error error = sqlite_error(path_, db_, "store an entry: commit");
        step_once(s.rollback.get());
        return error;
    }
    stats_ = after;
    return true;
}

Result<void> CacheFile::erase(std::string_view key) {
    sqlite3_stmt* s = statements_->erase.get();
    bind_bytes(s, 1, key);
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {  // the key is unique: one row at most, deleted by this step
        stats_.bytes -= static_cast<std::uint64_t>(sqlite3_column_int64(s, 0));
        --stats_.entries;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        Error error = sqlite_error(path_, db_, "delete an entry");
        sqlite3_reset(s);
        return error;
    }
    sqlite3_reset(s);
    return {};
}

Result<std::uint64_t> CacheFile::remove_expired(std::int64_t now_us) {
    sqlite3_stmt* s = statements_->sweep.get();
    sqlite3_bind_int64(s, 1, now_us);
    std::uint64_t rows = 0;
    std::uint64_t bytes = 0;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        ++rows;
        bytes += static_cast<std::uint64_t>(sqlite3_column_int64(s, 0));
    }
    if (rc != SQLITE_DONE) {
        Error error = sqlite_error(path_, db_, "delete expired entries");
        sqlite3_reset(s);
        return error;
    }
    sqlite3_reset(s);
    stats_.entries -= rows;
    stats_.bytes -= bytes;
    stats_.expired += rows;
    return rows;
}

CacheFileStats CacheFile::stats() const noexcept { return stats_; }

}  // namespace tokenradar::store
