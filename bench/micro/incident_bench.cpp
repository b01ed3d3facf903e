// Latency incident detection over 500 label cells (issue target: under 10 ms per evaluation):
// the sans-IO detector alone.
#include <tokenradar/observatory/incident_detector.hpp>
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

}  // namespace
