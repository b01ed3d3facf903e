#include "owner_lock.hpp"
#include "sqlite_migrations.hpp"
#include "sqlite_util.hpp"
#include "wal_checkpointer.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace tokenradar::store {
namespace {

// The stored columns of a Measurement, in the order bind_record() binds and read_record()
// reads them. Keep the three in step (the round-trip test checks every field).
constexpr std::array<std::string_view, 41> kRecordColumns = {
    "ts_us",
    "received_us",
    "request_id",
    "response_id",
    "client_id",
    "attempt",
    "provider",
    "model",
    "endpoint",
    "upstream_region",
    "client_region",
    "task",
    "source",
    "cache",
    "route",
    "api",
    "stream",
    "status",
    "http_status",
    "sched_offset_ns",
    "headers_ns",
    "first_chunk_ns",
    "first_token_ns",
    "first_answer_ns",
    "last_token_ns",
    "done_ns",
    "connect_ns",
    "tls_ns",
    "prompt_tokens",
    "cached_prompt_tokens",
    "cache_creation_tokens",
    "output_tokens",
    "reasoning_tokens",
    "token_source",
    "output_events",
    "chunk_gap_p50_ns",
    "chunk_gap_p99_ns",
    "chunk_gap_max_ns",
    "overhead_ns",
    "relay_p50_ns",
    "relay_max_ns",
};
// The label columns are the label table's, in its order, from "provider" on.
constexpr std::size_t kFirstLabelColumn = 6;
static_assert([] {
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (kRecordColumns[kFirstLabelColumn + i] != kLabelTable[i].name) return false;
    }
    return true;
}());

// Derived metrics: written for queries, never read back (derive() recomputes them).
constexpr std::array<std::string_view, 10> kDerivedColumns = {
    "ttft_ms", "ttft_sched_ms", "ttfat_ms",         "ttfb_ms", "e2e_ms",
    "tpot_ms", "decode_tps",    "tokens_per_chunk", "e2e_tps", "e2e500_ms",
};

constexpr std::int64_t kDeleteChunk = 10'000;
// The WAL size, in multiples of the background threshold, at which the committing thread
// checkpoints itself because the background thread fell behind.
constexpr int kWriterCheckpointFactor = 16;

constexpr std::string_view kLastIdSql = "SELECT coalesce(max(id), 0) FROM measurements";
constexpr std::string_view kRollupColumns =
    "hour_us, provider, model, task, source, api, upstream_region, client_region, stream, "
    "client_id, aggregate";
constexpr std::string_view kSaveRollupSql =
    "INSERT OR REPLACE INTO rollup_hours (hour_us, provider, model, task, source, api, "
    "upstream_region, client_region, stream, client_id, aggregate) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr std::string_view kSaveWatermarkSql =
    "INSERT OR REPLACE INTO store_state (key, value) VALUES ('rollup_watermark', ?)";

std::string column_list(bool with_derived) {
    std::string out;
    for (auto c : kRecordColumns) out += std::string(out.empty() ? "" : ", ") + std::string(c);
    if (with_derived) {
        for (auto c : kDerivedColumns) out += ", " + std::string(c);
    }
    return out;
}

class Binder {
  public:
    explicit Binder(sqlite3_stmt* s, int first = 1) : s_(s), i_(first) {}
    void integer(std::int64_t v) { sqlite3_bind_int64(s_, i_++, v); }
    // The string must outlive the statement's step (SQLITE_STATIC: no copy).
    void text(std::string_view v) {
        sqlite3_bind_text(s_, i_++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
    void optional(const std::optional<std::int64_t>& v) { v ? integer(*v) : null(); }
    void offset(const std::optional<std::int64_t>& v, std::int64_t send) {
        v ? integer(*v - send) : null();
    }
    void real(const std::optional<double>& v) {
        if (v && std::isfinite(*v)) {
            sqlite3_bind_double(s_, i_++, *v);
        } else {
            null();
        }
    }
    void null() { sqlite3_bind_null(s_, i_++); }
    [[nodiscard]] int next() const noexcept { return i_; }

  private:
    sqlite3_stmt* s_;
    int i_;
};

class Reader {
  public:
    explicit Reader(sqlite3_stmt* s) : s_(s) {}
    std::int64_t integer() { return sqlite3_column_int64(s_, i_++); }
    std::string text() {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i_));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s_, i_++));
        return p == nullptr ? std::string() : std::string(p, n);
    }
    // Valid until the next step of the statement.
    std::string_view view() {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i_));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s_, i_++));
        return p == nullptr ? std::string_view() : std::string_view(p, n);
    }
    std::optional<std::int64_t> optional() {
        if (sqlite3_column_type(s_, i_) == SQLITE_NULL) {
            ++i_;
            return std::nullopt;
        }
        return integer();
    }

  private:
    sqlite3_stmt* s_;
    int i_ = 0;
};

// Parameters per record in an INSERT, and records per multi-row INSERT of those measured here
// (no client id): 16 rows cut the CPU per record by a sixth (bench/README.md, "The
// measurement store", BM_SqliteStore_Insert/2048).
constexpr std::size_t kBoundColumns = kRecordColumns.size() + kDerivedColumns.size();
constexpr std::size_t kRowsPerInsert = 16;
// Within SQLite's oldest default limit on parameters, whatever this build's limit is.
static_assert(kRowsPerInsert * kBoundColumns <= 999);

// Binds `m` to the parameters from `first` (1-based) on: kBoundColumns of them.
void bind_record(sqlite3_stmt* s, const Measurement& m, int first = 1) {
    Binder b(s, first);
    const Labels& l = m.labels;
    const std::int64_t send = m.t.send;
    b.integer(m.ts_us);
    b.optional(m.received_us == 0 ? std::nullopt : std::optional<std::int64_t>(m.received_us));
    b.text(m.request_id);
    b.text(m.response_id);
    b.text(m.client_id);
    b.integer(m.attempt);
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            b.integer(l.stream ? 1 : 0);
        } else {
            b.text(label_value(l, label.label));
        }
    }
    b.text(to_string(m.status));
    b.integer(m.http_status);
    b.integer(m.t.sched - send);
    for (const auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                              &m.t.last_token, &m.t.done}) {
        b.offset(*stamp, send);
    }
    b.integer(m.connect_ns);
    b.integer(m.tls_ns);
    for (const auto* tokens : {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                               &m.output_tokens, &m.reasoning_tokens}) {
        b.optional(*tokens);
    }
    b.text(to_string(m.token_source));
    b.integer(m.output_events);
    for (const auto* ns : {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns,
                           &m.overhead_ns, &m.relay_p50_ns, &m.relay_max_ns}) {
        b.optional(*ns);
    }
    const Derived d = derive(m);
    for (const auto* v :
         {&d.ttft_ms, &d.ttft_sched_ms, &d.ttfat_ms, &d.ttfb_ms, &d.e2e_ms, &d.tpot_ms,
          &d.decode_tps, &d.tokens_per_chunk, &d.e2e_tps, &d.e2e500_ms}) {
        b.real(*v);
    }
    assert(b.next() == first + static_cast<int>(kBoundColumns));  // sqlite3_bind_* would not say
}

// Overwrites every field of `m`, so one Measurement can be reused across rows.
void read_record(sqlite3_stmt* s, Measurement& m) {
    Reader r(s);
    Labels& l = m.labels;
    m.ts_us = r.integer();
    m.received_us = r.optional().value_or(0);
    m.request_id = r.text();
    m.response_id = r.text();
    m.client_id = r.text();
    m.attempt = static_cast<int>(r.integer());
    static const Labels defaults;  // what an unknown text falls back to
    for (const LabelInfo& label : kLabelTable) {
        if (label.label == Label::stream) {
            l.stream = r.integer() != 0;
            continue;
        }
        // Stored values passed these checks on the way in; one that no longer does (a value
        // dropped from the table) reads as the label's default.
        if (!set_label(l, label.label, r.view())) {
            (void)set_label(l, label.label, label_value(defaults, label.label));
        }
    }
    auto status = parse_request_status(r.view());
    m.status = status ? *status : RequestStatus::protocol_error;
    m.http_status = static_cast<int>(r.integer());
    m.t.send = 0;
    m.t.sched = r.integer();
    for (auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                        &m.t.last_token, &m.t.done}) {
        *stamp = r.optional();
    }
    m.connect_ns = r.integer();
    m.tls_ns = r.integer();
    for (auto* tokens : {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                         &m.output_tokens, &m.reasoning_tokens}) {
        *tokens = r.optional();
    }
    m.token_source = r.text() == "estimate" ? TokenSource::estimate : TokenSource::usage;
    m.output_events = r.integer();
    for (auto* ns : {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns, &m.overhead_ns,
                     &m.relay_p50_ns, &m.relay_max_ns}) {
        *ns = r.optional();
    }
}

// The schema version once migrated; refused for a file that is not ours, or (without
// options.migrate) older than this build.
Result<int> open_schema(sqlite3* db, const std::string& path, const SqliteOptions& options) {
    auto found = query_integer(db, path, "PRAGMA user_version");
    if (!found) return found.error();
    if (!options.create && *found == 0) {
        return Error(Errc::bad_request,
                     fmt::format("{}: not a TokenRadar database (schema version 0)", path));
    }
    const int latest = SqliteStore::latest_schema_version();
    if (!options.migrate && *found < latest) {
        return Error(Errc::unsupported,
                     fmt::format("{}: database schema version {} is older than this tokenradar's "
                                 "({}); it is migrated when the gateway opens it",
                                 path, *found, latest));
    }
    // Also when !migrate: a newer schema gets migrate()'s refusal, a current one no change.
    return migrate(db, path, builtin_migrations());
}

// The SQL of the writer's statements that depend on the column list.
struct WriteSql {
    std::string insert;
    std::string insert_rows;
    std::string delete_chunk;
};

WriteSql write_sql() {
    const std::string placeholders = [] {
        std::string p;
        for (std::size_t i = 0; i < kBoundColumns; ++i) {
            p += i == 0 ? "?" : ", ?";
        }
        return p;
    }();
    const std::string insert_sql = fmt::format(
        "INSERT OR IGNORE INTO measurements ({}) VALUES ({})", column_list(true), placeholders);
    std::string rows_sql = fmt::format("INSERT INTO measurements ({}) VALUES ", column_list(true));
    for (std::size_t i = 0; i < kRowsPerInsert; ++i) {
        rows_sql += fmt::format("{}({})", i == 0 ? "" : ", ", placeholders);
    }
    const std::string delete_sql = fmt::format(
        "DELETE FROM measurements WHERE id IN "
        "(SELECT id FROM measurements WHERE ts_us < ?1 ORDER BY ts_us LIMIT {})",
        kDeleteChunk);
    return {insert_sql, rows_sql, delete_sql};
}

}  // namespace

struct SqliteStore::Statements {
    Statement begin, commit, rollback, insert, insert_rows, delete_chunk, last_id, save_rollup,
        save_watermark;
};

SqliteStore::SqliteStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

SqliteStore::~SqliteStore() {
    if (checkpointer_) {
        const WalCheckpointCounts counts = wal_checkpoints();
        spdlog::debug("{}: WAL checkpoints: {} in the background, {} on the writer", path_,
                      counts.background, counts.on_writer);
    }
    checkpointer_.reset();  // joins its thread and closes its connection before ours
    statements_.reset();    // statements first: close_v2 would otherwise defer the close
    sqlite3_close_v2(db_);
}

int SqliteStore::on_commit(void* store, sqlite3* db, const char* /*schema*/, int wal_frames) {
    auto* self = static_cast<SqliteStore*>(store);
    self->wal_pages_ = wal_frames;
    if (wal_frames < self->checkpoint_pages_) return SQLITE_OK;
    self->checkpointer_->request();
    if (wal_frames >= kWriterCheckpointFactor * self->checkpoint_pages_ &&
        sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) ==
            SQLITE_OK) {
        ++self->writer_checkpoints_;
    }
    return SQLITE_OK;  // the commit itself succeeded either way
}

WalCheckpointCounts SqliteStore::wal_checkpoints() const noexcept {
    return {checkpointer_ ? checkpointer_->completed() : 0, writer_checkpoints_};
}

int SqliteStore::latest_schema_version() noexcept { return builtin_migrations().back().version; }

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path,
                                                       const SqliteOptions& options) {
    std::error_code ec;
    if (!options.create && !std::filesystem::exists(path, ec)) {
        return Error(Errc::not_found, fmt::format("{}: no such database file", path));
    }
    // Before SQLite opens the file: a refused owner leaves it untouched.
    std::unique_ptr<OwnerLock> owner_lock;
    if (options.exclusive && !path.empty() && path != ":memory:") {
        auto lock = OwnerLock::acquire(path);
        if (!lock) return lock.error();
        owner_lock = std::move(*lock);
    }
    sqlite3* raw = nullptr;
    const int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (options.create ? SQLITE_OPEN_CREATE : 0);
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    DbHandle db(raw);
    if (rc != SQLITE_OK) return sqlite_error(path, raw, "cannot open");
    sqlite3_busy_timeout(db.get(), static_cast<int>(options.busy_timeout.count()));

    if (auto journal = set_journal(db.get(), path); !journal) return journal.error();
    auto version = open_schema(db.get(), path, options);
    if (!version) return version.error();

    std::unique_ptr<SqliteStore> store(new SqliteStore(path, db.release()));
    store->owner_lock_ = std::move(owner_lock);
    store->schema_version_ = *version;
    auto statements = std::make_unique<Statements>();
    const WriteSql sql = write_sql();
    for (auto [slot, text] :
         {std::pair{&statements->begin, std::string("BEGIN IMMEDIATE")},
          std::pair{&statements->commit, std::string("COMMIT")},
          std::pair{&statements->rollback, std::string("ROLLBACK")},
          std::pair{&statements->insert, sql.insert},
          std::pair{&statements->insert_rows, sql.insert_rows},
          std::pair{&statements->delete_chunk, sql.delete_chunk},
          std::pair{&statements->last_id, std::string(kLastIdSql)},
          std::pair{&statements->save_rollup, std::string(kSaveRollupSql)},
          std::pair{&statements->save_watermark, std::string(kSaveWatermarkSql)}}) {
        auto prepared = prepare(store->db_, path, text);
        if (!prepared) return prepared.error();
        *slot = std::move(*prepared);
    }
    store->statements_ = std::move(statements);
    if (options.background_checkpoint) {
        store->checkpoint_pages_ = std::max(options.wal_checkpoint_pages, 1);
        store->checkpointer_ = std::make_unique<WalCheckpointer>(path, options.busy_timeout);
        // Replaces SQLite's automatic checkpoint, which is itself a WAL hook.
        sqlite3_wal_hook(store->db_, &SqliteStore::on_commit, store.get());
    }
    return store;
}

Result<std::vector<bool>> SqliteStore::insert(std::span<const Measurement> records) {
    std::vector<bool> stored;
    if (records.empty()) return stored;
    stored.reserve(records.size());
    auto written = in_transaction("insert", [&]() -> Result<void> {
        sqlite3_stmt* insert = statements_->insert.get();
        sqlite3_stmt* rows = statements_->insert_rows.get();
        std::size_t i = 0;
        std::size_t local_end = 0;  // records[i, local_end) have no client id
        while (i < records.size()) {
            if (local_end <= i) {  // the run from i: each record is looked at once
                local_end = i;
                while (local_end < records.size() && records[local_end].client_id.empty()) {
                    ++local_end;
                }
            }
            // Records measured here (no client id) skip the de-duplication index and are never
            // ignored: kRowsPerInsert of them go in one statement.
            if (local_end - i >= kRowsPerInsert) {
                for (std::size_t r = 0; r < kRowsPerInsert; ++r) {
                    bind_record(rows, records[i + r], static_cast<int>(r * kBoundColumns) + 1);
                }
                if (step_once(rows) != SQLITE_DONE) return sqlite_error(path_, db_, "insert");
                ++inserts_.multi_row;
                stored.insert(stored.end(), kRowsPerInsert, true);
                i += kRowsPerInsert;
                continue;
            }
            bind_record(insert, records[i]);
            if (step_once(insert) != SQLITE_DONE) return sqlite_error(path_, db_, "insert");
            ++inserts_.single_row;
            // OR IGNORE: no change means a duplicate submission.
            stored.push_back(sqlite3_changes(db_) == 1);
            ++i;
        }
        return {};
    });
    if (!written) return written.error();
    return stored;
}

Result<std::int64_t> SqliteStore::last_id() {
    sqlite3_stmt* s = statements_->last_id.get();
    if (sqlite3_step(s) != SQLITE_ROW) {
        Error error = sqlite_error(path_, db_, "read the last record id");
        sqlite3_reset(s);
        return error;
    }
    const std::int64_t id = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return id;
}

Result<void> SqliteStore::in_transaction(std::string_view what,
                                         const std::function<Result<void>()>& body) {
    Statements& s = *statements_;
    if (step_once(s.begin.get()) != SQLITE_DONE) return sqlite_error(path_, db_, what);
    if (auto done = body(); !done) {
        step_once(s.rollback.get());
        return done.error();
    }
    if (step_once(s.commit.get()) != SQLITE_DONE) {
        Error error = sqlite_error(path_, db_, fmt::format("{}: commit", what));
        step_once(s.rollback.get());
        return error;
    }
    return {};
}

Result<std::size_t> SqliteStore::delete_before(std::int64_t ts_us) {
    sqlite3_stmt* statement = statements_->delete_chunk.get();
    std::size_t total = 0;
    for (;;) {
        sqlite3_bind_int64(statement, 1, ts_us);
        if (step_once(statement) != SQLITE_DONE)
            return sqlite_error(path_, db_, "delete old records");
        const auto deleted = static_cast<std::size_t>(sqlite3_changes(db_));
        total += deleted;
        if (deleted < static_cast<std::size_t>(kDeleteChunk)) return total;
    }
}

Result<std::size_t> SqliteStore::scan(const RecordQuery& query, const RecordVisitor& visit) {
    const char* order = query.newest_first ? "ts_us DESC, id DESC" : "ts_us, id";
    const std::string sql = fmt::format(
        "SELECT {} FROM measurements WHERE ts_us >= ?1 AND ts_us < ?2 AND id > ?4 AND id <= ?5 "
        "ORDER BY {} "
        "LIMIT ?3",
        column_list(false), order);
    auto statement = prepare(db_, path_, sql);
    if (!statement) return statement.error();
    sqlite3_stmt* s = statement->get();
    sqlite3_bind_int64(s, 1, query.from_ts_us);
    sqlite3_bind_int64(s, 2, query.to_ts_us);
    sqlite3_bind_int64(s, 3, query.limit == 0 ? -1 : static_cast<std::int64_t>(query.limit));
    sqlite3_bind_int64(s, 4, query.after_id);
    sqlite3_bind_int64(s, 5, query.up_to_id);
    Measurement m;
    std::size_t count = 0;
    for (;;) {
        const int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) return count;
        if (rc != SQLITE_ROW) return sqlite_error(path_, db_, "read records");
        read_record(s, m);
        visit(m);
        ++count;
    }
}

Result<void> SqliteStore::save_rollups(std::span<const RollupRow> rows, std::int64_t watermark) {
    return in_transaction("save rollups", [&]() -> Result<void> {
        sqlite3_stmt* save = statements_->save_rollup.get();
        for (const RollupRow& row : rows) {
            Binder b(save);
            b.integer(row.hour_us);
            for (const std::string& label : row.labels) b.text(label);
            b.integer(row.stream ? 1 : 0);
            b.text(row.client_id);
            sqlite3_bind_blob(save, 11, row.aggregate.data(),
                              static_cast<int>(row.aggregate.size()), SQLITE_STATIC);
            if (step_once(save) != SQLITE_DONE) return sqlite_error(path_, db_, "save rollups");
        }
        sqlite3_stmt* mark = statements_->save_watermark.get();
        sqlite3_bind_int64(mark, 1, watermark);
        if (step_once(mark) != SQLITE_DONE)
            return sqlite_error(path_, db_, "save rollup watermark");
        return {};
    });
}

Result<std::int64_t> SqliteStore::load_rollups(const RollupVisitor& visit) {
    auto statement =
        prepare(db_, path_, fmt::format("SELECT {} FROM rollup_hours", kRollupColumns));
    if (!statement) return statement.error();
    sqlite3_stmt* s = statement->get();
    for (;;) {
        const int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) return sqlite_error(path_, db_, "read rollups");
        Reader r(s);
        RollupRow row;
        row.hour_us = r.integer();
        for (std::string& label : row.labels) label = r.text();
        row.stream = r.integer() != 0;
        row.client_id = r.text();
        const auto* blob = static_cast<const std::uint8_t*>(sqlite3_column_blob(s, 10));
        row.aggregate.assign(blob, blob + sqlite3_column_bytes(s, 10));
        visit(std::move(row));
    }
    auto watermark = query_integer(
        db_, path_,
        "SELECT coalesce((SELECT value FROM store_state WHERE key = 'rollup_watermark'), 0)");
    if (!watermark) return watermark.error();
    return static_cast<std::int64_t>(*watermark);
}

Result<void> SqliteStore::clear_rollups() {
    return in_transaction("clear rollups", [&]() -> Result<void> {
        for (const char* sql : {"DELETE FROM rollup_hours",
                                "DELETE FROM store_state WHERE key = 'rollup_watermark'"}) {
            if (auto done = exec(db_, path_, sql, "clear rollups"); !done) return done.error();
        }
        return {};
    });
}

}  // namespace tokenradar::store
