// Records/s into each store backend, side by side (issue 29: target 50,000/s sustained into
// PostgreSQL from one node): the BatchWriter's batches of 256 through MeasurementStore::insert,
// one transaction each, for SQLite (a temporary file, WAL, synchronous=NORMAL as shipped) and
// PostgreSQL 15 (a local server started by the benchmark with its defaults: fsync on,
// synchronous_commit on; tests/support/postgres_server.hpp) with either loader. Wall-clock
// rates: the server's own processes share the machine's cores and count.
//
//   build/release/bench/micro/micro_bench --benchmark_filter=StoreBackends
//
// Args: backend (0 SQLite; PostgreSQL: 1 by COPY, 2 by multi-row INSERT, as shipped with
// synchronous_commit off for the store's connection; 3 by COPY with synchronous_commit on,
// each commit waiting for its WAL flush), then
// 0 for records measured here (the gateway's) or 1 for submitted ones (the observatory's
// ingestion: a client id, de-duplicated by the unique index, time-ordered request ids).
//
// ClickHouse (issue 32: target 100,000 records/s from one node, in batches) is backend 4: a
// clickhouse-server 18.16 started by the benchmark (tests/support/clickhouse_server.hpp).
// BM_StoreBackends_Batch puts it beside SQLite at several batch sizes in the same run:
//
//   build/release/bench/micro/micro_bench --benchmark_filter=StoreBackends_Batch

#include "../../tests/support/clickhouse_server.hpp"
#include "../../tests/support/postgres_server.hpp"
#include "../../tests/support/store_records.hpp"

#include <tokenradar/core/ids.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace tokenradar;

constexpr std::size_t kBatch = 256;

testing::PostgresServer& server() {
    static testing::PostgresServer s(/*durable=*/true);
    return s;
}

testing::ClickHouseServer& clickhouse() {
    static testing::ClickHouseServer s;
    return s;
}

struct Opened {
    std::unique_ptr<testing::TempDb> file;  // SQLite's
    std::unique_ptr<store::MeasurementStore> store;
};

Opened open_backend(int backend) {
    static int databases = 0;
    Opened o;
    if (backend == 0) {
        o.file = std::make_unique<testing::TempDb>();
        auto s = store::SqliteStore::open(o.file->path());
        if (!s) throw std::runtime_error(s.error().message);
        o.store = std::move(*s);
        return o;
    }
    if (backend == 4) {
        if (!testing::ClickHouseServer::available()) {
            throw std::runtime_error(testing::ClickHouseServer::skip_reason());
        }
        auto s =
            store::ClickHouseStore::open(clickhouse().url("bench_" + std::to_string(databases++)));
        if (!s) throw std::runtime_error(s.error().message);
        o.store = std::move(*s);
        return o;
    }
    store::PostgresOptions options;
    options.loader = backend == 2 ? store::PostgresOptions::Loader::insert
                                  : store::PostgresOptions::Loader::copy;
    options.synchronous_commit = backend == 3;
    const std::string url = server().create_database("bench_" + std::to_string(databases++));
    auto s = store::PostgresStore::open(url, options);
    if (!s) throw std::runtime_error(s.error().message);
    o.store = std::move(*s);
    return o;
}

// The backend of the benchmark's first argument, or none (the benchmark skipped with why).
Opened open_or_skip(benchmark::State& state) {
    try {
        return open_backend(static_cast<int>(state.range(0)));
    } catch (const std::exception& e) {
        state.SkipWithError(e.what());
        return {};
    }
}

// Gateway-shaped records, numbered on from `next`; submitted ones carry a client id and a
// time-ordered request id (what tokenradar's own submitters send).
std::vector<Measurement> batch(std::int64_t& next, bool submitted, std::size_t size = kBatch) {
    std::vector<Measurement> out;
    out.reserve(size);
    for (std::size_t i = 0; i < size; ++i) {
        Measurement m = testing::full_record(next++);
        m.ts_us = 1'764'460'800'000'000 + next;
        if (submitted) {
            m.client_id = "key:bench";
            m.request_id = new_request_id();
        } else {
            m.client_id.clear();
            m.request_id = "48a2fa3ec386c31eb7cb620c7d7b" + std::to_string(100000 + next % 900000);
        }
        out.push_back(std::move(m));
    }
    return out;
}

void BM_StoreBackends_Insert(benchmark::State& state) {
    Opened o = open_or_skip(state);
    if (!o.store) return;
    const bool submitted = state.range(1) != 0;
    std::int64_t next = 0;
    std::size_t stored = 0;
    for (auto _ : state) {
        state.PauseTiming();
        auto records = batch(next, submitted);
        state.ResumeTiming();
        auto ok = o.store->insert(records);
        if (!ok) {
            state.SkipWithError(ok.error().message.c_str());
            break;
        }
        for (const bool s : *ok) stored += s ? 1 : 0;
    }
    // Every record was new: a benchmark that stored nothing would measure the duplicate check.
    if (stored != static_cast<std::size_t>(state.iterations()) * kBatch) {
        state.SkipWithError("not every record was stored");
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(stored));
}
BENCHMARK(BM_StoreBackends_Insert)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}})
    ->MinTime(5.0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Args: backend (0 SQLite, 4 ClickHouse), submitted (0/1), records per insert() call. The
// records of each batch are made outside the timing, then one insert() each: one transaction
// (SQLite), one INSERT ... FORMAT RowBinary over HTTP (ClickHouse; submitted ones after their
// duplicate lookup). The server's processes share the two cores and count.
void BM_StoreBackends_Batch(benchmark::State& state) {
    Opened o = open_or_skip(state);
    if (!o.store) return;
    const bool submitted = state.range(1) != 0;
    const auto size = static_cast<std::size_t>(state.range(2));
    std::int64_t next = 0;
    std::size_t stored = 0;
    for (auto _ : state) {
        state.PauseTiming();
        auto records = batch(next, submitted, size);
        state.ResumeTiming();
        auto ok = o.store->insert(records);
        if (!ok) {
            state.SkipWithError(ok.error().message.c_str());
            break;
        }
        for (const bool s : *ok) stored += s ? 1 : 0;
    }
    if (stored != static_cast<std::size_t>(state.iterations()) * size) {
        state.SkipWithError("not every record was stored");
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(stored));
}
BENCHMARK(BM_StoreBackends_Batch)
    ->ArgsProduct({{0, 4}, {0, 1}, {256, 2048, 10000}})
    ->MinTime(5.0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// scan() of 100,000 records (the stats command's read, and a rollup rebuild's).
void BM_StoreBackends_Scan(benchmark::State& state) {
    Opened o = open_or_skip(state);
    if (!o.store) return;
    std::int64_t next = 0;
    for (int b = 0; b < 400; ++b) {
        if (auto ok = o.store->insert(batch(next, false)); !ok) {
            state.SkipWithError(ok.error().message.c_str());
            return;
        }
    }
    std::size_t seen = 0;
    for (auto _ : state) {
        auto scanned = o.store->scan(
            {}, [&seen](const Measurement& m) { seen += m.output_tokens.has_value(); });
        if (!scanned) state.SkipWithError(scanned.error().message.c_str());
    }
    benchmark::DoNotOptimize(seen);
    state.SetItemsProcessed(state.iterations() * next);
}
BENCHMARK(BM_StoreBackends_Scan)
    ->Arg(0)
    ->Arg(1)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// load_rollups() of 100,000 hour rows of ~600 bytes (what an observatory reads at start
// instead of its records: its queries then run on those sketches in memory, whichever
// backend keeps them).
void BM_StoreBackends_LoadRollups(benchmark::State& state) {
    Opened o = open_or_skip(state);
    if (!o.store) return;
    constexpr int kRows = 100'000;
    std::vector<store::RollupRow> rows;
    for (int i = 0; i < kRows; ++i) {
        store::RollupRow row;
        row.hour_us = 3'600'000'000LL * (i / 100);
        row.labels = {"provider-" + std::to_string(i % 10),
                      "model-" + std::to_string(i % 100),
                      "chat",
                      "gateway",
                      "openai",
                      "us-east",
                      "eu-west"};
        row.aggregate.assign(600, static_cast<std::uint8_t>(i));
        rows.push_back(std::move(row));
    }
    if (auto saved = o.store->save_rollups(rows, 1); !saved) {
        state.SkipWithError(saved.error().message.c_str());
        return;
    }
    std::size_t bytes = 0;
    for (auto _ : state) {
        auto loaded =
            o.store->load_rollups([&](store::RollupRow&& r) { bytes += r.aggregate.size(); });
        if (!loaded) state.SkipWithError(loaded.error().message.c_str());
    }
    benchmark::DoNotOptimize(bytes);
    state.SetItemsProcessed(state.iterations() * kRows);
}
BENCHMARK(BM_StoreBackends_LoadRollups)
    ->Arg(0)
    ->Arg(1)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
