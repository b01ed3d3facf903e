#include "packed_record.hpp"
#include "pg_connection.hpp"
#include "pg_label_sets.hpp"
#include "pg_migrations.hpp"
#include "rollup_columns.hpp"

#include <tokenradar/store/postgres_store.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <endian.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <string_view>
#include <unordered_map>

namespace tokenradar::store {
namespace {

// pg_advisory_lock's key for the owner of the rollups (ASCII "tr-owner"), held by the session.
constexpr std::int64_t kOwnerLock = 0x74722d6f776e6572;
constexpr std::int64_t kDeleteChunk = 10'000;
constexpr int kFetchRows = 4096;
// Records per multi-row INSERT: 64 x 7 parameters, far below PostgreSQL's 65,535.
constexpr std::size_t kRowsPerInsert = 64;
constexpr std::size_t kRollupRowsPerInsert = 256;

// The columns of a `measurements` row that an insert writes, in the order insert_rows binds
// and COPY sends them; client_id last, left to its default ('') for records measured here.
constexpr std::string_view kInsertColumns =
    "ts_us, request_id, attempt, label_set, status, packed, client_id";
constexpr std::string_view kLocalColumns = "ts_us, request_id, attempt, label_set, status, packed";
constexpr std::array<Oid, 7> kInsertTypes = {kInt8Oid, kTextOid,  kInt4Oid, kInt8Oid,
                                             kTextOid, kByteaOid, kTextOid};
constexpr std::string_view kScanColumns =
    "id, ts_us, request_id, attempt, label_set, status, packed, client_id";

// Binary COPY (PostgreSQL's "COPY ... (FORMAT binary)"): a signature, flags and header
// extension length, then per row a field count and each field as length + bytes, in network
// byte order; -1 as the field count ends the data.
constexpr std::string_view kCopySignature{"PGCOPY\n\377\r\n\0", 11};

void put16(std::string& out, std::int16_t v) {
    const std::uint16_t be = htobe16(static_cast<std::uint16_t>(v));
    out.append(reinterpret_cast<const char*>(&be), sizeof be);
}
void put32(std::string& out, std::int32_t v) {
    const std::uint32_t be = htobe32(static_cast<std::uint32_t>(v));
    out.append(reinterpret_cast<const char*>(&be), sizeof be);
}
void put_int8_field(std::string& out, std::int64_t v) {
    put32(out, 8);
    const std::uint64_t be = htobe64(static_cast<std::uint64_t>(v));
    out.append(reinterpret_cast<const char*>(&be), sizeof be);
}
void put_int4_field(std::string& out, std::int32_t v) {
    put32(out, 4);
    put32(out, v);
}
void put_bytes_field(std::string& out, const void* bytes, std::size_t n) {
    put32(out, static_cast<std::int32_t>(n));
    out.append(static_cast<const char*>(bytes), n);
}

// One line of numbers for a rollup row's key: the hour, each label, stream and client,
// length-prefixed so no two keys share a text.
std::string rollup_key(const RollupRow& row) {
    std::string key = fmt::format("{}|{}|", row.hour_us, row.stream ? 1 : 0);
    for (const std::string& label : row.labels) key += fmt::format("{}:{}", label.size(), label);
    key += fmt::format("{}:{}", row.client_id.size(), row.client_id);
    return key;
}

// The owner lock (PostgresOptions::exclusive), or who holds it.
Result<void> take_ownership(PgConnection& db) {
    auto taken =
        db.exec("take ownership", fmt::format("SELECT pg_try_advisory_lock({})", kOwnerLock),
                PGRES_TUPLES_OK);
    if (!taken) return taken.error();
    if (std::string_view(PQgetvalue(taken->get(), 0, 0)) == "t") return {};
    // A bigint key is locked as classid (high 32 bits), objid (low 32 bits), objsubid 1.
    auto holder =
        db.exec("find the owner",
                fmt::format("SELECT a.pid || ', client ' || coalesce(host(a.client_addr), 'local') "
                            "FROM pg_locks AS l JOIN pg_stat_activity AS a USING (pid) "
                            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = {} "
                            "AND l.objid = {} AND l.objsubid = 1 LIMIT 1",
                            static_cast<std::uint64_t>(kOwnerLock) >> 32U,
                            static_cast<std::uint64_t>(kOwnerLock) & 0xffffffffU),
                PGRES_TUPLES_OK);
    const std::string who = holder && PQntuples(holder->get()) == 1
                                ? PQgetvalue(holder->get(), 0, 0)
                                : std::string("gone since");
    return Error(
        Errc::forbidden,
        fmt::format("{}: in use by another tokenradar process (server pid {})", db.name(), who));
}

// Settings of each new connection, and the owner lock when asked for.
Result<void> session_setup(PgConnection& db, const PostgresOptions& options) {
    if (!options.synchronous_commit) {
        auto set = db.exec("set synchronous_commit", "SET synchronous_commit = off");
        if (!set) return set.error();
    }
    if (options.exclusive) return take_ownership(db);
    return {};
}

}  // namespace

PostgresStore::PostgresStore(std::unique_ptr<PgConnection> db, PostgresOptions options)
    : db_(std::move(db)),
      label_sets_(std::make_unique<PgLabelSets>()),
      options_(options),
      params_(std::make_unique<PgParams>()),
      jitter_(std::random_device()()) {}

PostgresStore::~PostgresStore() = default;

const std::string& PostgresStore::url() const noexcept { return db_->name(); }

int PostgresStore::latest_schema_version() noexcept {
    return builtin_pg_migrations().back().version;
}

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const std::string& url,
                                                           const PostgresOptions& options) {
    auto parsed = PgConnection::parse(url);
    if (!parsed) return parsed.error();
    auto db = std::make_unique<PgConnection>(std::move(*parsed));
    if (auto connected = db->connect(options.connect_timeout); !connected) {
        return connected.error();
    }
    if (auto set = session_setup(*db, options); !set) return set.error();
    auto schema = pg_migrate(*db, builtin_pg_migrations(), options.migrate);
    if (!schema) return schema.error();
    std::unique_ptr<PostgresStore> store(new PostgresStore(std::move(db), options));
    store->schema_version_ = schema->version;
    store->migrations_applied_ = schema->applied;
    return store;
}

Result<void> PostgresStore::ready() {
    if (db_->connected()) return {};
    const auto now = Clock::now();
    if (now < next_connect_) {
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(next_connect_ - now);
        return Error(Errc::connection_error,
                     fmt::format("{}: not connected (next attempt in {} ms): {}", db_->name(),
                                 wait.count(), last_failure_));
    }
    auto connected = db_->connect(options_.connect_timeout);
    if (connected) connected = session_setup(*db_, options_);
    if (connected) {
        // Perhaps another server (a failover): its schema is checked, its label ids are new.
        auto schema = pg_migrate(*db_, builtin_pg_migrations(), options_.migrate);
        if (!schema) connected = schema.error();
    }
    if (!connected) {
        db_->close();
        ++counts_.failed_connects;
        backoff_ = backoff_.count() == 0 ? options_.reconnect_min
                                         : std::min(backoff_ * 2, options_.reconnect_max);
        // Up to a quarter more, so nodes that lost the server together do not return in step.
        const auto spread = std::uniform_int_distribution<std::int64_t>(
            0, std::max<std::int64_t>(backoff_.count() / 4, 0))(jitter_);
        next_connect_ = now + backoff_ + std::chrono::milliseconds(spread);
        last_failure_ = connected.error().message;
        return connected.error();
    }
    ++counts_.reconnects;
    backoff_ = std::chrono::milliseconds(0);
    prepared_.clear();
    label_sets_->forget_all();
    spdlog::info("{}: reconnected", db_->name());
    return {};
}

Error PostgresStore::failed(Error error) {
    if (db_->get() != nullptr && !db_->connected()) {
        spdlog::warn("{}: connection lost: {}", db_->name(), error.message);
        db_->close();
        next_connect_ = Clock::now();  // the first attempt at once, then the backoff
        last_failure_ = error.message;
    }
    return error;
}

Result<void> PostgresStore::in_transaction(std::string_view what, Begin begin,
                                           const std::function<Result<void>()>& body) {
    const std::string begin_sql =
        begin == Begin::insert
            ? fmt::format("BEGIN; SELECT pg_advisory_xact_lock({})", PostgresStore::kInsertLock)
        : begin == Begin::read ? std::string("BEGIN READ ONLY")
                               : std::string("BEGIN");
    const ExecStatusType begin_status = begin == Begin::insert ? PGRES_TUPLES_OK : PGRES_COMMAND_OK;
    for (int attempt = 0;; ++attempt) {
        if (auto up = ready(); !up) return up.error();
        auto begun = db_->exec(what, begin_sql, begin_status);
        if (begun) break;
        const bool lost = !db_->connected();
        db_->rollback(what);  // BEGIN may have run before the lock failed
        Error error = failed(begun.error());
        if (!lost || attempt > 0) return error;
    }
    try {
        if (auto done = body(); !done) {
            db_->rollback(what);
            return failed(done.error());
        }
    } catch (...) {
        db_->rollback(what);
        throw;
    }
    if (auto committed = db_->commit(what); !committed) {
        db_->rollback(what);
        return failed(committed.error());
    }
    return {};
}

Result<std::vector<bool>> PostgresStore::insert(std::span<const Measurement> records) {
    std::vector<bool> stored;
    if (records.empty()) return stored;
    stored.reserve(records.size());
    auto written = in_transaction("insert", Begin::insert, [&]() -> Result<void> {
        stored.clear();
        // Every label set first: nothing else may run on the connection during a COPY.
        label_ids_.clear();
        for (const Measurement& m : records) {
            auto id = label_sets_->id_of(*db_, m.labels);
            if (!id) return id.error();
            label_ids_.push_back(*id);
        }
        // Runs of records measured here (no client id, so never a duplicate) and of
        // submitted ones, in the order given: ids follow it.
        for (std::size_t i = 0; i < records.size();) {
            const bool submitted = !records[i].client_id.empty();
            std::size_t end = i + 1;
            while (end < records.size() && records[end].client_id.empty() != submitted) ++end;
            const auto run = records.subspan(i, end - i);
            const auto ids = std::span<const std::int64_t>(label_ids_).subspan(i, end - i);
            if (!submitted && options_.loader == PostgresOptions::Loader::copy) {
                if (auto copied = copy_local(run, ids); !copied) return copied.error();
                stored.insert(stored.end(), run.size(), true);
            } else if (auto inserted = insert_rows(run, ids, submitted, stored); !inserted) {
                return inserted.error();
            }
            i = end;
        }
        return {};
    });
    if (!written) {
        label_sets_->forget_ids();  // label sets added in the transaction were rolled back
        return written.error();
    }
    return stored;
}

Result<void> PostgresStore::copy_local(std::span<const Measurement> records,
                                       std::span<const std::int64_t> label_sets) {
    std::string& out = copy_buffer_;
    out.clear();
    out.append(kCopySignature);
    put32(out, 0);  // flags
    put32(out, 0);  // header extension length
    for (std::size_t i = 0; i < records.size(); ++i) {
        const Measurement& m = records[i];
        put16(out, 6);
        put_int8_field(out, m.ts_us);
        put_bytes_field(out, m.request_id.data(), m.request_id.size());
        put_int4_field(out, m.attempt);
        put_int8_field(out, label_sets[i]);
        const std::string_view status = to_string(m.status);
        put_bytes_field(out, status.data(), status.size());
        const auto packed = pack_record(m, packed_);
        put_bytes_field(out, packed.data(), packed.size());
    }
    put16(out, -1);
    const std::string sql =
        fmt::format("COPY measurements ({}) FROM STDIN (FORMAT binary)", kLocalColumns);
    auto started = db_->exec("insert: copy", sql, PGRES_COPY_IN);
    if (!started) return started.error();
    PGconn* conn = db_->get();
    const bool sent = PQputCopyData(conn, out.data(), static_cast<int>(out.size())) == 1 &&
                      PQputCopyEnd(conn, nullptr) == 1;
    // The COPY's result, then the end of results (null), whatever happened.
    PgResult result(PQgetResult(conn));
    while (PGresult* more = PQgetResult(conn)) PQclear(more);
    if (!sent || result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
        return db_->error("insert: copy", result.get());
    }
    ++counts_.copies;
    return {};
}

Result<std::string> PostgresStore::insert_statement(std::size_t rows, bool submitted) {
    std::string name = fmt::format("tr_insert_{}_{}", submitted ? "submitted" : "local", rows);
    if (std::find(prepared_.begin(), prepared_.end(), name) != prepared_.end()) return name;
    const std::size_t columns = submitted ? kInsertTypes.size() : kInsertTypes.size() - 1;
    std::string sql = fmt::format("INSERT INTO measurements ({}) VALUES ",
                                  submitted ? kInsertColumns : kLocalColumns);
    PgParams types;
    for (std::size_t r = 0; r < rows; ++r) {
        sql += r == 0 ? "(" : ", (";
        for (std::size_t c = 0; c < columns; ++c) {
            sql += fmt::format("{}${}", c == 0 ? "" : ", ", r * columns + c + 1);
            types.null(kInsertTypes[c]);
        }
        sql += ")";
    }
    // DO NOTHING also skips a second copy of a record within the same statement.
    if (submitted) sql += " ON CONFLICT DO NOTHING RETURNING id, client_id, request_id, attempt";
    if (auto prepared = db_->prepare("insert: prepare", name, sql, types); !prepared) {
        return prepared.error();
    }
    prepared_.push_back(name);
    return name;
}

Result<void> PostgresStore::insert_rows(std::span<const Measurement> records,
                                        std::span<const std::int64_t> label_sets, bool submitted,
                                        std::vector<bool>& stored) {
    PgParams& p = *params_;
    for (std::size_t first = 0; first < records.size(); first += kRowsPerInsert) {
        const std::size_t rows = std::min(kRowsPerInsert, records.size() - first);
        auto name = insert_statement(rows, submitted);
        if (!name) return name.error();
        p.clear();
        for (std::size_t r = first; r < first + rows; ++r) {
            const Measurement& m = records[r];
            p.int8(m.ts_us);
            p.text(m.request_id);
            p.int4(m.attempt);
            p.int8(label_sets[r]);
            p.text(to_string(m.status));
            p.bytea(pack_record(m, packed_));
            if (submitted) p.text(m.client_id);
        }
        auto result =
            db_->exec_prepared("insert", *name, p, submitted ? PGRES_TUPLES_OK : PGRES_COMMAND_OK);
        if (!result) return result.error();
        ++counts_.insert_rows;
        if (!submitted) {
            stored.insert(stored.end(), rows, true);
            continue;
        }
        // The rows stored, by id: the order they were inserted in, which is the records'.
        // Walking both, a record is stored when the next stored row is its identity.
        const PGresult* r = result->get();
        std::vector<std::pair<std::int64_t, int>> by_id;
        by_id.reserve(static_cast<std::size_t>(PQntuples(r)));
        for (int row = 0; row < PQntuples(r); ++row) by_id.emplace_back(pg_int8(r, row, 0), row);
        std::sort(by_id.begin(), by_id.end());
        std::size_t next = 0;
        for (std::size_t i = first; i < first + rows; ++i) {
            const Measurement& m = records[i];
            bool is_next = false;
            if (next < by_id.size()) {
                const int row = by_id[next].second;
                is_next = pg_text(r, row, 1) == m.client_id && pg_text(r, row, 2) == m.request_id &&
                          pg_int4(r, row, 3) == m.attempt;
            }
            stored.push_back(is_next);
            if (is_next) ++next;
        }
        if (next != by_id.size()) {
            return Error(Errc::internal,
                         fmt::format("{}: insert: {} stored rows match no record in order",
                                     db_->name(), by_id.size() - next));
        }
    }
    return {};
}

Result<std::int64_t> PostgresStore::last_id() {
    if (auto up = ready(); !up) return up.error();
    PgParams none;
    auto max =
        db_->exec_params("read the last record id", "SELECT coalesce(max(id), 0) FROM measurements",
                         none, PGRES_TUPLES_OK);
    if (!max) return failed(max.error());
    return pg_int8(max->get(), 0, 0);
}

Result<std::size_t> PostgresStore::delete_before(std::int64_t ts_us) {
    const std::string sql = fmt::format(
        "DELETE FROM measurements WHERE id IN "
        "(SELECT id FROM measurements WHERE ts_us < $1 ORDER BY ts_us LIMIT {})",
        kDeleteChunk);
    std::size_t total = 0;
    for (;;) {
        if (auto up = ready(); !up) return up.error();
        PgParams& p = *params_;
        p.clear();
        p.int8(ts_us);
        auto deleted = db_->exec_params("delete old records", sql, p, PGRES_COMMAND_OK);
        if (!deleted) return failed(deleted.error());
        const auto n = static_cast<std::size_t>(std::stoll(PQcmdTuples(deleted->get())));
        total += n;
        if (n < static_cast<std::size_t>(kDeleteChunk)) return total;
    }
}

Result<std::size_t> PostgresStore::each_row(std::string_view what, const std::string& sql,
                                            PgParams& params, const RowReader& row) {
    std::size_t rows = 0;
    auto done = in_transaction(what, Begin::read, [&]() -> Result<void> {
        rows = 0;
        auto declared = db_->exec_params(what, "DECLARE tr_cursor NO SCROLL CURSOR FOR " + sql,
                                         params, PGRES_COMMAND_OK);
        if (!declared) return declared.error();
        const std::string fetch = fmt::format("FETCH {} FROM tr_cursor", kFetchRows);
        PgParams none;
        for (;;) {
            auto batch = db_->exec_params(what, fetch, none, PGRES_TUPLES_OK);
            if (!batch) return batch.error();
            const int n = PQntuples(batch->get());
            for (int r = 0; r < n; ++r) {
                if (auto read = row(batch->get(), r); !read) return read.error();
                ++rows;
            }
            if (n < kFetchRows) return {};
        }
    });
    if (!done) return done.error();
    return rows;
}

Result<std::size_t> PostgresStore::scan(const RecordQuery& query, const RecordVisitor& visit) {
    const std::string sql = fmt::format(
        "SELECT {} FROM measurements WHERE ts_us >= $1 AND ts_us < $2 AND id > $3 AND id <= $4 "
        "ORDER BY {} LIMIT $5",
        kScanColumns, query.newest_first ? "ts_us DESC, id DESC" : "ts_us, id");
    PgParams params;
    params.int8(query.from_ts_us);
    params.int8(query.to_ts_us);
    params.int8(query.after_id);
    params.int8(query.up_to_id);
    if (query.limit == 0) {
        params.null(kInt8Oid);  // LIMIT NULL: no limit
    } else {
        params.int8(static_cast<std::int64_t>(query.limit));
    }
    Measurement m;
    return each_row("read records", sql, params, [&](const PGresult* r, int row) -> Result<void> {
        const std::int64_t id = pg_int8(r, row, 0);
        m.ts_us = pg_int8(r, row, 1);
        m.request_id = pg_text(r, row, 2);
        m.attempt = pg_int4(r, row, 3);
        const std::int64_t label_set = pg_int8(r, row, 4);
        auto labels = label_sets_->labels_of(*db_, label_set);
        if (!labels) return labels.error();
        if (*labels == nullptr) {
            return Error(Errc::internal, fmt::format("{}: measurement {}: label set {} is missing",
                                                     db_->name(), id, label_set));
        }
        m.labels = **labels;
        auto status = parse_request_status(pg_text(r, row, 5));
        m.status = status ? *status : RequestStatus::protocol_error;
        m.client_id = pg_text(r, row, 7);
        if (auto unpacked = unpack_record(pg_bytes(r, row, 6), m); !unpacked) {
            return Error(unpacked.error().code, fmt::format("{}: measurement {}: {}", db_->name(),
                                                            id, unpacked.error().message));
        }
        visit(m);
        return {};
    });
}

Result<void> PostgresStore::save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) {
    // ON CONFLICT DO UPDATE refuses to meet one key twice in a statement: the last row given
    // for a key wins, as SQLite's INSERT OR REPLACE would have it.
    std::unordered_map<std::string, std::size_t> last;
    for (std::size_t i = 0; i < rows.size(); ++i) last[rollup_key(rows[i])] = i;
    std::vector<const RollupRow*> kept;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (last[rollup_key(rows[i])] == i) kept.push_back(&rows[i]);
    }
    return in_transaction("save rollups", Begin::write, [&]() -> Result<void> {
        PgParams& p = *params_;
        for (std::size_t first = 0; first < kept.size(); first += kRollupRowsPerInsert) {
            const std::size_t n = std::min(kRollupRowsPerInsert, kept.size() - first);
            std::string sql =
                fmt::format("INSERT INTO rollup_hours ({}, aggregate) VALUES ", kRollupKeyColumns);
            p.clear();
            for (std::size_t r = 0; r < n; ++r) {
                const RollupRow& row = *kept[first + r];
                sql += r == 0 ? "(" : ", (";
                for (int c = 1; c <= kRollupColumnCount; ++c) {
                    sql += fmt::format("{}${}", c == 1 ? "" : ", ", r * kRollupColumnCount + c);
                }
                sql += ")";
                p.int8(row.hour_us);
                for (const std::string& label : row.labels) p.text(label);
                p.boolean(row.stream);
                p.text(row.client_id);
                p.bytea(row.aggregate);
            }
            sql += fmt::format(" ON CONFLICT ({}) DO UPDATE SET aggregate = excluded.aggregate",
                               kRollupKeyColumns);
            auto saved = db_->exec_params("save rollups", sql, p, PGRES_COMMAND_OK);
            if (!saved) return saved.error();
        }
        p.clear();
        p.int8(watermark);
        auto marked =
            db_->exec_params("save rollup watermark",
                             "INSERT INTO store_state (key, value) VALUES ('rollup_watermark', $1) "
                             "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                             p, PGRES_COMMAND_OK);
        if (!marked) return marked.error();
        return {};
    });
}

Result<std::int64_t> PostgresStore::load_rollups(const RollupVisitor& visit) {
    PgParams none;
    auto rows = each_row(
        "read rollups",
        fmt::format("SELECT {}, aggregate FROM rollup_hours ORDER BY hour_us", kRollupKeyColumns),
        none, [&](const PGresult* r, int row) -> Result<void> {
            RollupRow out;
            out.hour_us = pg_int8(r, row, 0);
            for (std::size_t i = 0; i < out.labels.size(); ++i) {
                out.labels[i] = pg_text(r, row, static_cast<int>(i) + 1);
            }
            out.stream = pg_bool(r, row, kRollupStreamColumn);
            out.client_id = pg_text(r, row, kRollupClientColumn);
            const auto aggregate = pg_bytes(r, row, kRollupAggregateColumn);
            out.aggregate.assign(aggregate.begin(), aggregate.end());
            visit(std::move(out));
            return {};
        });
    if (!rows) return rows.error();
    auto watermark = db_->exec_params(
        "read rollup watermark",
        "SELECT coalesce((SELECT value FROM store_state WHERE key = 'rollup_watermark'), 0)", none,
        PGRES_TUPLES_OK);
    if (!watermark) return failed(watermark.error());
    return pg_int8(watermark->get(), 0, 0);
}

Result<void> PostgresStore::clear_rollups() {
    return in_transaction("clear rollups", Begin::write, [&]() -> Result<void> {
        for (const char* sql : {"DELETE FROM rollup_hours",
                                "DELETE FROM store_state WHERE key = 'rollup_watermark'"}) {
            if (auto done = db_->exec("clear rollups", sql); !done) return done.error();
        }
        return {};
    });
}

}  // namespace tokenradar::store
