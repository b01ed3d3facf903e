#pragma once
// The modes of cache_bench (bench/README.md, "The semantic cache" and "L1 admission"): each
// prints its numbers and returns the exit code.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tokenradar::bench_cache {

// This thread's CPU time: on a busy machine wall time also counts the time others ran.
double thread_cpu_us();

struct GuardBenchOptions {
    std::string tsv;                // cached \t query \t yes|no \t kind
    std::size_t dimension = 256;    // BuiltinEmbedder's
    float detail_threshold = 0.0F;  // per-kind table and errors at this one (0: the default)
    bool show_errors = false;       // print the wrong hits and the missed paraphrases
};
int run_guard(const GuardBenchOptions& options);

struct LookupBenchOptions {
    std::size_t entries = 100'000;
    std::size_t queries = 10'000;
    std::vector<std::size_t> scopes;  // one run per count; empty: 1, 10 and 1000
    std::size_t dimension = 256;
    std::size_t neighbours = 8;
    std::size_t ef_search = 32;  // SemanticIndexOptions' defaults
    std::size_t m = 16;
    std::size_t ef_construction = 64;
    std::uint64_t seed = 1;
};
int run_lookup(const LookupBenchOptions& options);

// One scope of `entries` entries; erases just over half of them (the last erase runs the
// graph rebuild on its thread) while one thread looks up and another inserts.
struct RebuildBenchOptions {
    std::size_t entries = 100'000;
    std::size_t dimension = 256;
    std::uint64_t seed = 1;
    std::size_t insert_interval_us = 2000;  // the inserter's pause between inserts; 0: none
};
int run_rebuild(const RebuildBenchOptions& options);

// Key traces replayed through MemoryTier under LRU and W-TinyLFU at each size (percent of the
// distinct questions' answer bytes): hit ratio and CPU per get and per put.
struct AdmissionBenchOptions {
    std::vector<std::string> traces = {"faq", "zipf", "scan", "recency"};
    std::vector<double> sizes_percent = {1, 5, 10, 25};
    std::size_t requests = 1'000'000;
    std::size_t shards = 16;  // the gateway's
    std::uint64_t seed = 1;
    std::size_t timed_runs = 3;  // CPU per policy and size: the least of these replays
};
int run_admission(const AdmissionBenchOptions& options);

}  // namespace tokenradar::bench_cache
