#include <tokenradar/store/postgres_key_registry.hpp>

#include "pg_connection.hpp"
#include "pg_migrations.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

namespace tokenradar::store {
namespace {

constexpr const char* kKeyColumns =
    "id, name, sha256, models, rpm, tpm, budget_tokens, budget_period, created_us, rotated_us, "
    "revoked_us";

keys::VirtualKey key_of(const PGresult* r, int row) {
    keys::VirtualKey k;
    k.id = pg_text(r, row, 0);
    k.spec.name = pg_text(r, row, 1);
    k.sha256 = pg_text(r, row, 2);
    k.spec.models = keys::models_from_json(pg_text(r, row, 3));
    k.spec.rpm = pg_int8(r, row, 4);
    k.spec.tpm = pg_int8(r, row, 5);
    k.spec.budget_tokens = pg_int8(r, row, 6);
    if (auto p = keys::parse_budget_period(pg_text(r, row, 7))) k.spec.budget_period = *p;
    k.created_us = pg_int8(r, row, 8);
    k.rotated_us = pg_int8(r, row, 9);
    k.revoked_us = pg_int8(r, row, 10);
    return k;
}

// The number of rows an INSERT, UPDATE or DELETE touched.
long affected(PGresult* r) { return std::strtol(PQcmdTuples(r), nullptr, 10); }

}  // namespace

PostgresKeyRegistry::PostgresKeyRegistry(std::unique_ptr<PgConnection> db,
                                         std::chrono::milliseconds timeout)
    : db_(std::move(db)), params_(std::make_unique<PgParams>()), connect_timeout_(timeout) {}

PostgresKeyRegistry::~PostgresKeyRegistry() = default;

std::string PostgresKeyRegistry::describe() const { return "postgresql " + db_->name(); }

Result<std::unique_ptr<PostgresKeyRegistry>> PostgresKeyRegistry::open(
    const std::string& url, std::chrono::milliseconds connect_timeout) {
    auto parsed = PgConnection::parse(url);
    if (!parsed) return parsed.error();
    std::unique_ptr<PostgresKeyRegistry> registry(new PostgresKeyRegistry(
        std::make_unique<PgConnection>(std::move(*parsed)), connect_timeout));
    if (auto up = registry->connected(); !up) return up.error();
    return registry;
}

Result<void> PostgresKeyRegistry::connected() {
    if (db_->connected()) return {};
    if (auto connected = db_->connect(connect_timeout_); !connected) return connected.error();
    // Perhaps another server (a failover): its schema is checked, and brought up to date.
    if (auto schema = pg_migrate(*db_, builtin_pg_migrations(), true); !schema) {
        db_->close();
        return schema.error();
    }
    return {};
}

Result<bool> PostgresKeyRegistry::transaction(std::string_view what,
                                              const std::function<Result<bool>()>& change) {
    if (auto up = connected(); !up) return up.error();
    if (auto begun = db_->exec(what, "BEGIN"); !begun) return begun.error();
    auto changed = change();
    if (!changed || !*changed) {
        db_->rollback(what);
        return changed;
    }
    if (auto committed = db_->commit(what); !committed) {
        db_->rollback(what);
        return committed.error();
    }
    return true;
}

Result<void> PostgresKeyRegistry::append_audit(const keys::AuditEntry& a) {
    params_->clear();
    params_->int8(a.ts_us);
    params_->text(a.actor);
    params_->text(a.action);
    params_->text(a.key_id);
    params_->text(a.detail);
    auto done = db_->exec_params(
        "append to the audit log",
        "INSERT INTO key_audit (ts_us, actor, action, key_id, detail) VALUES ($1, $2, $3, $4, $5)",
        *params_, PGRES_COMMAND_OK);
    if (!done) return done.error();
    return {};
}

Result<void> PostgresKeyRegistry::create(const keys::VirtualKey& key,
                                         const keys::AuditEntry& audit) {
    std::lock_guard lock(mu_);
    bool taken = false;
    auto done = transaction("create a key", [&]() -> Result<bool> {
        params_->clear();
        params_->text(key.id);
        params_->text(key.spec.name);
        params_->text(key.sha256);
        params_->text(keys::models_to_json(key.spec.models));
        params_->int8(key.spec.rpm);
        params_->int8(key.spec.tpm);
        params_->int8(key.spec.budget_tokens);
        params_->text(keys::to_string(key.spec.budget_period));
        params_->int8(key.created_us);
        params_->int8(key.rotated_us);
        params_->int8(key.revoked_us);
        // A name an active key holds (perhaps another node's, a moment ago) inserts nothing.
        auto inserted = db_->exec_params(
            "insert the key",
            fmt::format("INSERT INTO virtual_keys ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, "
                        "$9, $10, $11) ON CONFLICT (name) WHERE revoked_us = 0 DO NOTHING",
                        kKeyColumns),
            *params_, PGRES_COMMAND_OK);
        if (!inserted) return inserted.error();
        taken = affected(inserted->get()) == 0;
        if (taken) return false;
        if (auto logged = append_audit(audit); !logged) return logged.error();
        return true;
    });
    if (!done) return done.error();
    if (taken) return keys::name_taken(key.spec.name);
    return {};
}

Result<std::vector<keys::VirtualKey>> PostgresKeyRegistry::list(bool with_revoked) {
    std::lock_guard lock(mu_);
    if (auto up = connected(); !up) return up.error();
    params_->clear();
    auto rows =
        db_->exec_params("list the keys",
                         fmt::format("SELECT {} FROM virtual_keys {}ORDER BY created_us, id",
                                     kKeyColumns, with_revoked ? "" : "WHERE revoked_us = 0 "),
                         *params_, PGRES_TUPLES_OK);
    if (!rows) return rows.error();
    std::vector<keys::VirtualKey> out;
    const int n = PQntuples(rows->get());
    out.reserve(static_cast<std::size_t>(n));
    for (int row = 0; row < n; ++row) out.push_back(key_of(rows->get(), row));
    return out;
}

Result<bool> PostgresKeyRegistry::rotate(std::string_view id, std::string_view sha256,
                                         std::int64_t now_us, const keys::AuditEntry& audit) {
    std::lock_guard lock(mu_);
    return transaction("rotate a key", [&]() -> Result<bool> {
        params_->clear();
        params_->text(id);
        params_->text(sha256);
        params_->int8(now_us);
        auto updated = db_->exec_params(
            "rotate the key",
            "UPDATE virtual_keys SET sha256 = $2, rotated_us = $3 WHERE id = $1 AND revoked_us = 0",
            *params_, PGRES_COMMAND_OK);
        if (!updated) return updated.error();
        if (affected(updated->get()) == 0) return false;
        if (auto logged = append_audit(audit); !logged) return logged.error();
        return true;
    });
}

Result<bool> PostgresKeyRegistry::revoke(std::string_view id, std::int64_t now_us,
                                         const keys::AuditEntry& audit) {
    std::lock_guard lock(mu_);
    return transaction("revoke a key", [&]() -> Result<bool> {
        params_->clear();
        params_->text(id);
        params_->int8(now_us);
        auto updated = db_->exec_params(
            "revoke the key",
            "UPDATE virtual_keys SET revoked_us = $2 WHERE id = $1 AND revoked_us = 0", *params_,
            PGRES_COMMAND_OK);
        if (!updated) return updated.error();
        if (affected(updated->get()) == 0) return false;
        if (auto logged = append_audit(audit); !logged) return logged.error();
        return true;
    });
}

Result<void> PostgresKeyRegistry::add_usage(std::span<const keys::KeyUsage> deltas) {
    if (deltas.empty()) return {};
    std::lock_guard lock(mu_);
    auto done = transaction("add usage", [&]() -> Result<bool> {
        for (const keys::KeyUsage& d : deltas) {
            params_->clear();
            params_->text(d.key_id);
            params_->int8(d.period_start_us);
            params_->int8(d.requests);
            params_->int8(d.tokens);
            auto added = db_->exec_params(
                "add usage",
                "INSERT INTO key_usage (key_id, period_start_us, requests, tokens) "
                "VALUES ($1, $2, $3, $4) ON CONFLICT (key_id, period_start_us) DO UPDATE SET "
                "requests = key_usage.requests + excluded.requests, "
                "tokens = key_usage.tokens + excluded.tokens",
                *params_, PGRES_COMMAND_OK);
            if (!added) return added.error();
        }
        return true;
    });
    if (!done) return done.error();
    return {};
}

Result<std::vector<keys::KeyUsage>> PostgresKeyRegistry::usage(std::int64_t since_us) {
    std::lock_guard lock(mu_);
    if (auto up = connected(); !up) return up.error();
    params_->clear();
    params_->int8(since_us);
    auto rows = db_->exec_params("read usage",
                                 "SELECT key_id, period_start_us, requests, tokens FROM key_usage "
                                 "WHERE period_start_us >= $1",
                                 *params_, PGRES_TUPLES_OK);
    if (!rows) return rows.error();
    const PGresult* r = rows->get();
    std::vector<keys::KeyUsage> out;
    out.reserve(static_cast<std::size_t>(PQntuples(r)));
    for (int row = 0; row < PQntuples(r); ++row) {
        out.push_back({std::string(pg_text(r, row, 0)), pg_int8(r, row, 1), pg_int8(r, row, 2),
                       pg_int8(r, row, 3)});
    }
    return out;
}

Result<std::vector<keys::AuditEntry>> PostgresKeyRegistry::audit(std::size_t limit) {
    std::lock_guard lock(mu_);
    if (auto up = connected(); !up) return up.error();
    params_->clear();
    params_->int8(static_cast<std::int64_t>(limit));
    auto rows = db_->exec_params("read the audit log",
                                 "SELECT ts_us, actor, action, key_id, detail FROM key_audit "
                                 "ORDER BY id DESC LIMIT $1",
                                 *params_, PGRES_TUPLES_OK);
    if (!rows) return rows.error();
    const PGresult* r = rows->get();
    std::vector<keys::AuditEntry> out;
    out.reserve(static_cast<std::size_t>(PQntuples(r)));
    for (int row = 0; row < PQntuples(r); ++row) {
        out.push_back({pg_int8(r, row, 0), std::string(pg_text(r, row, 1)),
                       std::string(pg_text(r, row, 2)), std::string(pg_text(r, row, 3)),
                       std::string(pg_text(r, row, 4))});
    }
    return out;
}

}  // namespace tokenradar::store
