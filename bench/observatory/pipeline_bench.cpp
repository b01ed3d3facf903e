// `observatory_bench pipeline`: what POST /api/v1/measurements does after the body is read,
// without HTTP, to show where ingestion's time goes: gunzip (optional), parse_submission,
// BatchWriter::submit into a fresh SQLite file (the server's store settings: WAL,
// synchronous=NORMAL), and the RollupKeeper on the writer thread (rollup add after each
// commit, dirty hour rows saved every second). `threads` parse in parallel as the server's
// two HttpApi workers do; the writer thread is the store's one.

#include "bench_modes.hpp"
#include "records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/observatory/ingest.hpp>
#include <tokenradar/observatory/rollup_keeper.hpp>
#include <tokenradar/store/batch_writer.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace tokenradar::bench_observatory {
namespace {

using Clock = std::chrono::steady_clock;

// A RollupKeeper that also times itself and its thread.
class TimedKeeper final : public store::WriteListener {
  public:
    explicit TimedKeeper(std::shared_ptr<observatory::RollupIndex> index)
        : keeper_(std::move(index)) {}

    void started(store::MeasurementStore& s) override { keeper_.started(s); }
    void written(store::MeasurementStore& s, std::span<const Measurement> stored) override {
        const double t0 = thread_cpu_seconds();
        keeper_.written(s, stored);
        written_cpu_ += thread_cpu_seconds() - t0;
    }
    void tick(store::MeasurementStore& s) override {
        const double t0 = thread_cpu_seconds();
        keeper_.tick(s);
        tick_cpu_ += thread_cpu_seconds() - t0;
    }
    void stopping(store::MeasurementStore& s) override {
        const double t0 = thread_cpu_seconds();
        keeper_.stopping(s);
        tick_cpu_ += thread_cpu_seconds() - t0;
        thread_cpu_ = thread_cpu_seconds();  // the writer thread's whole life
    }

    double written_cpu_ = 0;  // rollup add
    double tick_cpu_ = 0;     // saving hour rows, pruning
    double thread_cpu_ = 0;

  private:
    observatory::RollupKeeper keeper_;
};

struct StageTimes {
    std::mutex mutex;
    double gunzip = 0, parse = 0, wait = 0;
    std::size_t stored = 0, rejected = 0;
};

}  // namespace

int run_pipeline(const PipelineBenchOptions& o) {
    std::filesystem::path dir = o.dir;
    if (dir.empty()) {
        std::string tmpl = (std::filesystem::temp_directory_path() / "obsbench-XXXXXX").string();
        if (mkdtemp(tmpl.data()) == nullptr) {
            fmt::print(stderr, "mkdtemp failed\n");
            return 1;
        }
        dir = tmpl;
    }
    const std::string path = (dir / "pipeline.db").string();
    const std::int64_t now_us = wall_now_us();
    const std::size_t total = o.bodies * o.records_per_body;

    // Bodies first (not timed): records of the last spread_hours, ids unique across bodies.
    RecordGenerator gen(o.seed, now_us - o.spread_hours * kHourUs, now_us, total);
    gen.time_ordered_ids = o.time_ordered_ids;
    std::vector<std::string> bodies;
    std::size_t body_bytes = 0;
    for (std::size_t b = 0; b < o.bodies; ++b) {
        std::string body = ndjson_body(gen, o.records_per_body, 0);
        body_bytes += body.size();
        bodies.push_back(o.gzip ? observatory::gzip(body) : std::move(body));
    }
    std::size_t sent_bytes = 0;
    for (const auto& b : bodies) sent_bytes += b.size();
    fmt::print(
        "pipeline: {} bodies x {} records ({:.1f} MB NDJSON{}) of the last {} h, {} parsing "
        "threads, "
        "store {}\n",
        o.bodies, o.records_per_body, static_cast<double>(body_bytes) / 1e6,
        o.gzip ? fmt::format(", {:.1f} MB gzip'd", static_cast<double>(sent_bytes) / 1e6) : "",
        o.spread_hours, o.threads, path);

    auto opened = store::SqliteStore::open(path);
    if (!opened) {
        fmt::print(stderr, "store: {}\n", opened.error().message);
        return 1;
    }
    auto index = std::make_shared<observatory::RollupIndex>();
    auto keeper = std::make_shared<TimedKeeper>(index);
    store::BatchWriter writer(std::move(*opened), {}, keeper);

    StageTimes times;
    std::atomic<std::size_t> next_body{0};
    const auto worker = [&] {
        double gunzip_cpu = 0, parse_cpu = 0, wait_s = 0;
        std::size_t stored = 0, rejected = 0;
        observatory::IngestContext ctx;
        ctx.now_us = now_us;
        ctx.submitter = "key:bench";
        for (std::size_t b = next_body++; b < bodies.size(); b = next_body++) {
            std::string inflated;
            std::string_view body = bodies[b];
            const double t0 = thread_cpu_seconds();
            if (o.gzip) {
                auto out = observatory::gunzip(body, 64 << 20);
                if (!out) throw std::runtime_error(out.error().message);
                inflated = std::move(*out);
                body = inflated;
            }
            const double t1 = thread_cpu_seconds();
            auto sub = observatory::parse_submission(body, observatory::BodyFormat::ndjson, ctx);
            if (!sub) throw std::runtime_error(sub.error().message);
            rejected += sub->errors.size();
            const double t2 = thread_cpu_seconds();
            const auto waited = Clock::now();
            auto flags = writer.submit(std::move(sub->records)).get();
            wait_s += std::chrono::duration<double>(Clock::now() - waited).count();
            if (!flags) throw std::runtime_error(flags.error().message);
            for (bool f : *flags) stored += f ? 1 : 0;
            gunzip_cpu += t1 - t0;
            parse_cpu += t2 - t1;
        }
        std::lock_guard lock(times.mutex);
        times.gunzip += gunzip_cpu;
        times.parse += parse_cpu;
        times.wait += wait_s;
        times.stored += stored;
        times.rejected += rejected;
    };

    const double cpu0 = process_cpu_seconds();
    const auto wall0 = Clock::now();
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < o.threads; ++t) threads.emplace_back(worker);
    }
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    writer.stop();  // the keeper's last save
    const double cpu = process_cpu_seconds() - cpu0;

    auto check = store::SqliteStore::open(path);
    std::int64_t in_store = -1;
    if (check) {
        if (auto last = (*check)->last_id()) in_store = *last;
    }
    const auto per = [&](double seconds) { return seconds * 1e6 / static_cast<double>(total); };
    const double insert = keeper->thread_cpu_ - keeper->written_cpu_ - keeper->tick_cpu_;
    fmt::print(
        "stored {} (store's last id {}), rejected {}: {:.0f} records/s wall ({:.2f} s), "
        "process CPU {:.2f} us per record ({:.0f} records per CPU second)\n",
        times.stored, in_store, times.rejected, static_cast<double>(total) / wall, wall, per(cpu),
        static_cast<double>(total) / cpu);
    fmt::print(
        "  CPU per record: gunzip {:.2f} us, parse {:.2f} us | writer thread {:.2f} us = "
        "SQLite insert {:.2f} + rollup add {:.2f} + rollup save {:.2f}\n",
        per(times.gunzip), per(times.parse), per(keeper->thread_cpu_), per(insert),
        per(keeper->written_cpu_), per(keeper->tick_cpu_));
    fmt::print("  parsing threads waited {:.2f} s in total for commits\n", times.wait);
    std::error_code ignored;
    if (o.dir.empty()) std::filesystem::remove_all(dir, ignored);
    return times.stored == total && in_store == static_cast<std::int64_t>(total) ? 0 : 1;
}

}  // namespace tokenradar::bench_observatory
