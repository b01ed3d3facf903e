// `observatory_bench queries`: builds a RollupIndex of N records (default 10 million over 30
// days) in memory, as RollupKeeper would (add() in batches of 4,096, in time order, each
// followed by take_dirty_hours() and a prune() at the time of its last record: the minute
// floor, and folding the buckets that closed), then times QueryApi::get with its answer cache
// off (cache_ttl 0), so every call computes its answer.
//
// Why not through SQLite: query speed depends only on the index; the store is read once at
// start-up (hour rows) and the index is what answers. Inserting 10 M rows first would only
// add minutes to the run.

#include "bench_modes.hpp"
#include "records.hpp"
#include <malloc.h>

#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rollup.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

namespace tokenradar::bench_observatory {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kBatch = 4096;  // RollupKeeper's scan batch

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Timing {
    double cold_cpu_ms = 0, cold_wall_ms = 0;
    std::vector<double> cpu_ms, wall_ms;
};

// The body without "generated_at" (the only part that depends on the clock), for --dump.
std::string stable_body(const std::string& body) {
    const auto comma = body.find(',');
    return comma == std::string::npos ? body : "{" + body.substr(comma + 1);
}

}  // namespace

std::vector<std::string> default_query_targets() {
    const std::string model =
        "&provider=" + RecordGenerator::provider_of(0) + "&model=" + RecordGenerator::model_of(0);
    return {
        "/api/v1/leaderboard?window=24h",
        "/api/v1/leaderboard?window=7d",
        "/api/v1/leaderboard?window=30d",
        "/api/v1/heatmap?window=7d&tz=UTC",
        "/api/v1/heatmap?window=30d&tz=UTC",
        "/api/v1/heatmap?window=7d&tz=America/New_York",
        "/api/v1/heatmap?window=30d&tz=America/New_York",
        // What the dashboard's time-of-day page asks: one model, and all models side by side.
        "/api/v1/heatmap?window=30d&tz=America/New_York" + model,
        "/api/v1/heatmap?window=30d&tz=America/New_York&by=model",
        "/api/v1/leaderboard?window=30d&by=task,client_region",
        // The dashboard's model page asks one model's series; all 24 side by side last.
        "/api/v1/timeseries?window=30d&bucket=hour&q=0.5,0.95" + model,
        "/api/v1/timeseries?window=30d&bucket=hour&q=0.5,0.95",
    };
}

int run_queries(const QueryBenchOptions& o) {
    const std::int64_t now_us = o.now_us;
    const std::int64_t from_us = now_us - static_cast<std::int64_t>(o.days) * kDayUs;
    const bool fold = o.late_allowance_minutes > 0;
    fmt::print("index: {} records over {} days (to {} us), {} label cells, {} submitters, {}\n",
               o.records, o.days, now_us, kCells, o.submitters,
               fold ? fmt::format("late allowance {} min", o.late_allowance_minutes)
                    : std::string("no folding"));

    const std::size_t rss_start = rss_bytes();
    observatory::RollupOptions options;
    // Without folding: an allowance past the last record (nothing closes before now).
    options.late_allowance =
        std::chrono::minutes(fold ? o.late_allowance_minutes : (o.days + 1) * 24 * 60);
    observatory::RollupIndex index(options);

    RecordGenerator gen(o.seed, from_us, now_us, o.records);
    gen.submitters = o.submitters;
    std::vector<Measurement> batch(kBatch);
    double add_cpu = 0;
    const auto build_start = Clock::now();
    const double build_cpu_start = thread_cpu_seconds();
    while (!gen.done()) {
        std::size_t n = 0;
        while (n < kBatch && !gen.done()) gen.next(batch[n++]);
        const double t0 = thread_cpu_seconds();
        index.add(std::span<const Measurement>(batch.data(), n));
        add_cpu += thread_cpu_seconds() - t0;
        // What RollupKeeper does between batches, on the records' clock: it saves the changed
        // hour rows (take_dirty_hours) and prunes (retention, minute floor, folding).
        (void)index.take_dirty_hours();
        index.prune(batch[n - 1].ts_us);
    }
    const double build_wall = seconds_since(build_start);
    const double build_cpu = thread_cpu_seconds() - build_cpu_start;
    batch.clear();
    batch.shrink_to_fit();
    const std::size_t rss_built = rss_bytes();
    // RollupKeeper prunes every minute; that also compacts the hours that have passed.
    const double prune_cpu0 = thread_cpu_seconds();
    index.prune(now_us);
    const double prune_cpu = thread_cpu_seconds() - prune_cpu0;
    malloc_trim(0);  // give freed memory back, so RSS shows what the index holds
    const std::size_t rss_index = rss_bytes();
    const auto grown = static_cast<double>(rss_index - rss_start);
    fmt::print(
        "build: {:.1f} s wall, {:.1f} s CPU, of which RollupIndex::add {:.1f} s CPU "
        "({:.2f} us per record, {:.0f} records/s); RSS {:.0f} MB -> {:.0f} MB ({:.0f} bytes "
        "per record, {:.0f} KB per submitter); last prune {:.1f} s CPU (RSS before it {:.0f} "
        "MB)\n",
        build_wall, build_cpu, add_cpu, add_cpu * 1e6 / static_cast<double>(o.records),
        static_cast<double>(o.records) / add_cpu, static_cast<double>(rss_start) / 1e6,
        static_cast<double>(rss_index) / 1e6, grown / static_cast<double>(o.records),
        grown / 1e3 / static_cast<double>(o.submitters), prune_cpu,
        static_cast<double>(rss_built) / 1e6);

    const observatory::IndexSize size = index.size();
    fmt::print(
        "index: {} buckets, {} aggregates ({} client parts, {} folded cells: {:.0f} MB encoded, "
        "{:.0f} bytes each), {:.0f} MB of sketch buckets ({:.1f} per client part); {} late "
        "records refused\n",
        size.buckets, size.parts, size.parts - size.folded, size.folded,
        static_cast<double>(size.folded_bytes) / 1e6,
        static_cast<double>(size.folded_bytes) /
            static_cast<double>(std::max<std::size_t>(size.folded, 1)),
        static_cast<double>(size.sketch_buckets) * 8 / 1e6,
        static_cast<double>(size.sketch_buckets) /
            static_cast<double>(std::max<std::size_t>(size.parts - size.folded, 1)),
        index.late_records());
    if (o.live > 0) {
        fmt::print("live: {} new records of the last hour are added before every run (not timed)\n",
                   o.live);
    }

    observatory::QueryApi api(index, {.cache_ttl = std::chrono::milliseconds(0)});
    // Fresh records for --live: the last hour, ids apart from the index's.
    RecordGenerator fresh(
        o.seed + 1, now_us - kHourUs, now_us,
        static_cast<std::size_t>(o.live) * static_cast<std::size_t>(o.runs + 1) *
            (o.targets.empty() ? default_query_targets().size() : o.targets.size()));
    std::vector<Measurement> live(static_cast<std::size_t>(o.live));
    if (!o.dump_dir.empty()) std::filesystem::create_directories(o.dump_dir);
    const std::vector<std::string> targets =
        o.targets.empty() ? default_query_targets() : o.targets;
    fmt::print("\n{:<72} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}\n", "query (cache off)",
               "cold ms", "p50 CPU", "p95 CPU", "p50 wall", "p95 wall", "bytes", "RSS MB");
    std::fflush(stdout);  // a profiler can attach once this line is out
    int failures = 0;
    for (std::size_t t = 0; t < targets.size(); ++t) {
        const std::string& target = targets[t];
        Timing timing;
        std::string body;
        for (int run = 0; run <= o.runs; ++run) {
            if (o.live > 0) {
                for (Measurement& m : live) fresh.next(m);
                index.add(live);
            }
            const auto wall0 = Clock::now();
            const double cpu0 = thread_cpu_seconds();
            const observatory::ApiResponse r = api.get(target, "", now_us);
            const double cpu_ms = (thread_cpu_seconds() - cpu0) * 1e3;
            const double wall_ms = seconds_since(wall0) * 1e3;
            if (r.status != 200) {
                fmt::print(stderr, "{}: status {}: {}\n", target, r.status, r.body);
                ++failures;
                break;
            }
            if (run == 0) {
                // The first call may fill the index's day cache: reported on its own.
                timing.cold_cpu_ms = cpu_ms;
                timing.cold_wall_ms = wall_ms;
                body = r.body;
            } else {
                timing.cpu_ms.push_back(cpu_ms);
                timing.wall_ms.push_back(wall_ms);
            }
        }
        if (timing.cpu_ms.empty()) continue;
        std::sort(timing.cpu_ms.begin(), timing.cpu_ms.end());
        std::sort(timing.wall_ms.begin(), timing.wall_ms.end());
        fmt::print("{:<72} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>8} {:>7.0f}\n", target,
                   timing.cold_cpu_ms, stats::percentile_sorted(timing.cpu_ms, 0.5),
                   stats::percentile_sorted(timing.cpu_ms, 0.95),
                   stats::percentile_sorted(timing.wall_ms, 0.5),
                   stats::percentile_sorted(timing.wall_ms, 0.95), body.size(),
                   static_cast<double>(rss_bytes()) / 1e6);
        std::fflush(stdout);
        if (!o.dump_dir.empty()) {
            std::ofstream(o.dump_dir / fmt::format("{:02}.json", t)) << target << '\n'
                                                                     << stable_body(body) << '\n';
        }
    }
    const observatory::IndexSize after = index.size();
    const double rss_mb = static_cast<double>(rss_bytes()) / 1e6;
    malloc_trim(0);  // what the queries freed but the heap kept
    fmt::print(
        "\n{} runs per query after the cold one; CPU = this thread's CPU time; RSS now {:.0f} MB "
        "({:.0f} MB after malloc_trim); "
        "{} cache entries filled ({:.0f} MB packed, {:.0f} MB of them query shapes'), {:.0f} MB "
        "of client parts' sketch buckets\n",
        o.runs, rss_mb, static_cast<double>(rss_bytes()) / 1e6, after.cached,
        static_cast<double>(after.cached_bytes) / 1e6, static_cast<double>(after.shape_bytes) / 1e6,
        static_cast<double>(after.sketch_buckets) * 8 / 1e6);
    return failures == 0 ? 0 : 1;
}

}  // namespace tokenradar::bench_observatory
