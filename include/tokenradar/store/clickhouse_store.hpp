#pragma once
// The store for many observatory nodes: one ClickHouse database (store.url =
// "clickhouse://user:password@host:8123/db"), spoken to over ClickHouse's HTTP interface (no
// client library), schema created and migrated on open (src/store/migrations_ch/, versions
// in the table tokenradar_migrations). Records in a MergeTree partitioned by day, rollups in a
// ReplacingMergeTree: src/store/README.md, "ClickHouseStore".
//
// Threads: one ClickHouseStore is one HTTP connection, used by one thread at a time (the
// MeasurementStore contract). Every call blocks on the network: never on the request path.
//
// Several nodes may write the same database at once. ClickHouse has no transactions, unique
// indexes, sequences or locks, so three guarantees of the single-node backends weaken there
// (README "ClickHouseStore"): ids are time-based (µs x 1024 + node), increasing per store, so
// a watermark read while another node's INSERT is in flight may pass that node's records; a
// submitted record is de-duplicated by a lookup before its INSERT, so two nodes storing the
// same submission at the same moment may both store it; no node owns the rollups (run one
// observatory that saves them).
//
// Errors name the URL with its password redacted; the password never reaches a log.

#include <tokenradar/store/measurement_store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::store {

class ClickHouseHttp;

// `url` with its password replaced by "[redacted]".
std::string redact_clickhouse_url(std::string_view url);

struct ClickHouseOptions {
    // Create the database and apply missing migrations (and add a column for a label this
    // binary knows and the table lacks). When false, an older schema is an error.
    bool migrate = true;
    std::chrono::milliseconds connect_timeout{5000};
    // The longest wait for the server's next bytes (a query runs to its end before its answer
    // starts: wait_end_of_query).
    std::chrono::milliseconds io_timeout{300'000};
    // The low 10 bits of every id this store hands out (0-1023); -1: random at open. Two
    // writers with the same node may hand out one id twice, which only ties their order.
    int node = -1;
};

// Statements run since open(), by kind.
struct ClickHouseCounts {
    std::uint64_t inserts = 0;     // INSERT ... FORMAT RowBinary of records
    std::uint64_t lookups = 0;     // duplicate lookups of submitted records
    std::uint64_t mutations = 0;   // ALTER TABLE ... DELETE waited for
    std::uint64_t partitions = 0;  // partitions dropped by delete_before
};

class ClickHouseStore final : public MeasurementStore {
  public:
    // Connects to `url` (clickhouse://[user[:password]@]host[:port]/database; port 8123 by
    // default) and applies missing migrations. Errc::bad_request for a malformed URL (saying
    // the form expected), Errc::connect_failed when the server cannot be reached or refuses
    // the login, Errc::unsupported for a schema newer than this binary's.
    static Result<std::unique_ptr<ClickHouseStore>> open(const std::string& url,
                                                         const ClickHouseOptions& options = {});

    ~ClickHouseStore() override;
    ClickHouseStore(const ClickHouseStore&) = delete;
    ClickHouseStore& operator=(const ClickHouseStore&) = delete;

    // One INSERT ... FORMAT RowBinary for the whole span (one block: all or nothing, except
    // a span whose records fall on several days, one part per day). Submitted records are
    // looked up first; false for one already stored (or repeated in the span).
    Result<std::vector<bool>> insert(std::span<const Measurement> records) override;
    Result<std::int64_t> last_id() override;
    // Ids are microseconds x 1024 + node: the largest of `lag` ago on this node's clock.
    [[nodiscard]] std::optional<std::int64_t> follow_ceiling(
        std::chrono::milliseconds lag) const override;
    // Drops whole days before `ts_us` (partitions) and deletes the rest with a mutation,
    // waiting until it is done.
    Result<std::size_t> delete_before(std::int64_t ts_us) override;
    // One SELECT ... FORMAT RowBinary, its answer decoded as it arrives.
    Result<std::size_t> scan(const RecordQuery& query, const RecordVisitor& visit) override;
    // One INSERT of the rows and the watermark (one block of an unpartitioned table: all or
    // nothing); newer versions replace older rows of the same key.
    Result<void> save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) override;
    Result<std::int64_t> load_rollups(const RollupVisitor& visit) override;
    Result<void> clear_rollups() override;

    // The URL with its password redacted.
    [[nodiscard]] const std::string& url() const noexcept;
    [[nodiscard]] int schema_version() const noexcept { return schema_version_; }
    [[nodiscard]] int migrations_applied() const noexcept { return migrations_applied_; }
    [[nodiscard]] ClickHouseCounts counts() const noexcept { return counts_; }
    [[nodiscard]] int node() const noexcept { return node_; }
    static int latest_schema_version() noexcept;

  private:
    ClickHouseStore(std::unique_ptr<ClickHouseHttp> http, ClickHouseOptions options);
    Result<void> migrate();
    // The label columns `measurements` has (those of core's label table it lacks are added
    // when migrating).
    Result<void> find_label_columns();
    // The submitted records of `records` already stored: their positions.
    Result<std::vector<bool>> stored_before(std::span<const Measurement> records);
    Result<void> wait_for_mutations(std::string_view what);
    std::int64_t next_id() noexcept;

    std::unique_ptr<ClickHouseHttp> http_;
    ClickHouseOptions options_;
    int schema_version_ = 0;
    int migrations_applied_ = 0;
    int node_ = 0;
    std::int64_t last_tick_ = 0;          // the µs part of the last id handed out
    std::uint64_t last_version_ = 0;      // of rollup rows
    std::vector<bool> has_label_column_;  // per core label, in table order
    ClickHouseCounts counts_;
    std::string rows_;  // the RowBinary of an INSERT, reused
    std::vector<std::uint8_t> packed_;
};

}  // namespace tokenradar::store
