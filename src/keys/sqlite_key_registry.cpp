#include <tokenradar/keys/sqlite_key_registry.hpp>

#include <fmt/format.h>
#include <sqlite3.h>

#include <utility>

namespace tokenradar::keys {
namespace {

// PRAGMA application_id of a key registry ("TRKY").
constexpr std::int64_t kApplicationId = 0x54524b59;

// `models` is a JSON array of names. The unique index on active names makes a second key of
// one name a constraint error (reported as a 400); a revoked key's name may be reused.
constexpr std::string_view kSchemaSql =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE IF NOT EXISTS keys ("
    " id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, sha256 TEXT NOT NULL,"
    " models TEXT NOT NULL, rpm INTEGER NOT NULL, tpm INTEGER NOT NULL,"
    " budget_tokens INTEGER NOT NULL, budget_period TEXT NOT NULL,"
    " created_us INTEGER NOT NULL, rotated_us INTEGER NOT NULL, revoked_us INTEGER NOT NULL"
    ") STRICT;"
    "CREATE UNIQUE INDEX IF NOT EXISTS keys_active_name ON keys (name) WHERE revoked_us = 0;"
    "CREATE TABLE IF NOT EXISTS key_usage ("
    " key_id TEXT NOT NULL, period_start_us INTEGER NOT NULL, requests INTEGER NOT NULL,"
    " tokens INTEGER NOT NULL, PRIMARY KEY (key_id, period_start_us)) STRICT, WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS audit ("
    " id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, actor TEXT NOT NULL,"
    " action TEXT NOT NULL, key_id TEXT NOT NULL, detail TEXT NOT NULL) STRICT;"
    "PRAGMA application_id = {};"
    "COMMIT;";

struct Finalizer {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, Finalizer>;

void bind_text(sqlite3_stmt* s, int index, std::string_view text) {
    sqlite3_bind_text64(s, index, text.empty() ? "" : text.data(), text.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
}

std::string column_text(sqlite3_stmt* s, int index) {
    const auto* p = sqlite3_column_text(s, index);
    return p == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(p),
                                      static_cast<std::size_t>(sqlite3_column_bytes(s, index)));
}

// Undoes an open transaction unless committed.
class Transaction {
  public:
    explicit Transaction(sqlite3* db) : db_(db) {}
    ~Transaction() {
        if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void committed() noexcept { done_ = true; }

  private:
    sqlite3* db_;
    bool done_ = false;
};

}  // namespace

Error SqliteKeyRegistry::error(std::string_view what) const {
    const int code = sqlite3_extended_errcode(db_);
    const Errc errc = (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED
                          ? Errc::overloaded
                          : Errc::internal;
    return Error(errc, fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_)));
}

Result<void> SqliteKeyRegistry::exec(const char* sql, std::string_view what) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return error(what);
    return {};
}

Result<std::unique_ptr<SqliteKeyRegistry>> SqliteKeyRegistry::open(
    const std::string& path, std::chrono::milliseconds busy_timeout) {
    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(path.c_str(), &raw,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = fmt::format("{}: cannot open the key registry: {}", path,
                                          raw != nullptr ? sqlite3_errmsg(raw) : "out of memory");
        sqlite3_close_v2(raw);
        return Error(Errc::internal, std::move(message));
    }
    std::unique_ptr<SqliteKeyRegistry> registry(new SqliteKeyRegistry(path, raw));
    sqlite3_busy_timeout(raw, static_cast<int>(busy_timeout.count()));
    sqlite3_int64 id = 0;
    {
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(raw, "PRAGMA application_id", -1, &s, nullptr) != SQLITE_OK) {
            sqlite3_finalize(s);
            return Error(Errc::bad_request, fmt::format("{}: not a TokenRadar key registry ({})",
                                                        path, sqlite3_errmsg(raw)));
        }
        Stmt stmt(s);
        if (sqlite3_step(s) == SQLITE_ROW) id = sqlite3_column_int64(s, 0);
    }
    if (id != kApplicationId) {
        if (id != 0) {
            return Error(
                Errc::bad_request,
                fmt::format("{}: not a TokenRadar key registry (application id {:#x})", path, id));
        }
        sqlite3_stmt* s = nullptr;
        sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_schema", -1, &s, nullptr);
        Stmt stmt(s);
        if (s == nullptr || sqlite3_step(s) != SQLITE_ROW) return registry->error("read schema");
        if (sqlite3_column_int64(s, 0) != 0) {
            return Error(Errc::bad_request,
                         fmt::format("{}: not a TokenRadar key registry (a SQLite database of "
                                     "something else)",
                                     path));
        }
    }
    // WAL: the nodes' reads never wait for an admin's write.
    if (auto wal =
            registry->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "set WAL mode");
        !wal) {
        return wal.error();
    }
    const std::string schema = fmt::format(kSchemaSql, kApplicationId);
    if (auto created = registry->exec(schema.c_str(), "create the key tables"); !created) {
        sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
        return created.error();
    }
    return registry;
}

SqliteKeyRegistry::SqliteKeyRegistry(std::string path, sqlite3* db)
    : path_(std::move(path)), db_(db) {}

SqliteKeyRegistry::~SqliteKeyRegistry() { sqlite3_close_v2(db_); }

Result<void> SqliteKeyRegistry::append_audit(const AuditEntry& a) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "INSERT INTO audit (ts_us, actor, action, key_id, detail) "
                           "VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the audit insert");
    }
    Stmt stmt(s);
    sqlite3_bind_int64(s, 1, a.ts_us);
    bind_text(s, 2, a.actor);
    bind_text(s, 3, a.action);
    bind_text(s, 4, a.key_id);
    bind_text(s, 5, a.detail);
    if (sqlite3_step(s) != SQLITE_DONE) return error("append to the audit log");
    return {};
}

Result<void> SqliteKeyRegistry::create(const VirtualKey& key, const AuditEntry& audit) {
    std::lock_guard lock(mu_);
    if (auto begun = exec("BEGIN IMMEDIATE", "begin"); !begun) return begun.error();
    Transaction tx(db_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "INSERT INTO keys (id, name, sha256, models, rpm, tpm, budget_tokens, "
                           "budget_period, created_us, rotated_us, revoked_us) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the key insert");
    }
    Stmt stmt(s);
    bind_text(s, 1, key.id);
    bind_text(s, 2, key.spec.name);
    bind_text(s, 3, key.sha256);
    bind_text(s, 4, models_to_json(key.spec.models));
    sqlite3_bind_int64(s, 5, key.spec.rpm);
    sqlite3_bind_int64(s, 6, key.spec.tpm);
    sqlite3_bind_int64(s, 7, key.spec.budget_tokens);
    bind_text(s, 8, to_string(key.spec.budget_period));
    sqlite3_bind_int64(s, 9, key.created_us);
    sqlite3_bind_int64(s, 10, key.rotated_us);
    sqlite3_bind_int64(s, 11, key.revoked_us);
    if (sqlite3_step(s) != SQLITE_DONE) {
        if ((sqlite3_extended_errcode(db_) & 0xff) == SQLITE_CONSTRAINT) {
            return name_taken(key.spec.name);
        }
        return error("insert the key");
    }
    if (auto logged = append_audit(audit); !logged) return logged.error();
    if (auto done = exec("COMMIT", "commit"); !done) return done.error();
    tx.committed();
    return {};
}

Result<std::vector<VirtualKey>> SqliteKeyRegistry::list(bool with_revoked) {
    std::lock_guard lock(mu_);
    sqlite3_stmt* s = nullptr;
    const char* sql = with_revoked ? "SELECT id, name, sha256, models, rpm, tpm, budget_tokens, "
                                     "budget_period, created_us, rotated_us, revoked_us FROM keys "
                                     "ORDER BY created_us, id"
                                   : "SELECT id, name, sha256, models, rpm, tpm, budget_tokens, "
                                     "budget_period, created_us, rotated_us, revoked_us FROM keys "
                                     "WHERE revoked_us = 0 ORDER BY created_us, id";
    if (sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the key list");
    }
    Stmt stmt(s);
    std::vector<VirtualKey> keys;
    int rc = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        VirtualKey k;
        k.id = column_text(s, 0);
        k.spec.name = column_text(s, 1);
        k.sha256 = column_text(s, 2);
        k.spec.models = models_from_json(column_text(s, 3));
        k.spec.rpm = sqlite3_column_int64(s, 4);
        k.spec.tpm = sqlite3_column_int64(s, 5);
        k.spec.budget_tokens = sqlite3_column_int64(s, 6);
        const std::string period = column_text(s, 7);
        if (auto p = parse_budget_period(period)) k.spec.budget_period = *p;
        k.created_us = sqlite3_column_int64(s, 8);
        k.rotated_us = sqlite3_column_int64(s, 9);
        k.revoked_us = sqlite3_column_int64(s, 10);
        keys.push_back(std::move(k));
    }
    if (rc != SQLITE_DONE) return error("list the keys");
    return keys;
}

Result<bool> SqliteKeyRegistry::rotate(std::string_view id, std::string_view sha256,
                                       std::int64_t now_us, const AuditEntry& audit) {
    std::lock_guard lock(mu_);
    if (auto begun = exec("BEGIN IMMEDIATE", "begin"); !begun) return begun.error();
    Transaction tx(db_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "UPDATE keys SET sha256 = ?2, rotated_us = ?3 "
                           "WHERE id = ?1 AND revoked_us = 0",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the rotation");
    }
    Stmt stmt(s);
    bind_text(s, 1, id);
    bind_text(s, 2, sha256);
    sqlite3_bind_int64(s, 3, now_us);
    if (sqlite3_step(s) != SQLITE_DONE) return error("rotate the key");
    if (sqlite3_changes(db_) == 0) return false;
    if (auto logged = append_audit(audit); !logged) return logged.error();
    if (auto done = exec("COMMIT", "commit"); !done) return done.error();
    tx.committed();
    return true;
}

Result<bool> SqliteKeyRegistry::revoke(std::string_view id, std::int64_t now_us,
                                       const AuditEntry& audit) {
    std::lock_guard lock(mu_);
    if (auto begun = exec("BEGIN IMMEDIATE", "begin"); !begun) return begun.error();
    Transaction tx(db_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "UPDATE keys SET revoked_us = ?2 WHERE id = ?1 AND revoked_us = 0",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the revocation");
    }
    Stmt stmt(s);
    bind_text(s, 1, id);
    sqlite3_bind_int64(s, 2, now_us);
    if (sqlite3_step(s) != SQLITE_DONE) return error("revoke the key");
    if (sqlite3_changes(db_) == 0) return false;
    if (auto logged = append_audit(audit); !logged) return logged.error();
    if (auto done = exec("COMMIT", "commit"); !done) return done.error();
    tx.committed();
    return true;
}

Result<void> SqliteKeyRegistry::add_usage(std::span<const KeyUsage> deltas) {
    if (deltas.empty()) return {};
    std::lock_guard lock(mu_);
    if (auto begun = exec("BEGIN IMMEDIATE", "begin"); !begun) return begun.error();
    Transaction tx(db_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "INSERT INTO key_usage (key_id, period_start_us, requests, tokens) "
                           "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (key_id, period_start_us) "
                           "DO UPDATE SET requests = requests + excluded.requests, "
                           "tokens = tokens + excluded.tokens",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the usage update");
    }
    Stmt stmt(s);
    for (const KeyUsage& d : deltas) {
        bind_text(s, 1, d.key_id);
        sqlite3_bind_int64(s, 2, d.period_start_us);
        sqlite3_bind_int64(s, 3, d.requests);
        sqlite3_bind_int64(s, 4, d.tokens);
        const int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE) return error("add usage");
    }
    if (auto done = exec("COMMIT", "commit"); !done) return done.error();
    tx.committed();
    return {};
}

Result<std::vector<KeyUsage>> SqliteKeyRegistry::usage(std::int64_t since_us) {
    std::lock_guard lock(mu_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "SELECT key_id, period_start_us, requests, tokens FROM key_usage "
                           "WHERE period_start_us >= ?1",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the usage query");
    }
    Stmt stmt(s);
    sqlite3_bind_int64(s, 1, since_us);
    std::vector<KeyUsage> rows;
    int rc = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        rows.push_back({column_text(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
                        sqlite3_column_int64(s, 3)});
    }
    if (rc != SQLITE_DONE) return error("read usage");
    return rows;
}

Result<std::vector<AuditEntry>> SqliteKeyRegistry::audit(std::size_t limit) {
    std::lock_guard lock(mu_);
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_,
                           "SELECT ts_us, actor, action, key_id, detail FROM audit "
                           "ORDER BY id DESC LIMIT ?1",
                           -1, &s, nullptr) != SQLITE_OK) {
        sqlite3_finalize(s);
        return error("prepare the audit query");
    }
    Stmt stmt(s);
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(limit));
    std::vector<AuditEntry> rows;
    int rc = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        rows.push_back({sqlite3_column_int64(s, 0), column_text(s, 1), column_text(s, 2),
                        column_text(s, 3), column_text(s, 4)});
    }
    if (rc != SQLITE_DONE) return error("read the audit log");
    return rows;
}

}  // namespace tokenradar::keys
