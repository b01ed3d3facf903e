// kill -9 of a process writing through a BatchWriter: the database opens cleanly afterwards,
// every stored record is intact, the records form an unbroken prefix of what was pushed, and
// the newest one is at most about one flush interval older than the kill (src/store/README.md
// states the loss window this measures).

#include "../../support/store_records.hpp"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tokenradar/core/clock.hpp>
#include <tokenradar/store/batch_writer.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#ifndef TOKENRADAR_CRASH_RUNS
#define TOKENRADAR_CRASH_RUNS 1
#endif

namespace tokenradar::store {
namespace {

using namespace std::chrono_literals;
using testing::full_record;
using testing::relative_to_send;

constexpr auto kFlushInterval = 200ms;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Sanitizer builds insert 10-20x slower (a few thousand records/s on this box): push 1,000
// records/s so the writer keeps up (otherwise batches, and the loss, grow without bound),
// and allow for slow commits.
constexpr auto kPushPeriod = 1ms;
constexpr auto kRunFor = 1500ms;
constexpr auto kMargin = 800ms;
constexpr std::size_t kMinStored = 300;
#else
// About 10,000 records/s, a busy gateway.
constexpr auto kPushPeriod = 100us;
constexpr auto kRunFor = 1000ms;
// Generous allowance for one commit plus scheduling on a loaded 2-core machine.
constexpr auto kMargin = 300ms;
constexpr std::size_t kMinStored = 5000;
#endif

Measurement numbered(std::int64_t seq, std::int64_t ts_us) {
    Measurement m = full_record(seq);
    m.ts_us = ts_us;
    return m;
}

[[noreturn]] void child_pushes_forever(const std::string& path) {
    auto store = SqliteStore::open(path);
    if (!store) _exit(3);
    BatchWriterOptions options;
    options.flush_interval = kFlushInterval;
    BatchWriter writer(std::move(*store), options);
    auto next = std::chrono::steady_clock::now();
    for (std::int64_t seq = 0;; ++seq) {
        writer.try_push(numbered(seq, wall_now_us()));
        next += kPushPeriod;
        std::this_thread::sleep_until(next);
    }
}

struct CrashOutcome {
    double loss_ms = 0;  // kill time minus the newest stored record's ts
    std::size_t stored = 0;
};

// Void so gtest's ASSERT_* can stop it; callers check HasFatalFailure().
void crash_once(std::chrono::milliseconds run_for, CrashOutcome& outcome) {
    testing::TempDb db;
    { ASSERT_TRUE(SqliteStore::open(db.path())); }  // schema first, so the child only writes
    const pid_t child = fork();
    if (child == 0) child_pushes_forever(db.path());
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(run_for);
    EXPECT_EQ(kill(child, SIGKILL), 0);
    const std::int64_t killed_us = wall_now_us();
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child exit status " << status;

    // The file is consistent: SQLite's own check, then every record's content.
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(db.path().c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* check = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(check), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
    sqlite3_finalize(check);
    sqlite3_close(raw);

    auto store = SqliteStore::open(db.path());
    ASSERT_TRUE(store);
    auto records = (*store)->select({});
    ASSERT_TRUE(records);
    ASSERT_FALSE(records->empty()) << "nothing stored after " << run_for.count() << " ms";
    // Oldest first by ts_us: request ids must be 0, 1, 2, ... without a gap (whole batches
    // are committed in push order), each record exactly what was pushed.
    for (std::size_t i = 0; i < records->size(); ++i) {
        const Measurement& m = (*records)[i];
        const auto seq = static_cast<std::int64_t>(i);
        ASSERT_EQ(m, relative_to_send(numbered(seq, m.ts_us))) << "record " << i;
        if (i > 0) {
            ASSERT_GE(m.ts_us, (*records)[i - 1].ts_us);
        }
    }
    outcome.stored = records->size();
    outcome.loss_ms = static_cast<double>(killed_us - records->back().ts_us) / 1000.0;
}

TEST(StoreCrash, KillMinus9LosesAtMostAboutOneFlushInterval) {
    std::vector<double> losses;
    for (int run = 0; run < TOKENRADAR_CRASH_RUNS; ++run) {
        // Vary the kill time so it lands at different points of the flush cycle.
        const auto run_for = kRunFor + std::chrono::milliseconds(37 * run);
        CrashOutcome o;
        crash_once(run_for, o);
        if (::testing::Test::HasFatalFailure()) return;
        std::printf("kill -9 after %lld ms: %zu records stored, newest %.1f ms before the kill\n",
                    static_cast<long long>(run_for.count()), o.stored, o.loss_ms);
        EXPECT_GE(o.stored, kMinStored);
        EXPECT_GE(o.loss_ms, 0.0);
        const double bound_ms =
            std::chrono::duration<double, std::milli>(kFlushInterval + kMargin).count();
        EXPECT_LE(o.loss_ms, bound_ms);
        losses.push_back(o.loss_ms);
    }
    std::sort(losses.begin(), losses.end());
    std::printf(
        "loss window over %zu kills: min %.1f ms, median %.1f ms, max %.1f ms (flush interval %lld "
        "ms)\n",
        losses.size(), losses.front(), losses[losses.size() / 2], losses.back(),
        static_cast<long long>(kFlushInterval.count()));
}

}  // namespace
}  // namespace tokenradar::store
