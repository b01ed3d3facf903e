// Latency incident detection over 500 label cells (issue target: under 10 ms per evaluation):
// the sans-IO detector alone, and the monitor that serve runs (its rollup queries included)
// over an index holding four baseline weeks and the recent minutes of every cell.
#include <tokenradar/observatory/incident_detector.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <benchmark/benchmark.h>

#include <random>

namespace {

using namespace tokenradar;
using namespace tokenradar::observatory;

constexpr std::int64_t kWeekUs = 7 * kDayUs;
// A Wednesday 14:30 UTC.
constexpr std::int64_t kNow =
    1'764'460'800'000'000 + 4 * kWeekUs + 3 * kDayUs + 14 * kHourUs + 30 * kMinuteUs;

CellRef cell_ref(std::int64_t i) {
    return CellRef{"provider-" + std::to_string(i / 50), "model-" + std::to_string(i % 50 / 5),
                   "region-" + std::to_string(i % 5)};
}

void BM_IncidentDetector_Evaluate(benchmark::State& state) {
    const auto cells = state.range(0);
    IncidentDetector detector;
    std::mt19937_64 rng(1);
    std::lognormal_distribution<double> noise(0, 0.05);
    std::vector<std::pair<CellRef, CellStats>> recent;
    for (std::int64_t i = 0; i < cells; ++i) {
        CellStats s;
        s.samples = s.ttft_samples = s.tpot_samples = 200;
        s.errors = 2;
        s.values = {300, 540, 25, 40};
        const std::vector<CellStats> weeks(4, s);
        detector.set_baseline(cell_ref(i), weeks);
        for (double& v : s.values) v *= noise(rng);
        if (i % 100 == 0) s.values[0] *= 3;  // a few slow cells: incidents open and stay open
        recent.emplace_back(cell_ref(i), s);
    }
    std::int64_t now = kNow;
    for (auto _ : state) {
        auto events = detector.evaluate(now, recent);
        benchmark::DoNotOptimize(events);
        now += 30'000'000;
    }
    state.counters["cells"] = static_cast<double>(cells);
}
BENCHMARK(BM_IncidentDetector_Evaluate)->Arg(500)->Unit(benchmark::kMicrosecond);

// One record of cell `i` at `ts_us`: a streamed answer, TTFT and TPOT a little noisy.
Measurement cell_record(std::int64_t i, std::int64_t ts_us, std::mt19937_64& rng) {
    std::lognormal_distribution<double> noise(0, 0.1);
    const CellRef ref = cell_ref(i);
    Measurement m;
    m.labels.provider = ref.provider;
    m.labels.model = ref.model;
    m.labels.upstream_region = ref.region;
    m.labels.task = "probe";
    m.labels.source = "probe";
    m.labels.api = "openai";
    m.labels.stream = true;
    m.http_status = 200;
    m.ts_us = ts_us;
    const auto first_token = static_cast<std::int64_t>(300e6 * noise(rng));
    m.t.first_token = first_token;
    m.t.last_token = first_token + static_cast<std::int64_t>(15 * 25e6 * noise(rng));
    m.t.done = *m.t.last_token + 1'000'000;
    m.output_tokens = 16;
    m.output_events = 16;
    return m;
}

// An index with `cells` cells: 60 records in this hour of each of the 4 weeks before `now`,
// and 20 in its last two minutes.
void fill_index(RollupIndex& index, std::int64_t cells, std::int64_t now) {
    std::mt19937_64 rng(7);
    std::vector<Measurement> batch;
    const auto flush = [&] {
        index.add(batch);
        batch.clear();
    };
    const std::int64_t hour = now / kHourUs * kHourUs;
    for (std::int64_t i = 0; i < cells; ++i) {
        for (int week = 1; week <= 4; ++week) {
            for (int k = 0; k < 60; ++k) {
                batch.push_back(cell_record(i, hour - week * kWeekUs + k * kMinuteUs, rng));
            }
        }
        for (int k = 0; k < 20; ++k) {
            batch.push_back(cell_record(i, now - 2 * kMinuteUs + k * 6'000'000, rng));
        }
        if (batch.size() > 10'000) flush();
    }
    flush();
}

// range(1) = 0: an evaluation with the baselines read (once an hour, or every 10 minutes);
// 1: the evaluations in between (one minute-resolution query and the detector).
void BM_IncidentMonitor_Evaluate(benchmark::State& state) {
    const auto cells = state.range(0);
    const bool cached = state.range(1) == 1;
    RollupIndex index;
    fill_index(index, cells, kNow);
    IncidentConfig config;
    config.enabled = true;
    IncidentMonitor monitor(index, config);
    std::int64_t now = kNow;
    monitor.evaluate(now);
    for (auto _ : state) {
        if (!cached) {
            state.PauseTiming();
            IncidentMonitor fresh(index, config);
            state.ResumeTiming();
            auto events = fresh.evaluate(now);
            benchmark::DoNotOptimize(events);
            continue;
        }
        now += 1'000;  // the same minutes and baselines
        auto events = monitor.evaluate(now);
        benchmark::DoNotOptimize(events);
    }
    state.counters["cells"] = static_cast<double>(cells);
}
BENCHMARK(BM_IncidentMonitor_Evaluate)
    ->Args({500, 0})
    ->Args({500, 1})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
