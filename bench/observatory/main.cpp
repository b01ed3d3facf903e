// observatory_bench: the observatory's performance targets, measured three ways;
// bench/README.md ("The observatory") has the commands and the last numbers.
//   queries   10 M records in a RollupIndex, QueryApi answers timed with the cache off
//   pipeline  ingestion without HTTP: gunzip, parse, SQLite insert, rollups
//   post      the HTTP client of bench/observatory/run.sh (a real tokenradar serve)

#include "bench_modes.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <functional>

int main(int argc, char** argv) {
    using namespace tokenradar::bench_observatory;
    CLI::App app{
        "Observatory benchmarks: queries over 10 M records, ingestion with and without HTTP"};
    app.require_subcommand(1);
    std::function<int()> run;

    QueryBenchOptions q;
    auto* queries = app.add_subcommand(
        "queries", "Build a RollupIndex in memory and time QueryApi::get (cache off)");
    queries->add_option("--records", q.records, "Records in the index")->capture_default_str();
    queries->add_option("--days", q.days, "Spread over this many days before now")
        ->capture_default_str();
    queries->add_option("--runs", q.runs, "Timed runs per query after the cold one")
        ->capture_default_str();
    queries->add_option("--seed", q.seed, "Record generator seed")->capture_default_str();
    queries->add_option("--now-us", q.now_us, "The queries' now (UTC microseconds)")
        ->capture_default_str();
    queries->add_option("--query", q.targets,
                        "A request target (repeatable; default: the standard set)");
    queries->add_option("--dump", q.dump_dir, "Write each answer (without generated_at) here");
    queries->add_option("--live", q.live, "Add this many records of the last hour before every run")
        ->capture_default_str();
    queries->add_option("--submitters", q.submitters, "Clients the records come from (>= 6)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{6}, std::size_t{1'000'000}));
    queries
        ->add_option("--late-allowance", q.late_allowance_minutes,
                     "Minutes a bucket takes records after its end; 0 = never fold")
        ->capture_default_str()
        ->check(CLI::Range(0, 7 * 24 * 60));
    queries->callback([&] { run = [&] { return run_queries(q); }; });

    PipelineBenchOptions p;
    auto* pipeline = app.add_subcommand(
        "pipeline", "Ingestion without HTTP: parse + BatchWriter::submit + rollups");
    pipeline->add_option("--bodies", p.bodies, "Bodies to ingest")->capture_default_str();
    pipeline->add_option("--records", p.records_per_body, "Records per body")
        ->capture_default_str();
    pipeline->add_option("--threads", p.threads, "Parsing threads")->capture_default_str();
    pipeline->add_flag("--gzip", p.gzip, "gzip the bodies (gunzip is timed)");
    pipeline->add_option("--seed", p.seed, "Record generator seed")->capture_default_str();
    pipeline->add_flag("--time-ordered-ids", p.time_ordered_ids,
                       "Request ids that start with the record's time (UUIDv7-like)");
    pipeline->add_option("--spread", p.spread_hours, "Records of the last this many hours")
        ->capture_default_str();
    pipeline->add_option("--dir", p.dir,
                         "Directory for the store (default: a fresh temporary one, removed)");
    pipeline->callback([&] { run = [&] { return run_pipeline(p); }; });

    PostBenchOptions c;
    auto* post = app.add_subcommand("post", "POST NDJSON bodies to a running tokenradar serve");
    post->add_option("--url", c.url, "http://HOST:PORT/api/v1/measurements")->required();
    post->add_option("--requests", c.requests, "Bodies to post")->capture_default_str();
    post->add_option("--records", c.records_per_request, "Records per body")->capture_default_str();
    post->add_option("--connections", c.connections, "Concurrent keep-alive connections")
        ->capture_default_str();
    post->add_flag("--gzip", c.gzip, "Content-Encoding: gzip");
    post->add_option("--seed", c.seed, "Record generator seed (also salts request ids)")
        ->capture_default_str();
    post->add_option("--key", c.key, "Ingest key (Authorization: Bearer)");
    post->add_flag("--time-ordered-ids", c.time_ordered_ids,
                   "Request ids that start with the record's time (UUIDv7-like)");
    post->add_option("--spread", c.spread_hours, "Records of the last this many hours")
        ->capture_default_str();
    post->add_option("--server-pid", c.server_pid, "Report this process's CPU time over the run");
    post->callback([&] { run = [&] { return run_post(c); }; });

    CLI11_PARSE(app, argc, argv);
    try {
        return run ? run() : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "observatory_bench: %s\n", e.what());
        return 1;
    }
}
