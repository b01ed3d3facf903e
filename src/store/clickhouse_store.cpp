#include "clickhouse_http.hpp"
#include "clickhouse_migrations.hpp"
#include "clickhouse_wire.hpp"
#include "packed_record.hpp"

#include <tokenradar/core/labels.hpp>
#include <tokenradar/store/clickhouse_store.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace tokenradar::store {
namespace {

constexpr std::int64_t kNodes = 1024;  // ids are tick * kNodes + node
constexpr std::int64_t kWatermarkHour = std::numeric_limits<std::int64_t>::min();
// How long delete_before waits for its mutation.
constexpr auto kMutationWait = std::chrono::minutes(10);

// The columns of `measurements` before the labels, in RowBinary order (scan and insert).
constexpr std::string_view kFixedColumns =
    "id, ts_us, request_id, client_id, attempt, status, packed";
constexpr std::array<RowType, 7> kFixedTypes = {RowType::int64,  RowType::int64, RowType::string,
                                                RowType::string, RowType::int32, RowType::string,
                                                RowType::string};

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string_view as_text(const RowValue& v) { return std::get<std::string_view>(v); }
std::int64_t as_int(const RowValue& v) { return std::get<std::int64_t>(v); }

// A rollup row's key, length-prefixed so no two keys share a text.
std::string rollup_key(const RollupRow& row) {
    std::string key = fmt::format("{}|{}|", row.hour_us, row.stream ? 1 : 0);
    for (const std::string& label : row.labels) key += fmt::format("{}:{}", label.size(), label);
    key += fmt::format("{}:{}", row.client_id.size(), row.client_id);
    return key;
}

std::string identity(std::string_view client, std::string_view request, std::int64_t attempt) {
    return fmt::format("{}:{}{}:{}{}", client.size(), client, request.size(), request, attempt);
}

}  // namespace

std::vector<std::string_view> split_statements(std::string_view sql) {
    std::vector<std::string_view> out;
    std::size_t start = std::string_view::npos;
    std::size_t at = 0;
    while (at < sql.size()) {
        std::size_t end = sql.find('\n', at);
        if (end == std::string_view::npos) end = sql.size();
        std::string_view line = sql.substr(at, end - at);
        const std::size_t first = line.find_first_not_of(" \t\r");
        const bool blank = first == std::string_view::npos;
        const bool comment = !blank && line.substr(first).starts_with("--");
        if (!blank && !comment && start == std::string_view::npos) start = at;
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
        if (start != std::string_view::npos && !comment && line.ends_with(';')) {
            out.push_back(sql.substr(start, at + line.size() - 1 - start));
            start = std::string_view::npos;
        }
        at = end + 1;
    }
    if (start != std::string_view::npos) out.push_back(sql.substr(start));
    return out;
}

ClickHouseStore::ClickHouseStore(std::unique_ptr<ClickHouseHttp> http, ClickHouseOptions options)
    : http_(std::move(http)), options_(options) {}

ClickHouseStore::~ClickHouseStore() = default;

const std::string& ClickHouseStore::url() const noexcept { return http_->name(); }

int ClickHouseStore::latest_schema_version() noexcept {
    const auto all = builtin_ch_migrations();
    return all.empty() ? 0 : all.back().version;
}

Result<std::unique_ptr<ClickHouseStore>> ClickHouseStore::open(const std::string& url,
                                                               const ClickHouseOptions& options) {
    auto parsed = parse_clickhouse_url(url);
    if (!parsed) return parsed.error();
    if (options.node < -1 || options.node >= kNodes) {
        return Error(Errc::bad_request,
                     fmt::format("{}: node {} is not in 0-{}", redact_clickhouse_url(url),
                                 options.node, kNodes - 1));
    }
    auto http = std::make_unique<ClickHouseHttp>(std::move(*parsed), redact_clickhouse_url(url),
                                                 options.connect_timeout, options.io_timeout);
    std::unique_ptr<ClickHouseStore> store(new ClickHouseStore(std::move(http), options));
    store->node_ = options.node >= 0
                       ? options.node
                       : static_cast<int>(std::random_device()() % static_cast<unsigned>(kNodes));
    if (auto migrated = store->migrate(); !migrated) return migrated.error();
    if (auto columns = store->find_label_columns(); !columns) return columns.error();
    // Ids keep increasing across restarts even if the clock stepped back.
    auto last = store->last_id();
    if (!last) return last.error();
    store->last_tick_ = *last / kNodes;
    store->last_version_ = static_cast<std::uint64_t>(std::max<std::int64_t>(now_us(), 0));
    return store;
}

Result<void> ClickHouseStore::migrate() {
    ClickHouseHttp& db = *http_;
    if (options_.migrate) {
        // Run outside the database, which may not exist yet.
        const std::string create =
            fmt::format("CREATE DATABASE IF NOT EXISTS {}", clickhouse_name(db.url().database));
        ClickHouseUrl system = db.url();
        system.database = "system";
        ClickHouseHttp admin(system, db.name(), options_.connect_timeout, options_.io_timeout);
        if (auto made = admin.text("create the database", create); !made) return made.error();
    }
    auto exists = db.text("read the schema version", "EXISTS TABLE tokenradar_migrations");
    if (!exists) return exists.error();
    auto has_table = parse_clickhouse_integer(*exists);
    if (!has_table) {
        return Error(Errc::protocol_error, fmt::format("{}: read the schema version: {}", db.name(),
                                                       has_table.error().message));
    }
    if (*has_table == 0 && options_.migrate) {
        auto made = db.text("create the migrations table",
                            "CREATE TABLE IF NOT EXISTS tokenradar_migrations (version UInt32, "
                            "name String, applied_at DateTime DEFAULT now()) ENGINE = MergeTree "
                            "ORDER BY version");
        if (!made) return made.error();
    }
    if (*has_table != 0 || options_.migrate) {
        auto found =
            db.text("read the schema version", "SELECT max(version) FROM tokenradar_migrations");
        if (!found) return found.error();
        auto version = parse_clickhouse_integer(*found);
        if (!version) {
            return Error(Errc::protocol_error, fmt::format("{}: read the schema version: {}",
                                                           db.name(), version.error().message));
        }
        schema_version_ = static_cast<int>(*version);
    }
    const int latest = latest_schema_version();
    if (schema_version_ > latest) {
        return Error(Errc::unsupported,
                     fmt::format("{}: database schema version {} is newer than this tokenradar "
                                 "(it knows versions up to {}): use a newer tokenradar",
                                 db.name(), schema_version_, latest));
    }
    if (!options_.migrate && schema_version_ < latest) {
        return Error(Errc::unsupported,
                     fmt::format("{}: database schema version {} is older than this "
                                 "tokenradar's ({}); it is migrated when the gateway opens it",
                                 db.name(), schema_version_, latest));
    }
    for (const Migration& m : builtin_ch_migrations()) {
        if (m.version <= schema_version_) continue;
        const std::string what = fmt::format("migration {}", m.name);
        for (const std::string_view statement : split_statements(m.sql)) {
            if (auto done = db.text(what, statement); !done) return done.error();
        }
        auto recorded = db.text(
            what, fmt::format("INSERT INTO tokenradar_migrations (version, name) VALUES ({}, {})",
                              m.version, clickhouse_quote(m.name)));
        if (!recorded) return recorded.error();
        schema_version_ = m.version;
        ++migrations_applied_;
    }
    return {};
}

Result<void> ClickHouseStore::find_label_columns() {
    ClickHouseHttp& db = *http_;
    const std::string sql =
        "SELECT name FROM system.columns WHERE database = currentDatabase() AND "
        "table = 'measurements' FORMAT TabSeparated";
    auto read = [&]() -> Result<void> {
        auto names = db.text("read the label columns", sql);
        if (!names) return names.error();
        std::unordered_set<std::string_view> have;
        for (std::size_t at = 0; at < names->size();) {
            std::size_t end = names->find('\n', at);
            if (end == std::string::npos) end = names->size();
            have.insert(std::string_view(*names).substr(at, end - at));
            at = end + 1;
        }
        has_label_column_.assign(kLabelCount, false);
        for (std::size_t i = 0; i < kLabelCount; ++i) {
            has_label_column_[i] = have.contains(kLabelTable[i].name);
        }
        return {};
    };
    if (auto found = read(); !found) return found.error();
    if (!options_.migrate) return {};
    bool added = false;
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (has_label_column_[i]) continue;
        // A node that opens the database at the same moment may add it first: read again.
        (void)db.text(fmt::format("add the column of label {}", kLabelTable[i].name),
                      fmt::format("ALTER TABLE measurements ADD COLUMN {} String DEFAULT ''",
                                  clickhouse_name(kLabelTable[i].name)));
        added = true;
    }
    if (!added) return {};
    if (auto found = read(); !found) return found.error();
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (!has_label_column_[i]) {
            return Error(Errc::internal, fmt::format("{}: measurements has no column for label {}",
                                                     db.name(), kLabelTable[i].name));
        }
    }
    return {};
}

std::int64_t ClickHouseStore::next_id() noexcept {
    last_tick_ = std::max(last_tick_ + 1, now_us());
    return last_tick_ * kNodes + node_;
}

Result<std::vector<bool>> ClickHouseStore::stored_before(std::span<const Measurement> records) {
    std::vector<bool> stored(records.size(), false);
    std::vector<std::size_t> submitted;
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (!records[i].client_id.empty()) submitted.push_back(i);
    }
    if (submitted.empty()) return stored;
    // The batch's identities as an external table, looked up in submitted_keys' index.
    std::string keys;
    for (const std::size_t i : submitted) {
        put_row_string(keys, records[i].client_id);
        put_row_string(keys, records[i].request_id);
        put_row_int32(keys, records[i].attempt);
    }
    std::unordered_set<std::string> found;
    std::vector<std::uint8_t> pending;
    static constexpr std::array<RowType, 3> kTypes = {RowType::string, RowType::string,
                                                      RowType::int32};
    const auto sink_row = [](void* context, std::span<const RowValue> v) -> Result<void> {
        static_cast<std::unordered_set<std::string>*>(context)->insert(
            identity(as_text(v[0]), as_text(v[1]), as_int(v[2])));
        return {};
    };
    constexpr std::string_view kWhat = "insert: look up duplicates";
    auto done = http_->run_with_table(
        kWhat,
        "SELECT client_id, request_id, attempt FROM submitted_keys WHERE (client_id, "
        "request_id, attempt) IN _batch FORMAT RowBinary",
        "_batch", "client_id String, request_id String, attempt Int32", keys,
        [&](std::string_view bytes) -> Result<void> {
            pending.insert(pending.end(), bytes.begin(), bytes.end());
            auto used = decode_row_binary(pending, kTypes, sink_row, &found);
            if (!used) {
                return Error(used.error().code,
                             fmt::format("{}: {}: {}", http_->name(), kWhat, used.error().message));
            }
            pending.erase(pending.begin(), pending.begin() + static_cast<long>(*used));
            return {};
        });
    if (!done) return done.error();
    if (!pending.empty()) {
        return Error(Errc::protocol_error, fmt::format("{}: {}: {} bytes of a cut row",
                                                       http_->name(), kWhat, pending.size()));
    }
    ++counts_.lookups;
    // Stored before, or earlier in this span.
    for (const std::size_t i : submitted) {
        const Measurement& m = records[i];
        std::string key = identity(m.client_id, m.request_id, m.attempt);
        if (found.contains(key)) {
            stored[i] = true;
        } else {
            found.insert(std::move(key));
        }
    }
    return stored;
}

Result<std::vector<bool>> ClickHouseStore::insert(std::span<const Measurement> records) {
    if (records.empty()) return std::vector<bool>{};
    auto seen = stored_before(records);
    if (!seen) return seen.error();
    std::vector<bool> stored(records.size());
    std::string& out = rows_;
    out.clear();
    std::size_t rows = 0;
    const std::int64_t tick = last_tick_;
    for (std::size_t i = 0; i < records.size(); ++i) {
        stored[i] = !(*seen)[i];
        if (!stored[i]) continue;
        const Measurement& m = records[i];
        put_row_int64(out, next_id());
        put_row_int64(out, m.ts_us);
        put_row_string(out, m.request_id);
        put_row_string(out, m.client_id);
        put_row_int32(out, m.attempt);
        put_row_string(out, to_string(m.status));
        const auto packed = pack_record(m, packed_);
        put_row_string(
            out, std::string_view(reinterpret_cast<const char*>(packed.data()), packed.size()));
        for (const LabelInfo& label : kLabelTable) {
            put_row_string(out, label_value(m.labels, label.label));
        }
        ++rows;
    }
    if (rows == 0) return stored;
    std::string statement = fmt::format("INSERT INTO measurements ({}", kFixedColumns);
    for (const LabelInfo& label : kLabelTable) statement += ", " + clickhouse_name(label.name);
    statement += ") FORMAT RowBinary";
    if (auto done = http_->insert("insert", statement, out); !done) {
        last_tick_ = tick;  // nothing was stored: the ids may be handed out again
        return done.error();
    }
    ++counts_.inserts;
    return stored;
}

std::optional<std::int64_t> ClickHouseStore::follow_ceiling(std::chrono::milliseconds lag) const {
    const std::int64_t tick =
        now_us() - std::chrono::duration_cast<std::chrono::microseconds>(lag).count();
    return tick * kNodes + (kNodes - 1);
}

Result<std::int64_t> ClickHouseStore::last_id() {
    auto text = http_->text("read the last record id", "SELECT max(id) FROM measurements");
    if (!text) return text.error();
    auto id = parse_clickhouse_integer(*text);
    if (!id) {
        return Error(Errc::protocol_error, fmt::format("{}: read the last record id: {}",
                                                       http_->name(), id.error().message));
    }
    return *id;
}

Result<void> ClickHouseStore::wait_for_mutations(std::string_view what) {
    const auto deadline = std::chrono::steady_clock::now() + kMutationWait;
    for (auto pause = std::chrono::milliseconds(5);; pause = std::min(pause * 2, pause.max())) {
        auto left = http_->text(
            what,
            "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND "
            "is_done = 0");
        if (!left) return left.error();
        auto n = parse_clickhouse_integer(*left);
        if (!n) {
            return Error(Errc::protocol_error,
                         fmt::format("{}: {}: {}", http_->name(), what, n.error().message));
        }
        if (*n == 0) return {};
        if (std::chrono::steady_clock::now() > deadline) {
            return Error(
                Errc::timeout_total,
                fmt::format(
                    "{}: {}: the deletion is still running after {} minutes "
                    "(system.mutations)",
                    http_->name(), what,
                    std::chrono::duration_cast<std::chrono::minutes>(kMutationWait).count()));
        }
        std::this_thread::sleep_for(std::min(pause, std::chrono::milliseconds(500)));
    }
}

Result<std::size_t> ClickHouseStore::delete_before(std::int64_t ts_us) {
    constexpr std::string_view kWhat = "delete old records";
    ClickHouseHttp& db = *http_;
    // Each day with rows before ts_us: dropped whole when all its rows are, else a mutation.
    auto days = db.text(
        kWhat, fmt::format("SELECT toYYYYMMDD(toDateTime(intDiv(ts_us, 1000000), 'UTC')) AS day, "
                           "countIf(ts_us < {0}), max(ts_us) < {0} FROM measurements GROUP BY day "
                           "HAVING min(ts_us) < {0} FORMAT RowBinary",
                           ts_us));
    if (!days) return days.error();
    struct Day {
        std::int64_t day;
        std::int64_t rows;
        bool whole;
    };
    std::vector<Day> found;
    static constexpr std::array<RowType, 3> kTypes = {RowType::int32, RowType::int64,
                                                      RowType::uint8};
    // toYYYYMMDD is a UInt32 and count() a UInt64: read as Int32/Int64 (both far below 2^31).
    auto used = decode_row_binary(
        std::span(reinterpret_cast<const std::uint8_t*>(days->data()), days->size()), kTypes,
        [](void* context, std::span<const RowValue> v) -> Result<void> {
            static_cast<std::vector<Day>*>(context)->push_back(
                Day{as_int(v[0]), as_int(v[1]), as_int(v[2]) != 0});
            return {};
        },
        &found);
    if (!used || *used != days->size()) {
        return Error(Errc::protocol_error,
                     fmt::format("{}: {}: {}", db.name(), kWhat,
                                 used ? "a cut row in the list of days" : used.error().message));
    }
    std::size_t total = 0;
    bool partial = false;
    // submitted_keys is partitioned alike: its rows go with their records'.
    for (const Day& d : found) {
        total += static_cast<std::size_t>(d.rows);
        if (!d.whole) {
            partial = true;
            continue;
        }
        for (const char* table : {"measurements", "submitted_keys"}) {
            auto dropped =
                db.text(kWhat, fmt::format("ALTER TABLE {} DROP PARTITION {}", table, d.day));
            if (!dropped) return dropped.error();
        }
        ++counts_.partitions;
    }
    if (partial) {
        for (const char* table : {"measurements", "submitted_keys"}) {
            auto deleted =
                db.text(kWhat, fmt::format("ALTER TABLE {} DELETE WHERE ts_us < {}", table, ts_us));
            if (!deleted) return deleted.error();
        }
        ++counts_.mutations;
        if (auto waited = wait_for_mutations(kWhat); !waited) return waited.error();
    }
    return total;
}

Result<std::size_t> ClickHouseStore::scan(const RecordQuery& query, const RecordVisitor& visit) {
    std::string sql = fmt::format("SELECT {}", kFixedColumns);
    std::vector<RowType> types(kFixedTypes.begin(), kFixedTypes.end());
    std::vector<Label> labels;  // the label of each column after the fixed ones
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (!has_label_column_[i]) continue;  // an older table read unmigrated: unset
        sql += ", " + clickhouse_name(kLabelTable[i].name);
        types.push_back(RowType::string);
        labels.push_back(kLabelTable[i].label);
    }
    const char* dir = query.newest_first ? " DESC" : "";
    sql += fmt::format(
        " FROM measurements WHERE ts_us >= {} AND ts_us < {} AND id > {} AND id <= {} "
        "ORDER BY ts_us{}, id{}",
        query.from_ts_us, query.to_ts_us, query.after_id, query.up_to_id, dir, dir);
    if (query.limit != 0) sql += fmt::format(" LIMIT {}", query.limit);
    sql += " FORMAT RowBinary";

    struct Context {
        ClickHouseStore* self;
        const std::vector<Label>* labels;
        const RecordVisitor* visit;
        Measurement m;
        std::size_t rows = 0;
    } context{this, &labels, &visit, {}, 0};
    const auto row = [](void* c, std::span<const RowValue> v) -> Result<void> {
        auto& ctx = *static_cast<Context*>(c);
        Measurement& m = ctx.m;
        const std::int64_t id = as_int(v[0]);
        const std::string& name = ctx.self->http_->name();
        m.ts_us = as_int(v[1]);
        m.request_id = as_text(v[2]);
        m.client_id = as_text(v[3]);
        m.attempt = static_cast<int>(as_int(v[4]));
        auto status = parse_request_status(as_text(v[5]));
        m.status = status ? *status : RequestStatus::protocol_error;
        const std::string_view packed = as_text(v[6]);
        m.labels = Labels{};
        for (std::size_t i = 0; i < ctx.labels->size(); ++i) {
            const Label label = (*ctx.labels)[i];
            const std::string_view value = as_text(v[7 + i]);
            // Empty: a row stored before its label's column existed (DEFAULT ''): unset.
            if (value.empty()) continue;
            if (auto set = set_label(m.labels, label, value); !set) {
                return Error(Errc::internal,
                             fmt::format("{}: measurement {}: {}", name, id, set.error().message));
            }
        }
        if (auto unpacked = unpack_record(
                std::span(reinterpret_cast<const std::uint8_t*>(packed.data()), packed.size()), m);
            !unpacked) {
            return Error(unpacked.error().code,
                         fmt::format("{}: measurement {}: {}", name, id, unpacked.error().message));
        }
        (*ctx.visit)(m);
        ++ctx.rows;
        return {};
    };
    std::vector<std::uint8_t> pending;
    auto done = http_->run("read records", sql, [&](std::string_view bytes) -> Result<void> {
        pending.insert(pending.end(), bytes.begin(), bytes.end());
        auto used = decode_row_binary(pending, types, row, &context);
        if (!used) {
            if (used.error().code == make_error_code(Errc::protocol_error)) {
                return Error(
                    Errc::protocol_error,
                    fmt::format("{}: read records: {}", http_->name(), used.error().message));
            }
            return used.error();
        }
        pending.erase(pending.begin(), pending.begin() + static_cast<long>(*used));
        return {};
    });
    if (!done) return done.error();
    if (!pending.empty()) {
        return Error(Errc::protocol_error, fmt::format("{}: read records: {} bytes of a cut row",
                                                       http_->name(), pending.size()));
    }
    return context.rows;
}

Result<void> ClickHouseStore::save_rollups(std::span<const RollupRow> rows,
                                           std::int64_t watermark) {
    // The last row given for a key wins (one version for the whole call). The version is the
    // watermark: nodes that follow the table (RollupKeeper) each save what they hold up to
    // their own position, and the row of the furthest one is the whole of its key.
    std::unordered_map<std::string, std::size_t> last;
    for (std::size_t i = 0; i < rows.size(); ++i) last[rollup_key(rows[i])] = i;
    last_version_ = std::max(last_version_ + 1,
                             static_cast<std::uint64_t>(std::max<std::int64_t>(watermark, 0)));
    std::string& out = rows_;
    out.clear();
    const auto put_labels = [&out](std::span<const std::string> labels) {
        put_row_varint(out, labels.size());  // Array(String): its length, then each element
        for (const std::string& label : labels) put_row_string(out, label);
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const RollupRow& row = rows[i];
        if (last[rollup_key(row)] != i) continue;
        put_row_int64(out, row.hour_us);
        put_labels(row.labels);
        out += static_cast<char>(row.stream ? 1 : 0);
        put_row_string(out, row.client_id);
        put_row_string(out, std::string_view(reinterpret_cast<const char*>(row.aggregate.data()),
                                             row.aggregate.size()));
        put_row_uint64(out, last_version_);
    }
    put_row_int64(out, kWatermarkHour);
    put_labels({});
    out += '\0';
    put_row_string(out, "");
    std::string mark;
    put_row_int64(mark, watermark);
    put_row_string(out, mark);
    put_row_uint64(out, last_version_);
    const std::string statement =
        "INSERT INTO rollup_hours (hour_us, labels, stream, client_id, aggregate, version) "
        "FORMAT RowBinary";
    return http_->insert("save rollups", statement, out);
}

Result<std::int64_t> ClickHouseStore::load_rollups(const RollupVisitor& visit) {
    const std::string sql =
        "SELECT hour_us, labels, stream, client_id, aggregate FROM rollup_hours FINAL "
        "ORDER BY hour_us FORMAT RowBinary";
    static constexpr std::array<RowType, 5> kTypes = {
        RowType::int64, RowType::string_array, RowType::uint8, RowType::string, RowType::string};
    struct Context {
        const RollupVisitor* visit;
        std::int64_t watermark = 0;
        std::string name;
    } context{&visit, 0, http_->name()};
    const auto row = [](void* c, std::span<const RowValue> v) -> Result<void> {
        auto& ctx = *static_cast<Context*>(c);
        const std::int64_t hour = as_int(v[0]);
        const std::string_view aggregate = as_text(v[4]);
        if (hour == kWatermarkHour) {
            if (aggregate.size() != 8) {
                return Error(Errc::internal, fmt::format("{}: rollup watermark of {} bytes",
                                                         ctx.name, aggregate.size()));
            }
            std::int64_t mark = 0;
            for (std::size_t i = 0; i < 8; ++i) {
                mark |= static_cast<std::int64_t>(
                    static_cast<std::uint64_t>(static_cast<std::uint8_t>(aggregate[i])) << (8 * i));
            }
            ctx.watermark = mark;
            return {};
        }
        RollupRow out;
        out.hour_us = hour;
        // A row saved with fewer labels than RollupRow has now leaves the newer ones empty.
        const auto labels = split_string_array(as_text(v[1]));
        for (std::size_t i = 0; i < labels.size() && i < out.labels.size(); ++i) {
            out.labels[i] = std::string(labels[i]);
        }
        out.stream = as_int(v[2]) != 0;
        out.client_id = std::string(as_text(v[3]));
        out.aggregate.assign(aggregate.begin(), aggregate.end());
        (*ctx.visit)(std::move(out));
        return {};
    };
    std::vector<std::uint8_t> pending;
    auto done = http_->run("read rollups", sql, [&](std::string_view bytes) -> Result<void> {
        pending.insert(pending.end(), bytes.begin(), bytes.end());
        auto used = decode_row_binary(pending, kTypes, row, &context);
        if (!used) {
            if (used.error().code != make_error_code(Errc::protocol_error)) return used.error();
            return Error(Errc::protocol_error,
                         fmt::format("{}: read rollups: {}", http_->name(), used.error().message));
        }
        pending.erase(pending.begin(), pending.begin() + static_cast<long>(*used));
        return {};
    });
    if (!done) return done.error();
    if (!pending.empty()) {
        return Error(Errc::protocol_error, fmt::format("{}: read rollups: {} bytes of a cut row",
                                                       http_->name(), pending.size()));
    }
    return context.watermark;
}

Result<void> ClickHouseStore::clear_rollups() {
    auto done = http_->text("clear rollups", "TRUNCATE TABLE rollup_hours");
    if (!done) return done.error();
    return {};
}

}  // namespace tokenradar::store
