// The measurement store's throughput: SqliteStore::insert in one transaction per batch (the
// BatchWriter's path; target >= 100,000 records/s), BatchWriter::try_push on the request path
// while its writer thread commits, and scan() of a time window (the stats command's read).
// Files live in the temp directory on the real disk, WAL and synchronous=NORMAL as shipped.

#include "../../tests/support/store_records.hpp"

#include <tokenradar/store/batch_writer.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace tokenradar;

std::unique_ptr<store::SqliteStore> open(const std::string& path) {
    auto s = store::SqliteStore::open(path);
    if (!s) throw std::runtime_error(s.error().message);
    return std::move(*s);
}

// A gateway-shaped record: every field set, 32-hex-character ids, ts increasing, no client
// id (measured here). Until 2026-12-01 they had one: from the second pass on, every record of
// the re-inserted batch was then a duplicate, ignored, and the benchmark measured the
// duplicate check (the observatory's own ingestion has bench/micro/ingest_bench.cpp).
std::vector<Measurement> records(std::size_t n, std::int64_t first = 0) {
    std::vector<Measurement> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto seq = first + static_cast<std::int64_t>(i);
        Measurement m = testing::full_record(seq);
        m.request_id = "48a2fa3ec386c31eb7cb620c7d7b" + std::to_string(100000 + seq % 900000);
        m.client_id.clear();
        out.push_back(std::move(m));
    }
    return out;
}

// The gateway's records, which SqliteStore::insert writes in rows of 16 per INSERT.
void BM_SqliteStore_Insert(benchmark::State& state) {
    testing::TempDb db;
    auto s = open(db.path());
    auto batch = records(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        auto ok = s->insert(batch);
        if (!ok) state.SkipWithError(ok.error().message.c_str());
        // Time moves on, as in a gateway: the ts_us index is appended to, not filled in.
        for (auto& m : batch) m.ts_us += state.range(0);
    }
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SqliteStore_Insert)
    ->Arg(1)
    ->Arg(64)
    ->Arg(100)
    ->Arg(256)
    ->Arg(2048)
    ->Arg(20000)
    ->UseRealTime();
// The BatchWriter's batch, 100 times whatever the clock says: the same records and the same
// file size on every run, for counting instructions (bench/micro/store_instructions.sh).
BENCHMARK(BM_SqliteStore_Insert)->Arg(256)->Iterations(100)->UseRealTime();

// try_push as the request path sees it: 50,000 records/s (bursts of 100 every 2 ms) while
// the writer thread commits them. Reported time is the push alone (manual timing, record
// copy excluded); the counters give its distribution over every push of the run.
void BM_BatchWriter_TryPush(benchmark::State& state) {
    testing::TempDb db;
    store::BatchWriter writer(open(db.path()));
    const Measurement proto = records(1).front();
    std::vector<double> push_ns;
    auto next_burst = std::chrono::steady_clock::now();
    for (auto _ : state) {
        Measurement m = proto;  // the request path hands over a record it built
        const auto t0 = std::chrono::steady_clock::now();
        const bool accepted = writer.try_push(std::move(m));
        const auto t1 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(accepted);
        const std::chrono::duration<double> took = t1 - t0;
        state.SetIterationTime(took.count());
        push_ns.push_back(took.count() * 1e9);
        if (push_ns.size() % 100 == 0) {
            next_burst += std::chrono::milliseconds(2);
            std::this_thread::sleep_until(next_burst);
        }
    }
    state.SetItemsProcessed(state.iterations());
    writer.stop();
    const auto c = writer.counters();
    std::sort(push_ns.begin(), push_ns.end());
    state.counters["p50_ns"] = push_ns[push_ns.size() / 2];
    state.counters["p99_ns"] = push_ns[push_ns.size() * 99 / 100];
    state.counters["max_ns"] = push_ns.back();
    state.counters["dropped"] = static_cast<double>(c.dropped);
    state.counters["written"] = static_cast<double>(c.written);
}
BENCHMARK(BM_BatchWriter_TryPush)->UseManualTime()->Iterations(200'000);

// The copy BM_BatchWriter_TryPush includes, measured alone.
void BM_MeasurementCopy(benchmark::State& state) {
    const Measurement proto = records(1).front();
    for (auto _ : state) {
        Measurement m = proto;
        benchmark::DoNotOptimize(m);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MeasurementCopy);

void BM_SqliteStore_ScanWindow(benchmark::State& state) {
    testing::TempDb db;
    auto s = open(db.path());
    const auto n = static_cast<std::size_t>(state.range(0));
    if (auto ok = s->insert(records(n)); !ok) state.SkipWithError(ok.error().message.c_str());
    std::size_t seen = 0;
    for (auto _ : state) {
        auto scanned =
            s->scan({}, [&seen](const Measurement& m) { seen += m.output_tokens.has_value(); });
        if (!scanned) state.SkipWithError(scanned.error().message.c_str());
    }
    benchmark::DoNotOptimize(seen);
    state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_SqliteStore_ScanWindow)->Arg(100'000)->UseRealTime();

}  // namespace
