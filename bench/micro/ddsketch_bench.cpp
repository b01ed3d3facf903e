// DdSketch costs on TTFT-like data (lognormal around 300 ms, sigma 1.5): add() on the hot
// path of the gateway, merge/quantile/encode/decode on the observatory's query and rollup path.

#include <tokenradar/stats/ddsketch.hpp>

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using tokenradar::stats::DdSketch;

std::vector<double> ttft_samples(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::lognormal_distribution<double> dist(std::log(300.0), 1.5);
    std::vector<double> v(n);
    for (double& x : v) x = dist(rng);
    return v;
}

DdSketch sketch_of(std::size_t n, std::uint64_t seed) {
    DdSketch s;
    for (double v : ttft_samples(n, seed)) s.add(v);
    return s;
}

void BM_DdSketch_Add(benchmark::State& state) {
    const auto values = ttft_samples(4096, 1);  // fits in L1 next to the sketch
    DdSketch s;
    std::size_t i = 0;
    for (auto _ : state) {
        s.add(values[i++ & 4095]);
    }
    benchmark::DoNotOptimize(s.count());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DdSketch_Add);

// Reference: only the exact mapping ceil(log_gamma v) with std::log and a counter increment,
// what add() would cost at least without the interpolated log.
void BM_Reference_StdLogIndex(benchmark::State& state) {
    const auto values = ttft_samples(4096, 1);
    const double inv_ln_gamma = 1 / std::log((1 + 0.01) / (1 - 0.01));
    std::vector<double> counts(4096);
    std::size_t i = 0;
    for (auto _ : state) {
        const double x = std::log(values[i++ & 4095]) * inv_ln_gamma;
        const auto index = static_cast<std::int32_t>(std::ceil(x));
        counts[static_cast<std::size_t>(index) & 4095] += 1;
    }
    benchmark::DoNotOptimize(counts.data());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Reference_StdLogIndex);

void BM_DdSketch_Merge(benchmark::State& state) {
    DdSketch a = sketch_of(100'000, 2);
    const DdSketch b = sketch_of(100'000, 3);
    state.counters["buckets"] = static_cast<double>(b.buckets().size());
    for (auto _ : state) {
        benchmark::DoNotOptimize(a.merge(b));
    }
}
BENCHMARK(BM_DdSketch_Merge);

void BM_DdSketch_Quantile_P99(benchmark::State& state) {
    const DdSketch s = sketch_of(100'000, 4);
    for (auto _ : state) {
        benchmark::DoNotOptimize(s.quantile(0.99));
    }
}
BENCHMARK(BM_DdSketch_Quantile_P99);

void BM_DdSketch_Encode(benchmark::State& state) {
    const DdSketch s = sketch_of(100'000, 5);
    std::size_t bytes = 0;
    for (auto _ : state) {
        auto out = s.encode();
        bytes = out.size();
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_DdSketch_Encode);

void BM_DdSketch_Decode(benchmark::State& state) {
    const auto bytes = sketch_of(100'000, 6).encode();
    for (auto _ : state) {
        auto s = DdSketch::decode(bytes);
        benchmark::DoNotOptimize(s);
    }
    state.counters["bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_DdSketch_Decode);

}  // namespace
