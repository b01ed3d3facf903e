#pragma once
// The store for several gateway nodes: one PostgreSQL database (store.url =
// "postgresql://user:password@host:5432/db"), schema created and migrated on open
// (src/store/migrations_pg/, versions in the table tokenradar_migrations). The same records,
// label sets, rollups and queries as SqliteStore (src/store/README.md, "PostgresStore").
//
// Threads: one PostgresStore is one libpq connection, used by one thread at a time (the
// MeasurementStore contract). Any number of stores, in one process or on several nodes, may
// use the same database: inserts take a transaction-level advisory lock so record ids are
// handed out and committed in order (after_id and the rollup watermark rely on it), and
// migrations run under a session advisory lock, each applied once.
//
// Reconnects: when the server goes away, the call that saw it fails (Errc::connection_error,
// or Errc::connect_failed from its reconnect) and the connection is dropped; the next call
// reconnects (at once the first time, then no sooner than a backoff that doubles from
// reconnect_min to reconnect_max while attempts fail, failing fast with the last reason in
// between). A connection found dead at BEGIN (the server restarted while the store was idle)
// is replaced and the call goes on: nothing of it had been sent. A transaction that
// failed is rolled back by the server, so a retried insert (BatchWriter keeps its batch)
// stores each record once, unless the connection broke while COMMIT itself was in flight:
// then whether it committed is unknown and a retry may store records measured here twice
// (submitted ones are de-duplicated by their identity).
//
// Errors name the URL with its password redacted; the password never reaches a log.

#include <tokenradar/store/measurement_store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

struct pg_result;  // libpq's PGresult

namespace tokenradar::store {

class PgConnection;
class PgLabelSets;
class PgParams;

// `url` as it may be printed: the password of its user info and any `password=` parameter
// replaced by "[redacted]" ("postgresql://app:[redacted]@db:5432/tokenradar").
std::string redact_postgres_url(std::string_view url);

struct PostgresOptions {
    // Apply missing migrations. When false, an older schema is an error (a reporting tool
    // must not change the schema under running gateways of an older version).
    bool migrate = true;
    // How long one connection attempt may take (libpq counts whole seconds, at least 2).
    std::chrono::milliseconds connect_timeout{5000};
    // The backoff between failed reconnection attempts (see Reconnects above).
    std::chrono::milliseconds reconnect_min{100};
    std::chrono::milliseconds reconnect_max{5000};
    // How records measured here (no client id) are written: `copy` streams them with one
    // binary COPY per run of them, `insert` sends multi-row INSERTs of 64 (what submitted
    // records always use, with ON CONFLICT DO NOTHING). Measured in bench/README.md.
    enum class Loader { copy, insert };
    Loader loader = Loader::copy;
    // false: this connection commits with synchronous_commit = off, SQLite's durability in
    // WAL mode with synchronous=NORMAL: a crash of the database server (or its machine) may
    // lose the last commits (at most 3 x wal_writer_delay, 600 ms by default), never corrupt
    // the database; a killed gateway loses nothing it committed. true: the server's own
    // setting (on by default), each commit waits for its WAL flush. Measured in bench/README.md.
    bool synchronous_commit = false;
    // Own the database's rollups while connected (SqliteOptions::exclusive for several
    // nodes): a session advisory lock, refused with Errc::forbidden naming the holder's
    // connection while another store holds it, taken again after each reconnect. For
    // whoever saves rollups (serve with its observatory on); writers and readers leave it off.
    bool exclusive = false;
};

// Statements run since open(), by kind.
struct PostgresCounts {
    std::uint64_t copies = 0;           // COPY ... FROM STDIN of records measured here
    std::uint64_t insert_rows = 0;      // multi-row INSERT statements
    std::uint64_t reconnects = 0;       // successful connections after the first
    std::uint64_t failed_connects = 0;  // failed attempts after the first connection
};

class PostgresStore final : public MeasurementStore {
  public:
    // Connects to `url` (postgresql:// or postgres://, as libpq reads it) and applies the
    // missing migrations. Errors name the URL with its password redacted: Errc::bad_request
    // for a URL libpq refuses, Errc::connect_failed when the server cannot be reached or
    // refuses the login, Errc::unsupported for a schema newer than this binary's.
    static Result<std::unique_ptr<PostgresStore>> open(const std::string& url,
                                                       const PostgresOptions& options = {});

    ~PostgresStore() override;
    PostgresStore(const PostgresStore&) = delete;
    PostgresStore& operator=(const PostgresStore&) = delete;

    // One transaction for the whole span. Runs of records measured here go by COPY (or
    // multi-row INSERT, PostgresOptions::loader); submitted records by multi-row INSERT ... ON
    // CONFLICT DO NOTHING, false in the result for a submitter's duplicate.
    Result<std::vector<bool>> insert(std::span<const Measurement> records) override;
    Result<std::int64_t> last_id() override;
    // In chunks of 10,000 rows, one transaction each.
    Result<std::size_t> delete_before(std::int64_t ts_us) override;
    // Through a cursor, 4,096 rows at a time, in one read-only transaction.
    Result<std::size_t> scan(const RecordQuery& query, const RecordVisitor& visit) override;
    Result<void> save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) override;
    Result<std::int64_t> load_rollups(const RollupVisitor& visit) override;
    Result<void> clear_rollups() override;

    // The URL with its password redacted.
    [[nodiscard]] const std::string& url() const noexcept;
    [[nodiscard]] int schema_version() const noexcept { return schema_version_; }
    // How many migrations this store's open() applied (0 when another opener had).
    [[nodiscard]] int migrations_applied() const noexcept { return migrations_applied_; }
    [[nodiscard]] PostgresCounts counts() const noexcept { return counts_; }
    // The newest schema version this binary knows.
    static int latest_schema_version() noexcept;
    // The key of the transaction-level advisory lock every insert takes first (ASCII
    // "tr-insrt"): ids are handed out and committed in one order across all writers. A session
    // that holds it pauses every writer of the database (their BatchWriters keep queueing).
    static constexpr std::int64_t kInsertLock = 0x74722d696e737274;

  private:
    using Clock = std::chrono::steady_clock;
    enum class Begin { read, write, insert };  // insert: with the insert lock
    using RowReader = std::function<Result<void>(const pg_result*, int)>;

    PostgresStore(std::unique_ptr<PgConnection> db, PostgresOptions options);
    // Connected, or reconnected now when due; else the last reason, failing fast.
    Result<void> ready();
    // Called with every failed call's error: a broken connection is dropped and a reconnect
    // scheduled.
    Error failed(Error error);
    // BEGIN, body, COMMIT; ROLLBACK when either fails (or body throws). A broken connection
    // found at BEGIN is reconnected and BEGIN retried once: nothing of the transaction had
    // been sent.
    Result<void> in_transaction(std::string_view what, Begin begin,
                                const std::function<Result<void>()>& body);
    // Records measured here with their label set ids, by one binary COPY.
    Result<void> copy_local(std::span<const Measurement> records,
                            std::span<const std::int64_t> label_sets);
    // Multi-row INSERTs of kRowsPerInsert; `stored` gets a flag per record.
    Result<void> insert_rows(std::span<const Measurement> records,
                             std::span<const std::int64_t> label_sets, bool submitted,
                             std::vector<bool>& stored);
    // Prepares the multi-row INSERT of `rows` records once per connection; its name.
    Result<std::string> insert_statement(std::size_t rows, bool submitted);
    // The rows of `sql` (a SELECT with `params`) through a cursor, FETCH by FETCH, in a
    // read-only transaction; how many.
    Result<std::size_t> each_row(std::string_view what, const std::string& sql, PgParams& params,
                                 const RowReader& row);

    std::unique_ptr<PgConnection> db_;
    std::unique_ptr<PgLabelSets> label_sets_;
    PostgresOptions options_;
    int schema_version_ = 0;
    int migrations_applied_ = 0;
    PostgresCounts counts_;
    std::vector<std::string> prepared_;  // statements prepared on this connection
    std::unique_ptr<PgParams> params_;   // reused from statement to statement
    std::string copy_buffer_;
    std::vector<std::uint8_t> packed_;
    std::vector<std::int64_t> label_ids_;
    // Reconnection: not before next_connect_; the wait after the next failure; why the last
    // attempt failed.
    Clock::time_point next_connect_{};
    std::chrono::milliseconds backoff_{0};
    std::string last_failure_;
    std::minstd_rand jitter_;
};

}  // namespace tokenradar::store
