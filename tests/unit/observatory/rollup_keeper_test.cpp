#include <tokenradar/observatory/rollup_keeper.hpp>

#include "../../support/clickhouse_server.hpp"
#include "../../support/store_records.hpp"
#include "observatory_records.hpp"

#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace tokenradar::observatory {
namespace {

using namespace std::chrono_literals;
using test::kDay0;
using test::record;

constexpr std::int64_t kNow = kDay0 + 2 * kHourUs;

template <class F>
bool eventually(F done) {
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

std::unique_ptr<store::MeasurementStore> open(const std::string& path) {
    auto s = store::SqliteStore::open(path);
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? std::move(*s) : nullptr;
}

// A writer with a keeper, as serve::Service runs them; stop() saves. The keeper's clock is
// `clock` when given (it then prunes at every tick), else kNow.
struct Kept {
    explicit Kept(const std::string& path, const std::atomic<std::int64_t>* clock = nullptr,
                  RollupOptions index_options = {})
        : index(std::make_shared<RollupIndex>(index_options)) {
        RollupKeeperOptions options;
        options.now_us = [clock] { return clock != nullptr ? clock->load() : kNow; };
        if (clock != nullptr) options.prune_interval = 0ms;
        keeper = std::make_shared<RollupKeeper>(index, options);
        writer =
            std::make_unique<store::BatchWriter>(open(path), store::BatchWriterOptions{}, keeper);
    }
    std::shared_ptr<RollupIndex> index;
    std::shared_ptr<RollupKeeper> keeper;
    std::unique_ptr<store::BatchWriter> writer;
};

std::vector<Measurement> records(int n, std::int64_t from_us, const std::string& client = "") {
    std::vector<Measurement> out;
    for (int i = 0; i < n; ++i) {
        Measurement m = record(i % 2 ? "a" : "b", from_us + i * 1'000'000LL, 100 + i, client);
        m.request_id = "r" + std::to_string(from_us) + "-" + std::to_string(i);
        out.push_back(std::move(m));
    }
    return out;
}

// Same groups, counts and percentiles; sketch weights may differ in the last bits when
// clients were merged in another order.
void expect_same(const Groups& a, const Groups& b) {
    ASSERT_EQ(a.size(), b.size());
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
        EXPECT_EQ(i->first, j->first);
        EXPECT_EQ(i->second.samples, j->second.samples);
        EXPECT_EQ(i->second.statuses, j->second.statuses);
        for (double q : {0.0, 0.5, 0.95, 1.0}) {
            const auto x = i->second.sketch(Metric::ttft).quantile(q);
            const auto y = j->second.sketch(Metric::ttft).quantile(q);
            ASSERT_EQ(x.has_value(), y.has_value());
            if (x) {
                EXPECT_NEAR(*x, *y, 1e-9 * *y) << q;
            }
        }
    }
}

Query everything(Resolution r = Resolution::hour) {
    Query q;
    q.from_us = kDay0;
    q.to_us = kNow + kHourUs;
    q.by = {Label::provider};
    q.by_bucket = true;
    q.resolution = r;
    return q;
}

TEST(RollupKeeper, SavedRollupsAndCatchUpGiveTheSameAnswersAfterARestart) {
    tokenradar::testing::TempDb db;
    Groups before_minutes;
    {
        Kept kept(db.path());
        auto stored = kept.writer->submit(records(200, kDay0 + kHourUs));
        ASSERT_EQ(stored.get().value().size(), 200u);
        for (Measurement& m : records(50, kNow - 10 * kMinuteUs, "key:team"))
            kept.writer->try_push(std::move(m));
        kept.writer->stop();
        before_minutes = kept.index->query(everything(Resolution::minute));
    }
    // Records committed by another writer after the last save (a crash before the save).
    {
        auto raw = open(db.path());
        ASSERT_TRUE(raw->insert(records(30, kNow - 5 * kMinuteUs, "key:late")));
    }
    Kept again(db.path());
    ASSERT_TRUE(eventually([&] { return again.keeper->loaded(); }));
    const Groups after = again.index->query(everything());
    std::uint64_t samples = 0;
    for (const auto& [key, a] : after) samples += a.samples;
    EXPECT_EQ(samples, 280u);
    // Without the late records the answers are the ones before the restart.
    std::uint64_t minute_samples = 0;
    for (const auto& [key, a] : again.index->query(everything(Resolution::minute)))
        minute_samples += a.samples;
    std::uint64_t minute_before = 0;
    for (const auto& [key, a] : before_minutes) minute_before += a.samples;
    EXPECT_EQ(minute_before, 250u);         // all within the 6 hours that keep minutes
    EXPECT_EQ(minute_samples, 250u + 30u);  // refilled, not counted twice
    again.writer->stop();

    // rebuild gives the same rows as the incremental path.
    auto raw = open(db.path());
    RollupIndex saved;
    ASSERT_TRUE(raw->load_rollups(
        [&](store::RollupRow&& r) { saved.load_hour(from_store_row(r).value()); }));
    auto rebuilt_count = rebuild_rollups(*raw);
    ASSERT_TRUE(rebuilt_count) << rebuilt_count.error().message;
    EXPECT_EQ(*rebuilt_count, 280u);
    RollupIndex rebuilt;
    auto watermark = raw->load_rollups(
        [&](store::RollupRow&& r) { rebuilt.load_hour(from_store_row(r).value()); });
    EXPECT_EQ(watermark.value(), raw->last_id().value());
    expect_same(saved.query(everything()), rebuilt.query(everything()));
    expect_same(rebuilt.query(everything()), after);
}

TEST(RollupKeeper, FoldedHoursAndRefusedLateRecordsSurviveARestart) {
    tokenradar::testing::TempDb db;
    std::atomic<std::int64_t> clock{kNow};
    // Hour 1 is open at kNow (it closes at 3:00); hour 0 closed at 2:00.
    std::vector<Measurement> open_hour;
    for (int i = 0; i < 3; ++i) {
        for (Measurement& m : records(40 + 20 * i, kDay0 + kHourUs, "key:" + std::to_string(i)))
            open_hour.push_back(std::move(m));
    }
    std::vector<Measurement> late = records(7, kDay0, "key:late");
    Groups folded;
    {
        Kept kept(db.path(), &clock);
        ASSERT_TRUE(eventually([&] { return kept.keeper->loaded(); }));
        ASSERT_EQ(kept.writer->submit(open_hour).get().value().size(), 180u);
        ASSERT_EQ(kept.writer->submit(late).get().value().size(), 7u);  // stored, not rolled up
        EXPECT_EQ(kept.index->late_records(), 7u);
        const Groups open = kept.index->query(everything());
        clock = kDay0 + 3 * kHourUs + kMinuteUs;  // hour 1 closes: the next tick folds it
        ASSERT_TRUE(eventually([&] { return kept.index->size().folded > 0; }));
        folded = kept.index->query(everything());
        expect_same(folded, open);
        for (Measurement& m : records(5, kDay0 + kHourUs + 30 * kMinuteUs, "key:later"))
            kept.writer->try_push(std::move(m));
        kept.writer->stop();
        EXPECT_EQ(kept.index->late_records(), 12u);
    }
    // The saved per-client rows load and fold into the same answers; the refused records
    // stay refused.
    Kept again(db.path(), &clock);
    ASSERT_TRUE(eventually([&] { return again.keeper->loaded(); }));
    EXPECT_GT(again.index->size().folded, 0u);
    EXPECT_EQ(again.index->size().parts, again.index->size().folded);
    expect_same(again.index->query(everything()), folded);
    again.writer->stop();

    // rollup --rebuild rolls up every stored record, the late ones too.
    auto raw = open(db.path());
    ASSERT_EQ(rebuild_rollups(*raw).value(), 180u + 7u + 5u);
}

// Issue 32: a start folds each closed hour as the store's rows (in hour order) pass it, so it
// never holds every saved client part; no saved row is refused on the way.
TEST(RollupKeeper, ALoadFoldsClosedHoursAsItGoes) {
    tokenradar::testing::TempDb db;
    std::atomic<std::int64_t> clock{kDay0 + kHourUs};  // every hour below still open
    Groups before;
    {
        Kept kept(db.path(), &clock);
        ASSERT_TRUE(eventually([&] { return kept.keeper->loaded(); }));
        // Hours 1 to 5, five clients each.
        std::vector<Measurement> all;
        for (int h = 1; h <= 5; ++h) {
            for (int c = 0; c < 5; ++c) {
                for (Measurement& m : records(10 + c, kDay0 + h * kHourUs + c * kMinuteUs,
                                              "key:" + std::to_string(c)))
                    all.push_back(std::move(m));
            }
        }
        ASSERT_EQ(kept.writer->submit(all).get().value().size(), all.size());
        before = kept.index->query(everything());
        kept.writer->stop();
    }
    // Restart at 8:00: hours 1 to 5 closed; each folds as the next hour's rows begin (the
    // last at the final prune, with the refilled minutes).
    clock = kDay0 + 8 * kHourUs;
    Kept again(db.path(), &clock);
    ASSERT_TRUE(eventually([&] { return again.keeper->loaded(); }));
    EXPECT_EQ(again.index->late_records(), 0u);
    const IndexSize size = again.index->size();
    EXPECT_EQ(size.parts, size.folded);  // no client part left
    EXPECT_GE(size.folded, 5u * 2u);     // 5 hours x providers a and b, and minutes
    expect_same(again.index->query(everything()), before);
    again.writer->stop();
}

// A restart loads only the hours the index keeps (hour_retention): older rows stay in the
// store, unread, and cost no memory.
TEST(RollupKeeper, HoursBeforeTheRetentionStayInTheStore) {
    tokenradar::testing::TempDb db;
    constexpr std::int64_t kLater = kDay0 + 3 * kDayUs;
    std::atomic<std::int64_t> clock{kDay0 + 2 * kHourUs};
    {
        Kept kept(db.path(), &clock);
        ASSERT_TRUE(eventually([&] { return kept.keeper->loaded(); }));
        ASSERT_TRUE(kept.writer->submit(records(10, kDay0 + kHourUs, "key:old")).get());
        clock = kLater + 2 * kHourUs;
        ASSERT_TRUE(kept.writer->submit(records(6, kLater + kHourUs, "key:new")).get());
        kept.writer->stop();
    }
    RollupOptions a_day;
    a_day.hour_retention = 24h;
    Kept again(db.path(), &clock, a_day);
    ASSERT_TRUE(eventually([&] { return again.keeper->loaded(); }));
    Query all = everything();
    all.to_us = kLater + 3 * kHourUs;
    std::uint64_t samples = 0;
    for (const auto& [key, a] : again.index->query(all)) samples += a.samples;
    EXPECT_EQ(samples, 6u);
    EXPECT_EQ(again.index->late_records(), 0u);  // skipped, not refused
    again.writer->stop();
    std::set<std::int64_t> stored_hours;
    auto raw = open(db.path());
    ASSERT_TRUE(
        raw->load_rollups([&](store::RollupRow&& row) { stored_hours.insert(row.hour_us); }));
    EXPECT_EQ(stored_hours, (std::set<std::int64_t>{kDay0 + kHourUs, kLater + kHourUs}));
}

// One observatory node of several writing one ClickHouse database (node ids apart), following
// the table a second behind (another node's insert in flight must land before it is read
// past); stop() saves.
struct ClickHouseNode {
    ClickHouseNode(const std::string& url, int node) {
        RollupKeeperOptions options;
        options.now_us = [] { return kNow; };
        options.follow_lag = 1s;
        options.follow_interval = 0ms;
        keeper = std::make_shared<RollupKeeper>(index, options);
        store::ClickHouseOptions store_options;
        store_options.node = node;
        auto opened = store::ClickHouseStore::open(url, store_options);
        EXPECT_TRUE(opened) << (opened ? "" : opened.error().message);
        store::BatchWriterOptions writer_options;
        writer_options.flush_interval = 10ms;
        writer = std::make_unique<store::BatchWriter>(std::move(*opened), writer_options, keeper);
    }
    [[nodiscard]] std::uint64_t samples() const {
        std::uint64_t n = 0;
        for (const auto& [key, a] : index->query(everything())) n += a.samples;
        return n;
    }
    std::shared_ptr<RollupIndex> index = std::make_shared<RollupIndex>();
    std::shared_ptr<RollupKeeper> keeper;
    std::unique_ptr<store::BatchWriter> writer;
};

// Two nodes on one ClickHouse database each answer for every record, the other's included;
// a third started after them loads the same from the rollups both saved, nothing twice.
TEST(RollupKeeper, NodesOnOneClickHouseDatabaseEachAnswerForEveryRecord) {
    if (!testing::ClickHouseServer::available()) {
        GTEST_SKIP() << testing::ClickHouseServer::skip_reason();
    }
    testing::ClickHouseServer server;
    {
        ClickHouseNode a(server.url(), 1);
        ClickHouseNode b(server.url(), 2);
        ASSERT_TRUE(eventually([&] { return a.keeper->loaded() && b.keeper->loaded(); }));
        ASSERT_TRUE(a.writer->submit(records(10, kDay0 + kHourUs, "key:a")).get());
        ASSERT_TRUE(b.writer->submit(records(6, kDay0 + kHourUs + kMinuteUs, "key:b")).get());
        const auto until = std::chrono::steady_clock::now() + 15s;
        while ((a.samples() != 16 || b.samples() != 16) && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(20ms);
        EXPECT_EQ(a.samples(), 16u);
        EXPECT_EQ(b.samples(), 16u);
        // The index holds no record twice: its own come back only through the table.
        std::this_thread::sleep_for(1500ms);
        EXPECT_EQ(a.samples(), 16u);
        EXPECT_EQ(b.samples(), 16u);
        a.writer->stop();
        b.writer->stop();
    }
    ClickHouseNode c(server.url(), 3);
    ASSERT_TRUE(eventually([&] { return c.keeper->loaded(); }));
    EXPECT_EQ(c.samples(), 16u);
    c.writer->stop();
}

TEST(RollupKeeper, LoadingFillsTheCachesALeaderboardReads) {
    tokenradar::testing::TempDb db;
    {
        auto raw = open(db.path());
        ASSERT_TRUE(raw->insert(records(40, kDay0 + kHourUs)));
    }
    Kept kept(db.path());
    ASSERT_TRUE(eventually([&] { return kept.keeper->loaded(); }));
    // Before any query: only the keeper's warm-up can have filled them.
    EXPECT_GT(kept.index->size().cached, 0u);
    kept.writer->stop();
}

TEST(RollupKeeper, ADamagedRowIsSkippedAndTheRestLoads) {
    tokenradar::testing::TempDb db;
    {
        Kept kept(db.path());
        ASSERT_TRUE(kept.writer->submit(records(10, kDay0 + kHourUs)).get());
        kept.writer->stop();
    }
    {
        auto raw = open(db.path());
        store::RollupRow bad;
        bad.hour_us = kDay0 + 5 * kHourUs;
        bad.labels = {"x", "y", "chat", "gateway", "openai", "", ""};
        bad.aggregate = {1, 2, 3};
        ASSERT_TRUE(raw->save_rollups(std::vector{bad}, raw->last_id().value()));
    }
    Kept again(db.path());
    ASSERT_TRUE(eventually([&] { return again.keeper->loaded(); }));
    std::uint64_t samples = 0;
    for (const auto& [key, a] : again.index->query(everything())) samples += a.samples;
    EXPECT_EQ(samples, 10u);
}

}  // namespace
}  // namespace tokenradar::observatory
