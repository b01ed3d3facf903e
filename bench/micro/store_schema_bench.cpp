// What a measurement row's shape costs SQLite to insert (issue 28): the same gateway-shaped
// records written 16 rows per INSERT, 256 per transaction as the BatchWriter does, into
// tables of other shapes: schema 2's 52 columns, variations of it, schema 3 (what the store
// writes), and a packed JSON text instead of the binary BLOB. Each design binds from the
// Measurement what its columns need, packs with the store's own pack_record and finds label
// set ids with its LabelSets. The WAL is never checkpointed here (the store does that on a
// thread of its own). Instructions per record: bench/micro/store_instructions.sh schemas.

#include "../../src/store/label_sets.hpp"
#include "../../src/store/packed_record.hpp"
#include "../../tests/support/store_records.hpp"

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace tokenradar;

enum class Column {
    ts_us,
    received_us,
    request_id,
    response_id,
    client_id,
    attempt,
    labels,  // the eleven label columns
    label_set,
    status,
    http_status,
    figures,  // schema 2's 22 integer and text columns from sched_offset_ns to relay_max_ns
    derived,  // schema 2's 10 derived REALs
    packed,   // store::pack_record
    json,     // the same fields as a JSON array, as text
};

struct Design {
    const char* name;
    const char* table;  // the measurements table (indexes and label_sets are added)
    std::vector<Column> columns;
};

constexpr const char* kVersion2Table =
    "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id TEXT "
    "NOT NULL, response_id TEXT NOT NULL, client_id TEXT NOT NULL, attempt INTEGER NOT NULL, "
    "provider TEXT NOT NULL, model TEXT NOT NULL, endpoint TEXT NOT NULL, upstream_region TEXT "
    "NOT NULL, client_region TEXT NOT NULL, task TEXT NOT NULL, source TEXT NOT NULL, cache TEXT "
    "NOT NULL, route TEXT NOT NULL, api TEXT NOT NULL, stream INTEGER NOT NULL CHECK (stream IN "
    "(0, 1)), status TEXT NOT NULL, http_status INTEGER NOT NULL, sched_offset_ns INTEGER NOT "
    "NULL, headers_ns INTEGER, first_chunk_ns INTEGER, first_token_ns INTEGER, first_answer_ns "
    "INTEGER, last_token_ns INTEGER, done_ns INTEGER, connect_ns INTEGER NOT NULL, tls_ns INTEGER "
    "NOT NULL, prompt_tokens INTEGER, cached_prompt_tokens INTEGER, cache_creation_tokens "
    "INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER, token_source TEXT NOT NULL CHECK "
    "(token_source IN ('usage', 'estimate')), output_events INTEGER NOT NULL, chunk_gap_p50_ns "
    "INTEGER, chunk_gap_p99_ns INTEGER, chunk_gap_max_ns INTEGER, overhead_ns INTEGER, "
    "relay_p50_ns INTEGER, relay_max_ns INTEGER, received_us INTEGER {}) STRICT";

std::string version_2(std::string_view derived) {
    std::string sql = kVersion2Table;
    sql.replace(sql.find("{}"), 2, derived);
    return sql;
}

const std::vector<Design>& designs() {
    using C = Column;
    static const std::string reals =
        ", ttft_ms REAL, ttft_sched_ms REAL, ttfat_ms REAL, ttfb_ms REAL, e2e_ms REAL, tpot_ms "
        "REAL, decode_tps REAL, e2e_tps REAL, tokens_per_chunk REAL, e2e500_ms REAL";
    static const std::string virtuals =
        ", ttft_ms REAL AS (first_token_ns / 1e6) VIRTUAL, ttft_sched_ms REAL AS ((first_token_ns "
        "- sched_offset_ns) / 1e6) VIRTUAL, ttfat_ms REAL AS (first_answer_ns / 1e6) VIRTUAL, "
        "ttfb_ms REAL AS (headers_ns / 1e6) VIRTUAL, e2e_ms REAL AS (done_ns / 1e6) VIRTUAL, "
        "tpot_ms REAL AS (CASE WHEN output_tokens >= 2 THEN (last_token_ns - first_token_ns) / "
        "1e6 / (output_tokens - 1) END) VIRTUAL";
    static const std::string v2 = version_2(reals);
    static const std::string v2_virtual = version_2(virtuals);
    static const std::string v2_plain = version_2("");
    static const std::vector<Design> all = {
        {"schema 2: every field a column, derived REALs",
         v2.c_str(),
         {C::ts_us, C::received_us, C::request_id, C::response_id, C::client_id, C::attempt,
          C::labels, C::status, C::http_status, C::figures, C::derived}},
        {"schema 2, derived as VIRTUAL generated columns",
         v2_virtual.c_str(),
         {C::ts_us, C::received_us, C::request_id, C::response_id, C::client_id, C::attempt,
          C::labels, C::status, C::http_status, C::figures}},
        {"schema 2 without derived columns",
         v2_plain.c_str(),
         {C::ts_us, C::received_us, C::request_id, C::response_id, C::client_id, C::attempt,
          C::labels, C::status, C::http_status, C::figures}},
        {"label columns, the rest packed",
         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id "
         "TEXT NOT NULL, client_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, provider "
         "TEXT NOT NULL, model TEXT NOT NULL, endpoint TEXT NOT NULL, upstream_region TEXT NOT "
         "NULL, client_region TEXT NOT NULL, task TEXT NOT NULL, source TEXT NOT NULL, cache TEXT "
         "NOT NULL, route TEXT NOT NULL, api TEXT NOT NULL, stream INTEGER NOT NULL, status TEXT "
         "NOT NULL, packed BLOB NOT NULL) STRICT",
         {C::ts_us, C::request_id, C::attempt, C::labels, C::status, C::packed}},
        {"label set, response_id, received_us, http_status columns, the rest packed",
         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id "
         "TEXT NOT NULL, client_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, label_set "
         "INTEGER NOT NULL, status TEXT NOT NULL, response_id TEXT NOT NULL, received_us INTEGER, "
         "http_status INTEGER NOT NULL, packed BLOB NOT NULL) STRICT",
         {C::ts_us, C::request_id, C::attempt, C::label_set, C::status, C::response_id,
          C::received_us, C::http_status, C::packed}},
        {"schema 3: label set, the rest packed",
         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id "
         "TEXT NOT NULL, client_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, label_set "
         "INTEGER NOT NULL, status TEXT NOT NULL, packed BLOB NOT NULL) STRICT",
         {C::ts_us, C::request_id, C::attempt, C::label_set, C::status, C::packed}},
        {"schema 3 with a JSON array instead of the packed BLOB",
         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id "
         "TEXT NOT NULL, client_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, label_set "
         "INTEGER NOT NULL, status TEXT NOT NULL, packed TEXT NOT NULL) STRICT",
         {C::ts_us, C::request_id, C::attempt, C::label_set, C::status, C::json}},
        {"floor, not a candidate: ts, ids and packed alone (no labels)",
         "CREATE TABLE measurements (id INTEGER PRIMARY KEY, ts_us INTEGER NOT NULL, request_id "
         "TEXT NOT NULL, client_id TEXT NOT NULL DEFAULT '', attempt INTEGER NOT NULL, packed "
         "BLOB NOT NULL) STRICT",
         {C::ts_us, C::request_id, C::attempt, C::packed}},
    };
    return all;
}

constexpr const char* kCommon =
    "CREATE INDEX measurements_ts ON measurements (ts_us);"
    "CREATE UNIQUE INDEX measurements_submitted ON measurements (client_id, request_id, attempt) "
    "WHERE client_id <> '';"
    "CREATE TABLE label_sets (id INTEGER PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT "
    "NULL, endpoint TEXT NOT NULL, upstream_region TEXT NOT NULL, client_region TEXT NOT NULL, "
    "task TEXT NOT NULL, source TEXT NOT NULL, cache TEXT NOT NULL, route TEXT NOT NULL, api TEXT "
    "NOT NULL, stream INTEGER NOT NULL, UNIQUE (provider, model, endpoint, upstream_region, "
    "client_region, task, source, cache, route, api, stream)) STRICT;";

void exec(sqlite3* db, const std::string& sql) {
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        throw std::runtime_error(sqlite3_errmsg(db));
    }
}

std::string_view column_names(Column c) {
    switch (c) {
        case Column::ts_us:
            return "ts_us";
        case Column::received_us:
            return "received_us";
        case Column::request_id:
            return "request_id";
        case Column::response_id:
            return "response_id";
        case Column::client_id:
            return "client_id";
        case Column::attempt:
            return "attempt";
        case Column::labels:
            return "provider, model, endpoint, upstream_region, client_region, task, source, "
                   "cache, route, api, stream";
        case Column::label_set:
            return "label_set";
        case Column::status:
            return "status";
        case Column::http_status:
            return "http_status";
        case Column::figures:
            return "sched_offset_ns, headers_ns, first_chunk_ns, first_token_ns, first_answer_ns, "
                   "last_token_ns, done_ns, connect_ns, tls_ns, prompt_tokens, "
                   "cached_prompt_tokens, cache_creation_tokens, output_tokens, reasoning_tokens, "
                   "token_source, output_events, chunk_gap_p50_ns, chunk_gap_p99_ns, "
                   "chunk_gap_max_ns, overhead_ns, relay_p50_ns, relay_max_ns";
        case Column::derived:
            return "ttft_ms, ttft_sched_ms, ttfat_ms, ttfb_ms, e2e_ms, tpot_ms, decode_tps, "
                   "tokens_per_chunk, e2e_tps, e2e500_ms";
        case Column::packed:
        case Column::json:
            return "packed";
    }
    return "";
}

std::size_t parameters(Column c) {
    const std::string_view names = column_names(c);
    return static_cast<std::size_t>(std::count(names.begin(), names.end(), ',')) + 1;
}

// The store's fields after the label columns as one JSON array (what the packed BLOB holds).
std::size_t to_json_array(const Measurement& m, char* out) {
    char* p = out;
    *p++ = '[';
    *p++ = '"';
    p = std::copy(m.response_id.begin(), m.response_id.end(), p);
    *p++ = '"';
    const auto put = [&](const std::optional<std::int64_t>& v) {
        *p++ = ',';
        if (v) {
            p = std::to_chars(p, p + 24, *v).ptr;
        } else {
            p = std::copy_n("null", 4, p);
        }
    };
    const std::int64_t send = m.t.send;
    const auto rel = [&](const std::optional<std::int64_t>& v) {
        return v ? std::optional(*v - send) : std::nullopt;
    };
    for (const auto& v : {std::optional<std::int64_t>(m.received_us),
                          std::optional<std::int64_t>(m.http_status),
                          std::optional(m.t.sched - send),
                          rel(m.t.headers),
                          rel(m.t.first_chunk),
                          rel(m.t.first_token),
                          rel(m.t.first_answer),
                          rel(m.t.last_token),
                          rel(m.t.done),
                          std::optional(m.connect_ns),
                          std::optional(m.tls_ns),
                          m.prompt_tokens,
                          m.cached_prompt_tokens,
                          m.cache_creation_tokens,
                          m.output_tokens,
                          m.reasoning_tokens,
                          std::optional<std::int64_t>(m.token_source == TokenSource::estimate),
                          std::optional(m.output_events),
                          m.chunk_gap_p50_ns,
                          m.chunk_gap_p99_ns,
                          m.chunk_gap_max_ns,
                          m.overhead_ns,
                          m.relay_p50_ns,
                          m.relay_max_ns}) {
        put(v);
    }
    *p++ = ']';
    return static_cast<std::size_t>(p - out);
}

class Writer {
  public:
    Writer(const std::string& path, const Design& design) : design_(design) {
        if (sqlite3_open_v2(path.c_str(), &db_,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            nullptr) != SQLITE_OK) {
            throw std::runtime_error("open " + path);
        }
        exec(db_,
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0");
        exec(db_, design.table);
        exec(db_, kCommon);
        std::string columns;
        std::string row;
        for (const Column c : design.columns) {
            columns += std::string(columns.empty() ? "" : ", ") + std::string(column_names(c));
            for (std::size_t i = 0; i < parameters(c); ++i) row += row.empty() ? "?" : ", ?";
        }
        std::string sql = "INSERT INTO measurements (" + columns + ") VALUES ";
        for (std::size_t r = 0; r < kRows; ++r) sql += (r == 0 ? "(" : ", (") + row + ")";
        if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &insert_,
                               nullptr) != SQLITE_OK) {
            throw std::runtime_error(sqlite3_errmsg(db_));
        }
        auto sets = store::LabelSets::prepare(db_, path);
        if (!sets) throw std::runtime_error(sets.error().message);
        label_sets_.emplace(std::move(*sets));
    }
    ~Writer() {
        label_sets_.reset();
        sqlite3_finalize(insert_);
        sqlite3_close_v2(db_);
    }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    // One transaction, kRows records per INSERT. Not inlined: store_instructions.sh counts it.
    [[gnu::noinline]] void write(const std::vector<Measurement>& batch) {
        exec(db_, "BEGIN IMMEDIATE");
        for (std::size_t at = 0; at + kRows <= batch.size(); at += kRows) {
            int i = 1;
            for (std::size_t r = 0; r < kRows; ++r) bind(batch[at + r], r, i);
            if (sqlite3_step(insert_) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db_));
            sqlite3_reset(insert_);
        }
        exec(db_, "COMMIT");
    }

  private:
    static constexpr std::size_t kRows = 16;

    void bind(const Measurement& m, std::size_t slot, int& i) {
        sqlite3_stmt* s = insert_;
        const auto integer = [&](std::int64_t v) { sqlite3_bind_int64(s, i++, v); };
        const auto text = [&](std::string_view v) {
            sqlite3_bind_text(s, i++, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
        };
        const auto optional = [&](const std::optional<std::int64_t>& v) {
            v ? integer(*v) : static_cast<void>(sqlite3_bind_null(s, i++));
        };
        const std::int64_t send = m.t.send;
        for (const Column c : design_.columns) {
            switch (c) {
                case Column::ts_us:
                    integer(m.ts_us);
                    break;
                case Column::received_us:
                    optional(m.received_us == 0 ? std::nullopt : std::optional(m.received_us));
                    break;
                case Column::request_id:
                    text(m.request_id);
                    break;
                case Column::response_id:
                    text(m.response_id);
                    break;
                case Column::client_id:
                    text(m.client_id);
                    break;
                case Column::attempt:
                    integer(m.attempt);
                    break;
                case Column::labels:
                    for (const LabelInfo& label : kLabelTable) {
                        if (label.label == Label::stream) {
                            integer(m.labels.stream ? 1 : 0);
                        } else {
                            text(label_value(m.labels, label.label));
                        }
                    }
                    break;
                case Column::label_set:
                    integer(label_sets_->id_of(m.labels).value());
                    break;
                case Column::status:
                    text(to_string(m.status));
                    break;
                case Column::http_status:
                    integer(m.http_status);
                    break;
                case Column::figures:
                    integer(m.t.sched - send);
                    for (const auto* t : {&m.t.headers, &m.t.first_chunk, &m.t.first_token,
                                          &m.t.first_answer, &m.t.last_token, &m.t.done}) {
                        optional(*t ? std::optional(**t - send) : std::nullopt);
                    }
                    integer(m.connect_ns);
                    integer(m.tls_ns);
                    for (const auto* v :
                         {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                          &m.output_tokens, &m.reasoning_tokens}) {
                        optional(*v);
                    }
                    text(to_string(m.token_source));
                    integer(m.output_events);
                    for (const auto* v :
                         {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns,
                          &m.overhead_ns, &m.relay_p50_ns, &m.relay_max_ns}) {
                        optional(*v);
                    }
                    break;
                case Column::derived: {
                    const Derived d = derive(m);
                    for (const auto* v : {&d.ttft_ms, &d.ttft_sched_ms, &d.ttfat_ms, &d.ttfb_ms,
                                          &d.e2e_ms, &d.tpot_ms, &d.decode_tps, &d.tokens_per_chunk,
                                          &d.e2e_tps, &d.e2e500_ms}) {
                        *v ? static_cast<void>(sqlite3_bind_double(s, i++, **v))
                           : static_cast<void>(sqlite3_bind_null(s, i++));
                    }
                    break;
                }
                case Column::packed: {
                    const auto packed = store::pack_record(m, packed_[slot]);
                    sqlite3_bind_blob(s, i++, packed.data(), static_cast<int>(packed.size()),
                                      SQLITE_STATIC);
                    break;
                }
                case Column::json: {
                    json_[slot].resize(64 + 25 * 24 + m.response_id.size());
                    const std::size_t n = to_json_array(m, json_[slot].data());
                    sqlite3_bind_text(s, i++, json_[slot].data(), static_cast<int>(n),
                                      SQLITE_STATIC);
                    break;
                }
            }
        }
    }

    const Design& design_;
    sqlite3* db_ = nullptr;
    sqlite3_stmt* insert_ = nullptr;
    std::optional<store::LabelSets> label_sets_;
    std::array<std::vector<std::uint8_t>, kRows> packed_;
    std::array<std::string, kRows> json_;
};

// The records of store_bench.cpp: gateway-shaped, every field set, no client id.
std::vector<Measurement> gateway_records(std::size_t n) {
    std::vector<Measurement> out;
    for (std::size_t i = 0; i < n; ++i) {
        const auto seq = static_cast<std::int64_t>(i);
        Measurement m = testing::full_record(seq);
        m.request_id = "48a2fa3ec386c31eb7cb620c7d7b" + std::to_string(100000 + seq % 900000);
        m.client_id.clear();
        out.push_back(std::move(m));
    }
    return out;
}

void BM_StoreSchema(benchmark::State& state) {
    const Design& design = designs().at(static_cast<std::size_t>(state.range(0)));
    state.SetLabel(design.name);
    testing::TempDb db;
    Writer writer(db.path(), design);
    auto batch = gateway_records(256);
    for (auto _ : state) {
        writer.write(batch);
        for (auto& m : batch) m.ts_us += 256;
    }
    state.SetItemsProcessed(state.iterations() * 256);
}
BENCHMARK(BM_StoreSchema)->DenseRange(0, 7)->UseRealTime();
// A fixed count for instructions (store_instructions.sh schemas): 25,600 records.
BENCHMARK(BM_StoreSchema)->DenseRange(0, 7)->Iterations(100)->UseRealTime();

}  // namespace
