#pragma once
// The embedded store: one SQLite file (default tokenradar.db), WAL journal, schema created
// and migrated on open (src/store/migrations/, version in PRAGMA user_version).
//
// Threads: one SqliteStore is one connection, used by one thread at a time (the
// MeasurementStore contract). Several SqliteStore objects, in one process or several, may
// use the same file: WAL lets readers run while one writer commits; a writer waits up to
// busy_timeout for another writer's lock, then fails with Errc::overloaded.
//
// Durability: synchronous=NORMAL. A committed insert survives the process being killed
// (kill -9); an operating-system crash or power loss may undo the last commits, never
// corrupt the file.

#include <tokenradar/store/measurement_store.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace tokenradar::store {

struct SqliteOptions {
    // Create the file (and schema) when missing. When false, a missing file is an error
    // and the file must already hold a TokenRadar schema.
    bool create = true;
    // Apply missing migrations. When false, an older schema is an error: a reporting tool
    // (`stats`) must not change the schema under a running gateway of an older version.
    bool migrate = true;
    // How long a write waits for another connection's write lock before failing.
    std::chrono::milliseconds busy_timeout{5000};
};

class SqliteStore final : public MeasurementStore {
  public:
    // Opens or creates `path`, sets WAL, synchronous=NORMAL and busy_timeout, and applies
    // the missing migrations (see SqliteOptions). Errors name the path and SQLite's message;
    // a database written by a newer tokenradar (higher schema version) is refused.
    static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                     const SqliteOptions& options = {});

    ~SqliteStore() override;
    SqliteStore(const SqliteStore&) = delete;
    SqliteStore& operator=(const SqliteStore&) = delete;

    // One transaction and one prepared statement for the whole span.
    Result<std::vector<bool>> insert(std::span<const Measurement> records) override;
    Result<std::int64_t> last_id() override;
    // In chunks of 10,000 rows, one transaction each, so a long backlog never holds the
    // write lock for long.
    Result<std::size_t> delete_before(std::int64_t ts_us) override;
    Result<std::size_t> scan(const RecordQuery& query, const RecordVisitor& visit) override;
    Result<void> save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) override;
    Result<std::int64_t> load_rollups(const RollupVisitor& visit) override;
    Result<void> clear_rollups() override;

    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] int schema_version() const noexcept { return schema_version_; }
    // The newest schema version this binary knows.
    static int latest_schema_version() noexcept;

  private:
    struct Statements;
    // BEGIN IMMEDIATE, body, COMMIT; ROLLBACK when either fails.
    Result<void> in_transaction(std::string_view what, const std::function<Result<void>()>& body);
    SqliteStore(std::string path, sqlite3* db);

    std::string path_;
    sqlite3* db_ = nullptr;
    std::unique_ptr<Statements> statements_;
    int schema_version_ = 0;
};

}  // namespace tokenradar::store
