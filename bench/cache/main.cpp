// cache_bench: the semantic cache's targets, measured two ways; bench/README.md ("The
// semantic cache") has the commands and the last numbers.
//   guard   precision and hit rate per threshold on a paraphrase set, with and without the
//           lexical guard
//   lookup  embed + find latency over 100k synthetic entries (one scope and many)
//   rebuild a graph rebuild of a 50k-entry scope with lookups and inserts going on: how
//           long find() came back busy in a row, how long the rebuild took
//   admission  the in-process tier's LRU against W-TinyLFU on key traces ("L1 admission")

#include "bench_modes.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <functional>

int main(int argc, char** argv) {
    namespace bc = tokenradar::bench_cache;
    CLI::App app{"Cache benchmarks: semantic guard precision, lookup latency; L1 admission"};
    app.require_subcommand(1);
    std::function<int()> run;

    bc::GuardBenchOptions g;
    auto* guard = app.add_subcommand(
        "guard",
        "Precision and hit rate per threshold on a paraphrase TSV, with and without the "
        "lexical guard");
    guard->add_option("tsv", g.tsv, "cached<TAB>query<TAB>yes|no<TAB>kind")->required();
    guard->add_option("--dim", g.dimension, "Embedding dimension")->capture_default_str();
    guard->add_option("--threshold", g.detail_threshold,
                      "Threshold of the per-kind table (default: the built-in default)");
    guard->add_flag("--errors", g.show_errors, "Print wrong hits and missed paraphrases");
    guard->callback([&] { run = [&] { return bc::run_guard(g); }; });

    bc::LookupBenchOptions l;
    auto* lookup =
        app.add_subcommand("lookup", "Fill an index with synthetic questions, time lookups");
    lookup->add_option("--entries", l.entries, "Entries in the index")->capture_default_str();
    lookup->add_option("--queries", l.queries, "Timed lookups")->capture_default_str();
    lookup->add_option("--scopes", l.scopes, "Scopes the entries spread over (repeatable)");
    lookup->add_option("--dim", l.dimension, "Embedding dimension")->capture_default_str();
    lookup->add_option("--k", l.neighbours, "Candidates per lookup")->capture_default_str();
    lookup->add_option("--ef", l.ef_search, "hnswlib ef at lookup")->capture_default_str();
    lookup->add_option("--m", l.m, "hnswlib M")->capture_default_str();
    lookup->add_option("--ef-construction", l.ef_construction, "hnswlib ef at insert")
        ->capture_default_str();
    lookup->add_option("--seed", l.seed, "Question generator seed")->capture_default_str();
    lookup->callback([&] { run = [&] { return bc::run_lookup(l); }; });

    bc::RebuildBenchOptions r;
    auto* rebuild = app.add_subcommand(
        "rebuild", "Rebuild one scope's graph while lookups and inserts go on; busy lookups");
    rebuild->add_option("--entries", r.entries, "Entries in the scope (just over half erased)")
        ->capture_default_str();
    rebuild->add_option("--dim", r.dimension, "Embedding dimension")->capture_default_str();
    rebuild->add_option("--seed", r.seed, "Question generator seed")->capture_default_str();
    rebuild
        ->add_option("--insert-interval-us", r.insert_interval_us,
                     "Another thread inserts one entry per interval meanwhile; 0: no inserts")
        ->capture_default_str();
    rebuild->callback([&] { run = [&] { return bc::run_rebuild(r); }; });

    bc::AdmissionBenchOptions a;
    auto* admission = app.add_subcommand(
        "admission", "Replay key traces through MemoryTier under LRU and W-TinyLFU admission");
    admission->add_option("--trace", a.traces, "faq, zipf, scan, recency (repeatable)")
        ->capture_default_str();
    admission
        ->add_option("--size", a.sizes_percent, "% of the distinct answers' bytes (repeatable)")
        ->capture_default_str();
    admission->add_option("--requests", a.requests, "Requests a trace")->capture_default_str();
    admission->add_option("--shards", a.shards, "MemoryTier shards")->capture_default_str();
    admission->add_option("--seed", a.seed, "Trace generator seed")->capture_default_str();
    admission->add_option("--timed-runs", a.timed_runs, "CPU: the least of this many replays")
        ->capture_default_str();
    admission->callback([&] { run = [&] { return bc::run_admission(a); }; });

    CLI11_PARSE(app, argc, argv);
    try {
        return run ? run() : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cache_bench: %s\n", e.what());
        return 1;
    }
}
