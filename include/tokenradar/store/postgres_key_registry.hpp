#pragma once
// The virtual key registry in PostgreSQL (keys/key_registry.hpp), for gateway nodes on several
// hosts: the tables of migration 0002 (src/store/migrations_pg/0002_key_registry.sql), in the
// measurement database (`[auth] registry = "auto"` with `[store] url`) or any other one
// (`registry = "postgresql://..."`). Opening applies missing migrations under the store's
// advisory lock, so a registry and the nodes' stores may start in any order.
//
// A lost connection is an Errc::connection_error for the call that saw it; the next call
// reconnects (the gateway calls every `[auth] refresh`, and keeps the keys it read last in
// between). Writes are never retried: a COMMIT whose answer was lost may have happened, and the
// gateway keeps usage it could not write for the next call.
//
// Threads: one connection behind a mutex; every call blocks on the network.

#include <tokenradar/keys/key_registry.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace tokenradar::store {

class PgConnection;
class PgParams;

class PostgresKeyRegistry final : public keys::KeyRegistry {
  public:
    // Connects to `url` and brings its schema up to date. Errc::bad_request for a URL libpq
    // refuses, Errc::connect_failed when the server cannot be reached, Errc::unsupported for a
    // database of a newer schema; messages name the URL with its password redacted.
    static Result<std::unique_ptr<PostgresKeyRegistry>> open(
        const std::string& url,
        std::chrono::milliseconds connect_timeout = std::chrono::seconds(2));
    ~PostgresKeyRegistry() override;
    PostgresKeyRegistry(const PostgresKeyRegistry&) = delete;
    PostgresKeyRegistry& operator=(const PostgresKeyRegistry&) = delete;

    Result<void> create(const keys::VirtualKey& key, const keys::AuditEntry& audit) override;
    Result<std::vector<keys::VirtualKey>> list(bool with_revoked) override;
    Result<bool> rotate(std::string_view id, std::string_view sha256, std::int64_t now_us,
                        const keys::AuditEntry& audit) override;
    Result<bool> revoke(std::string_view id, std::int64_t now_us,
                        const keys::AuditEntry& audit) override;
    Result<void> add_usage(std::span<const keys::KeyUsage> deltas) override;
    Result<std::vector<keys::KeyUsage>> usage(std::int64_t since_us) override;
    Result<std::vector<keys::AuditEntry>> audit(std::size_t limit) override;
    [[nodiscard]] std::string describe() const override;

  private:
    PostgresKeyRegistry(std::unique_ptr<PgConnection> db, std::chrono::milliseconds timeout);
    // Reconnects (and checks the schema) when the connection is gone.
    Result<void> connected();
    // `change` between BEGIN and COMMIT: true commits, false rolls back (nothing to change).
    Result<bool> transaction(std::string_view what, const std::function<Result<bool>()>& change);
    Result<void> append_audit(const keys::AuditEntry& audit);

    std::unique_ptr<PgConnection> db_;
    std::unique_ptr<PgParams> params_;
    std::chrono::milliseconds connect_timeout_;
    std::mutex mu_;
};

}  // namespace tokenradar::store
