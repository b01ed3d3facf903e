#pragma once
// Where measurement records are kept: the interface every backend implements (SQLite now,
// PostgreSQL for several gateway nodes later). A record is one request attempt
// (core/measurement.hpp); stores never hold prompt or answer text, which a record does not
// have.
//
// Threads: a store object is one connection. Use it from one thread at a time (BatchWriter
// owns its own); open another store object on the same file for another thread or process.
// Every call blocks the calling thread on disk I/O: never call one on the request path.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tokenradar::store {

// Records whose wall-clock stamp ts_us is in [from_ts_us, to_ts_us).
struct RecordQuery {
    std::int64_t from_ts_us = std::numeric_limits<std::int64_t>::min();
    std::int64_t to_ts_us = std::numeric_limits<std::int64_t>::max();
    // and stored after the record with id after_id, up to the one with id up_to_id (last_id())
    std::int64_t after_id = 0;
    std::int64_t up_to_id = std::numeric_limits<std::int64_t>::max();
    bool newest_first = false;  // default: oldest first (by ts_us, then insertion order)
    std::size_t limit = 0;      // 0 = no limit
};

// Called once per record; the reference is valid only during the call.
using RecordVisitor = std::function<void(const Measurement&)>;

// One observatory rollup row (observatory/rollup.hpp HourRow): an hour x label cell x client
// and its encoded aggregate, which the store keeps as opaque bytes.
struct RollupRow {
    std::int64_t hour_us = 0;
    // provider, model, task, source, api, upstream_region, client_region, client_key
    std::array<std::string, 8> labels;
    bool stream = true;
    std::string client_id;
    std::vector<std::uint8_t> aggregate;
};
using RollupVisitor = std::function<void(RollupRow&&)>;

class MeasurementStore {
  public:
    virtual ~MeasurementStore() = default;

    // Appends the records atomically: all of them or, on error, none. A record with a
    // client_id whose (client_id, request_id, attempt) is already stored is a duplicate
    // submission and is skipped. One flag per record: true when stored, false when skipped.
    virtual Result<std::vector<bool>> insert(std::span<const Measurement> records) = 0;

    // The id of the newest record (0 when none): a position for RecordQuery::after_id.
    virtual Result<std::int64_t> last_id() = 0;

    // Deletes records with ts_us < `ts_us` (retention); returns how many.
    virtual Result<std::size_t> delete_before(std::int64_t ts_us) = 0;

    // Streams matching records to `visit` without holding them all in memory; returns how many.
    // Steady-clock stamps come back relative to send, as in the JSONL form: t.send == 0,
    // t.sched <= 0, t.headers is headers - send, and so on. Every other field is as inserted.
    virtual Result<std::size_t> scan(const RecordQuery& query, const RecordVisitor& visit) = 0;

    // Rollups (the observatory's): replaces the given rows and sets the watermark (the last
    // record id they include) in one transaction.
    virtual Result<void> save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) = 0;
    // Streams every rollup row in hour order (the observatory folds each closed hour as soon
    // as the next one starts); returns the watermark (0 when none was saved).
    virtual Result<std::int64_t> load_rollups(const RollupVisitor& visit) = 0;
    // Deletes every rollup row and resets the watermark (rollup --rebuild).
    virtual Result<void> clear_rollups() = 0;
    // Stores that other nodes write at the same time (ClickHouse): an id that every record
    // whose insert began more than `lag` ago (by this node's clock) has at most, so a reader
    // that has read every id up to it misses none of those as long as inserts take less than
    // `lag` and the nodes' clocks agree to within it. nullopt: this node is the only writer
    // (SQLite; PostgreSQL, which one owner holds), whose records it sees as it writes them.
    [[nodiscard]] virtual std::optional<std::int64_t> follow_ceiling(
        std::chrono::milliseconds /*lag*/) const {
        return std::nullopt;
    }

    // scan() into a vector.
    Result<std::vector<Measurement>> select(const RecordQuery& query);
};

}  // namespace tokenradar::store
