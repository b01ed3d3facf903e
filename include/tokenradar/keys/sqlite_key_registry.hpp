#pragma once
// The key registry in a SQLite file of its own (`[auth] registry`, by default
// `tokenradar.keys.db` beside the store): tables `keys`, `key_usage` and `audit`. A file of its
// own, not tables in the measurement store: several gateway processes on one host may share
// it (WAL, busy_timeout; no owner lock, unlike the store), it holds configuration rather than
// measurements (back it up, keep it when the store is rotated), and admin writes never wait
// behind the measurement writer. `PRAGMA application_id` ("TRKY") tells it from other files.
//
// Threads: one connection behind a mutex; every call blocks on disk.

#include <tokenradar/keys/key_registry.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

struct sqlite3;

namespace tokenradar::keys {

class SqliteKeyRegistry final : public KeyRegistry {
  public:
    // Opens or creates `path`. Refused, naming the file, when it cannot be opened or created,
    // or when it is a SQLite file of something else or not a SQLite file at all.
    static Result<std::unique_ptr<SqliteKeyRegistry>> open(
        const std::string& path, std::chrono::milliseconds busy_timeout = std::chrono::seconds(2));
    ~SqliteKeyRegistry() override;
    SqliteKeyRegistry(const SqliteKeyRegistry&) = delete;
    SqliteKeyRegistry& operator=(const SqliteKeyRegistry&) = delete;

    Result<void> create(const VirtualKey& key, const AuditEntry& audit) override;
    Result<std::vector<VirtualKey>> list(bool with_revoked) override;
    Result<bool> rotate(std::string_view id, std::string_view sha256, std::int64_t now_us,
                        const AuditEntry& audit) override;
    Result<bool> revoke(std::string_view id, std::int64_t now_us, const AuditEntry& audit) override;
    Result<void> add_usage(std::span<const KeyUsage> deltas) override;
    Result<std::vector<KeyUsage>> usage(std::int64_t since_us) override;
    Result<std::vector<AuditEntry>> audit(std::size_t limit) override;
    [[nodiscard]] std::string describe() const override { return "sqlite " + path_; }

  private:
    SqliteKeyRegistry(std::string path, sqlite3* db);
    Result<void> exec(const char* sql, std::string_view what);
    Result<void> append_audit(const AuditEntry& audit);
    Error error(std::string_view what) const;

    std::string path_;
    sqlite3* db_;
    std::mutex mu_;
};

}  // namespace tokenradar::keys
