#include "label_sets.hpp"
#include "owner_lock.hpp"
#include "packed_record.hpp"
#include "rollup_columns.hpp"
#include "sqlite_migrations.hpp"
#include "sqlite_util.hpp"
#include "wal_checkpointer.hpp"

#include <tokenradar/store/sqlite_store.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

namespace tokenradar::store {
namespace {

// The columns of a `measurements` row (schema version 3), in the order bind_record() binds
// them; scan() reads `id` and then these. The labels are a label_sets row (label_sets.hpp) and
// every other field is in `packed` (packed_record.hpp): SQLite's work per INSERT grows with the
// columns, and 52 of them were ~30% of a proxied request's instructions (bench/README.md).
// client_id comes last: records measured here have none (the column's default, ''), and
// their multi-row INSERT leaves it out.
constexpr std::array<std::string_view, 7> kRecordColumns = {
    "ts_us", "request_id", "attempt", "label_set", "status", "packed", "client_id",
};

constexpr std::int64_t kDeleteChunk = 10'000;
// The WAL size, in multiples of the background threshold, at which the committing thread
// checkpoints itself because the background thread fell behind.
constexpr int kWriterCheckpointFactor = 16;

constexpr std::string_view kLastIdSql = "SELECT coalesce(max(id), 0) FROM measurements";
constexpr std::string_view kSaveWatermarkSql =
    "INSERT OR REPLACE INTO store_state (key, value) VALUES ('rollup_watermark', ?)";

// The first `n` of kRecordColumns.
std::string column_list(std::size_t n = kRecordColumns.size()) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += fmt::format("{}{}", out.empty() ? "" : ", ", kRecordColumns[i]);
    }
    return out;
}

std::string save_rollup_sql() {
    std::string values = "?";
    for (int i = 1; i < kRollupColumnCount; ++i) values += ", ?";
    return fmt::format("INSERT OR REPLACE INTO rollup_hours ({}, aggregate) VALUES ({})",
                       kRollupKeyColumns, values);
}

class Binder {
  public:
    explicit Binder(sqlite3_stmt* s, int first = 1) : s_(s), i_(first) {}
    void integer(std::int64_t v) { sqlite3_bind_int64(s_, i_++, v); }
    // The string must outlive the statement's step (SQLITE_STATIC: no copy).
    void text(std::string_view v) {
        sqlite3_bind_text(s_, i_++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
    // The bytes must outlive the statement's step (SQLITE_STATIC: no copy).
    void blob(std::span<const std::uint8_t> v) {
        sqlite3_bind_blob(s_, i_++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
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
    // Valid until the next step of the statement.
    std::span<const std::uint8_t> blob() {
        const auto* p = static_cast<const std::uint8_t*>(sqlite3_column_blob(s_, i_));
        const auto n = static_cast<std::size_t>(sqlite3_column_bytes(s_, i_++));
        return p == nullptr ? std::span<const std::uint8_t>() : std::span(p, n);
    }

  private:
    sqlite3_stmt* s_;
    int i_ = 0;
};

// Parameters per record in an INSERT, and records per multi-row INSERT of those measured here
// (no client id): 16 rows cut the CPU per record by a sixth (bench/README.md, "The
// measurement store", BM_SqliteStore_Insert/2048).
constexpr std::size_t kBoundColumns = kRecordColumns.size();
constexpr std::size_t kLocalColumns = kBoundColumns - 1;  // without client_id
constexpr std::size_t kRowsPerInsert = 16;
// Within SQLite's oldest default limit on parameters, whatever this build's limit is.
static_assert(kRowsPerInsert * kBoundColumns <= 999);

// Binds `m` to the parameters from `first` (1-based) on: the first `columns` of
// kRecordColumns. `packed` is pack_record(m); it and `m` must outlive the statement's step.
void bind_record(sqlite3_stmt* s, const Measurement& m, std::int64_t label_set,
                 std::span<const std::uint8_t> packed, int first, std::size_t columns) {
    Binder b(s, first);
    b.integer(m.ts_us);
    b.text(m.request_id);
    b.integer(m.attempt);
    b.integer(label_set);
    b.text(to_string(m.status));
    b.blob(packed);
    if (columns == kBoundColumns) b.text(m.client_id);
    assert(b.next() == first + static_cast<int>(columns));  // sqlite3_bind_* would not say
}

// Overwrites every field of `m` from a row of "SELECT id, <kRecordColumns>", so one
// Measurement can be reused across rows. A row that cannot be a record (its label set
// missing, its packed fields damaged) is an error naming the row's id.
Result<void> read_record(sqlite3_stmt* s, LabelSets& label_sets, std::string_view path,
                         Measurement& m) {
    Reader r(s);
    const std::int64_t id = r.integer();
    m.ts_us = r.integer();
    m.request_id = r.text();
    m.attempt = static_cast<int>(r.integer());
    const std::int64_t label_set = r.integer();
    auto labels = label_sets.labels_of(label_set);
    if (!labels) return labels.error();
    if (*labels == nullptr) {
        return Error(Errc::internal, fmt::format("{}: measurement {}: label set {} is missing",
                                                 path, id, label_set));
    }
    m.labels = **labels;
    auto status = parse_request_status(r.view());
    m.status = status ? *status : RequestStatus::protocol_error;
    const std::span<const std::uint8_t> packed = r.blob();
    m.client_id = r.text();
    if (auto unpacked = unpack_record(packed, m); !unpacked) {
        return Error(unpacked.error().code,
                     fmt::format("{}: measurement {}: {}", path, id, unpacked.error().message));
    }
    return {};
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
    const auto placeholders = [](std::size_t n) {
        std::string p;
        for (std::size_t i = 0; i < n; ++i) p += i == 0 ? "?" : ", ?";
        return p;
    };
    const std::string insert_sql =
        fmt::format("INSERT OR IGNORE INTO measurements ({}) VALUES ({})", column_list(),
                    placeholders(kBoundColumns));
    std::string rows_sql =
        fmt::format("INSERT INTO measurements ({}) VALUES ", column_list(kLocalColumns));
    for (std::size_t i = 0; i < kRowsPerInsert; ++i) {
        rows_sql += fmt::format("{}({})", i == 0 ? "" : ", ", placeholders(kLocalColumns));
    }
    const std::string delete_sql = fmt::format(
        "DELETE FROM measurements WHERE id IN "
        "(SELECT id FROM measurements WHERE ts_us < ?1 ORDER BY ts_us LIMIT {})",
        kDeleteChunk);
    return {insert_sql, rows_sql, delete_sql};
}

}  // namespace

// The connection's prepared statements, and what the writer reuses from batch to batch.
struct SqliteStore::Statements {
    Statement begin, commit, rollback, insert, insert_rows, delete_chunk, last_id, save_rollup,
        save_watermark;
    std::optional<LabelSets> label_sets;
    // pack_record()'s buffer for each row of a multi-row INSERT (and for a single one, [0]).
    std::array<std::vector<std::uint8_t>, kRowsPerInsert> packed;
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
    if (auto functions = add_migration_functions(db.get(), path); !functions)
        return functions.error();
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
          std::pair{&statements->save_rollup, save_rollup_sql()},
          std::pair{&statements->save_watermark, std::string(kSaveWatermarkSql)}}) {
        auto prepared = prepare(store->db_, path, text);
        if (!prepared) return prepared.error();
        *slot = std::move(*prepared);
    }
    auto label_sets = LabelSets::prepare(store->db_, path);
    if (!label_sets) return label_sets.error();
    statements->label_sets.emplace(std::move(*label_sets));
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
    Statements& st = *statements_;
    LabelSets& label_sets = *st.label_sets;
    // Packs `m` into st.packed[slot] and binds it to `statement` as row `slot` of `columns`.
    const auto bind = [&](sqlite3_stmt* statement, const Measurement& m, std::size_t slot,
                          std::size_t columns) -> Result<void> {
        auto label_set = label_sets.id_of(m.labels);
        if (!label_set) return label_set.error();
        bind_record(statement, m, *label_set, pack_record(m, st.packed[slot]),
                    static_cast<int>(slot * columns) + 1, columns);
        return {};
    };
    auto written = in_transaction("insert", [&]() -> Result<void> {
        sqlite3_stmt* insert = st.insert.get();
        sqlite3_stmt* rows = st.insert_rows.get();
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
                    auto bound = bind(rows, records[i + r], r, kLocalColumns);
                    if (!bound) return bound.error();
                }
                if (step_once(rows) != SQLITE_DONE) return sqlite_error(path_, db_, "insert");
                ++inserts_.multi_row;
                stored.insert(stored.end(), kRowsPerInsert, true);
                i += kRowsPerInsert;
                continue;
            }
            if (auto bound = bind(insert, records[i], 0, kBoundColumns); !bound) {
                return bound.error();
            }
            if (step_once(insert) != SQLITE_DONE) return sqlite_error(path_, db_, "insert");
            ++inserts_.single_row;
            // OR IGNORE: no change means a duplicate submission.
            stored.push_back(sqlite3_changes(db_) == 1);
            ++i;
        }
        return {};
    });
    if (!written) {
        label_sets.forget_ids();  // label sets added in the transaction were rolled back with it
        return written.error();
    }
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
        "SELECT id, {} FROM measurements WHERE ts_us >= ?1 AND ts_us < ?2 AND id > ?4 AND id <= ?5 "
        "ORDER BY {} "
        "LIMIT ?3",
        column_list(), order);
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
        if (auto read = read_record(s, *statements_->label_sets, path_, m); !read) {
            return read.error();
        }
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
            sqlite3_bind_blob(save, kRollupAggregateColumn + 1, row.aggregate.data(),
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
    auto statement = prepare(
        db_, path_,
        fmt::format("SELECT {}, aggregate FROM rollup_hours ORDER BY hour_us", kRollupKeyColumns));
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
        const auto* blob =
            static_cast<const std::uint8_t*>(sqlite3_column_blob(s, kRollupAggregateColumn));
        row.aggregate.assign(blob, blob + sqlite3_column_bytes(s, kRollupAggregateColumn));
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
