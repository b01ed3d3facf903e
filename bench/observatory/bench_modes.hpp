#pragma once
// The modes of observatory_bench (bench/README.md, "The observatory"): each a function that
// prints its numbers and returns the exit code.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tokenradar::bench_observatory {

// 2026-11-30T17:20:00Z: the queries' "now" (fixed, so answers are comparable between runs).
inline constexpr std::int64_t kDefaultNowUs = 1'796'059'200'000'000;

struct QueryBenchOptions {
    std::size_t records = 10'000'000;
    int days = 30;
    int runs = 20;
    std::uint64_t seed = 1;
    std::int64_t now_us = kDefaultNowUs;
    std::vector<std::string> targets;  // empty: default_query_targets()
    std::filesystem::path dump_dir;    // each answer's body (without generated_at), to diff
    int live = 0;                // records of the last hour added before each run (caches go stale)
    std::size_t submitters = 6;  // RecordGenerator::submitters
    // RollupOptions::late_allowance; the build prunes (folds) after each batch at the time of
    // its last record, as RollupKeeper does every minute. 0: never fold (the index before
    // folding: every client part kept).
    int late_allowance_minutes = 60;
};
std::vector<std::string> default_query_targets();
int run_queries(const QueryBenchOptions& options);

// Library-level ingestion: gunzip + parse_submission + BatchWriter::submit into a temporary
// SQLite store with a RollupKeeper on the writer thread, no HTTP.
struct PipelineBenchOptions {
    std::size_t bodies = 20;
    std::size_t records_per_body = 10'000;
    int threads = 2;  // parsing threads (the server's HttpApi has 2 workers)
    bool gzip = false;
    std::uint64_t seed = 1;
    int spread_hours = 1;  // records' ts over the last this many hours (ingestion accepts 7 d)
    bool time_ordered_ids = false;  // RecordGenerator::time_ordered_ids
    std::filesystem::path dir;      // for the store; empty: a new directory under the temp dir
};
int run_pipeline(const PipelineBenchOptions& options);

// The HTTP client: posts NDJSON bodies of fresh records to a running `tokenradar serve`.
struct PostBenchOptions {
    std::string url;  // http://127.0.0.1:PORT/api/v1/measurements
    std::size_t requests = 30;
    std::size_t records_per_request = 10'000;
    int connections = 4;
    bool gzip = false;
    std::uint64_t seed = 1;
    int spread_hours = 1;  // records' ts over the last this many hours
    bool time_ordered_ids = false;
    std::string key;     // Authorization: Bearer KEY when set
    int server_pid = 0;  // when set, the server's CPU time over the run is reported
};
int run_post(const PostBenchOptions& options);

}  // namespace tokenradar::bench_observatory
