#pragma once
// The embedded store: one SQLite file (default tokenradar.db), WAL journal, schema created
// and migrated on open (src/store/migrations/, version in PRAGMA user_version).
//
// Threads: one SqliteStore is one connection, used by one thread at a time (the
// MeasurementStore contract). Several SqliteStore objects, in one process or several, may
// use the same file: WAL lets readers run while one writer commits; a writer waits up to
// busy_timeout for another writer's lock, then fails with Errc::overloaded.
//
// Checkpoints: a store that commits moves SQLite's WAL checkpoint (copying the WAL back into
// the database file, ending in an fsync) to a thread of its own once the WAL passes 1,000
// pages, so inserts never wait for the disk's writeback; should that thread fall behind, the
// committing thread checkpoints itself past 16,000 pages (about 64 MB), so the WAL stays
// bounded either way.
//
// Durability: synchronous=NORMAL. A committed insert survives the process being killed
// (kill -9); an operating-system crash or power loss may undo the last commits, never
// corrupt the file.

#include <tokenradar/store/measurement_store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace tokenradar::store {

class OwnerLock;
class WalCheckpointer;

struct SqliteOptions {
    // Create the file (and schema) when missing. When false, a missing file is an error
    // and the file must already hold a TokenRadar schema.
    bool create = true;
    // Apply missing migrations. When false, an older schema is an error: a reporting tool
    // (`stats`) must not change the schema under a running gateway of an older version.
    bool migrate = true;
    // How long a write waits for another connection's write lock before failing.
    std::chrono::milliseconds busy_timeout{5000};
    // Checkpoint the WAL on a background thread (see above). When false, SQLite's automatic
    // checkpoint runs on the committing thread, as SQLite does by default.
    bool background_checkpoint = true;
    // The WAL size (pages) that asks the background thread for a checkpoint; the committing
    // thread checkpoints itself at 16 times this. 1,000 is SQLite's own automatic threshold.
    int wal_checkpoint_pages = 1'000;
    // Own the file while open (store/owner_lock.hpp): an exclusive lock on "<path>.lock",
    // refused with the owner's pid while another process holds it. For whoever writes
    // rollups (serve, demo, rollup --rebuild); readers (stats) leave it off.
    bool exclusive = false;
};

// Checkpoints run since open(), by where they ran.
struct WalCheckpointCounts {
    std::uint64_t background = 0;
    std::uint64_t on_writer = 0;  // the fallback: the background thread fell behind
};

// INSERT statements run since open(), by kind.
struct InsertStatementCounts {
    std::uint64_t multi_row = 0;   // 16 records measured here (no client id) at once
    std::uint64_t single_row = 0;  // one record: a submitted one, or what a batch leaves over
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

    // One transaction for the whole span. Records measured here (no client id) go 16 to a
    // multi-row INSERT where 16 follow each other; every other record is one INSERT OR
    // IGNORE, false in the result when it is a submitter's duplicate.
    Result<std::vector<bool>> insert(std::span<const Measurement> records) override;
    Result<std::int64_t> last_id() override;
    // In chunks of 10,000 rows, one transaction each, so a long backlog never holds the
    // write lock for long.
    Result<std::size_t> delete_before(std::int64_t ts_us) override;
    Result<std::size_t> scan(const RecordQuery& query, const RecordVisitor& visit) override;
    Result<void> save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) override;
    Result<std::int64_t> load_rollups(const RollupVisitor& visit) override;
    Result<void> clear_rollups() override;

    // From the thread that uses the store.
    [[nodiscard]] WalCheckpointCounts wal_checkpoints() const noexcept;
    [[nodiscard]] InsertStatementCounts insert_statements() const noexcept { return inserts_; }
    // The WAL's size in pages after this store's last commit (0 before any, or without
    // background_checkpoint). Small again once a complete checkpoint let the WAL restart.
    [[nodiscard]] int wal_pages() const noexcept { return wal_pages_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] int schema_version() const noexcept { return schema_version_; }
    // The newest schema version this binary knows.
    static int latest_schema_version() noexcept;

  private:
    struct Statements;
    // BEGIN IMMEDIATE, body, COMMIT; ROLLBACK when either fails.
    Result<void> in_transaction(std::string_view what, const std::function<Result<void>()>& body);
    SqliteStore(std::string path, sqlite3* db);
    // sqlite3_wal_hook: runs on the committing thread after each commit with the WAL's size.
    static int on_commit(void* store, sqlite3* db, const char* schema, int wal_frames);

    std::string path_;
    sqlite3* db_ = nullptr;
    std::unique_ptr<Statements> statements_;
    std::unique_ptr<WalCheckpointer> checkpointer_;  // null: SQLite's own checkpoints
    std::unique_ptr<OwnerLock> owner_lock_;          // null: not SqliteOptions::exclusive
    int checkpoint_pages_ = 0;
    int wal_pages_ = 0;
    std::uint64_t writer_checkpoints_ = 0;
    InsertStatementCounts inserts_;
    int schema_version_ = 0;
};

}  // namespace tokenradar::store
