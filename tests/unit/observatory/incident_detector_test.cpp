#include <tokenradar/observatory/incident_detector.hpp>

#include <tokenradar/stats/percentiles.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

namespace tokenradar::observatory {
namespace {

constexpr std::int64_t kSecondUs = 1'000'000;
constexpr std::int64_t kSlotUs = 30 * kSecondUs;  // one evaluation every 30 s
constexpr std::int64_t kHourUs = 3600 * kSecondUs;
constexpr std::int64_t kWeekUs = 7 * 24 * kHourUs;
constexpr std::size_t kWindowSlots = 4;  // the recent window: the last 2 minutes

// A simulated provider cell with ordinary noise: per request lognormal TTFT and TPOT, a
// per-minute level (sigma 8%), a week-to-week drift (sigma 4%), peak hours (x1.3 from 14:00 to
// 22:00 UTC on weekdays, as the sims' profiles do) and 1% errors, at `rate` requests/s.
struct SimCell {
    CellRef ref;
    double ttft_ms = 400;
    double tpot_ms = 25;
    double rate = 0.5;
    double error_rate = 0.01;
};

double peak(std::int64_t t_us) {
    const std::int64_t hour_of_week = (t_us / kHourUs) % (7 * 24);
    const std::int64_t day = hour_of_week / 24, hour = hour_of_week % 24;
    return day < 5 && hour >= 14 && hour < 22 ? 1.3 : 1.0;
}

struct Samples {
    std::vector<double> ttft, tpot;
    std::uint64_t samples = 0, errors = 0;
    void append(const Samples& o) {
        ttft.insert(ttft.end(), o.ttft.begin(), o.ttft.end());
        tpot.insert(tpot.end(), o.tpot.begin(), o.tpot.end());
        samples += o.samples;
        errors += o.errors;
    }
};

class Generator {
  public:
    explicit Generator(std::uint64_t seed) : rng_(seed) {}

    // `count` requests of one cell at time t with extra TTFT/TPOT factors.
    Samples draw(const SimCell& c, std::int64_t t_us, std::size_t count, double level,
                 double ttft_factor = 1, double tpot_factor = 1) {
        Samples s;
        std::lognormal_distribution<double> ttft_noise(0, 0.35), tpot_noise(0, 0.2);
        std::bernoulli_distribution fails(c.error_rate);
        const double f = peak(t_us) * level;
        for (std::size_t i = 0; i < count; ++i) {
            ++s.samples;
            if (fails(rng_)) {
                ++s.errors;
                continue;
            }
            s.ttft.push_back(c.ttft_ms * f * ttft_factor * ttft_noise(rng_));
            s.tpot.push_back(c.tpot_ms * f * tpot_factor * tpot_noise(rng_));
        }
        return s;
    }
    double level(double sigma) { return std::lognormal_distribution<double>(0, sigma)(rng_); }
    std::size_t poisson(double mean) { return std::poisson_distribution<std::size_t>(mean)(rng_); }

  private:
    std::mt19937_64 rng_;
};

CellStats stats_of(Samples s) {
    CellStats out;
    out.samples = s.samples;
    out.errors = s.errors;
    if (auto t = stats::summarize(std::move(s.ttft))) {
        out.ttft_samples = t->count;
        out.values[0] = t->p50;
        out.values[1] = t->p95;
    }
    if (auto t = stats::summarize(std::move(s.tpot))) {
        out.tpot_samples = t->count;
        out.values[2] = t->p50;
        out.values[3] = t->p95;
    }
    return out;
}

// Feeds a detector week by week: baselines from the four weeks before each hour, recent windows
// from 30 s slots. `slow` gives a cell's TTFT and TPOT factors at a time (1, 1 when quiet).
class Simulation {
  public:
    Simulation(std::vector<SimCell> cells, std::uint64_t seed)
        : cells_(std::move(cells)), gen_(seed) {}

    // Four earlier weeks of one hour of the week, as the rollups would give them (20 of its
    // minutes: enough samples for its percentiles, a third of the generator's time).
    void set_baselines(IncidentDetector& d, std::int64_t hour_start_us) {
        for (const SimCell& c : cells_) {
            std::vector<CellStats> weeks;
            for (int w = 1; w <= 4; ++w) {
                const std::int64_t t = hour_start_us - w * kWeekUs;
                const double drift = gen_.level(0.04);
                Samples hour;
                for (int minute = 0; minute < 20; ++minute) {
                    hour.append(
                        gen_.draw(c, t, gen_.poisson(c.rate * 60), drift * gen_.level(0.08)));
                }
                weeks.push_back(stats_of(std::move(hour)));
            }
            d.set_baseline(c.ref, weeks);
        }
    }

    using Slowdown = std::function<std::pair<double, double>(const CellRef&, std::int64_t)>;

    // Runs [from, to) and calls `on_event` for every event.
    void run(IncidentDetector& d, std::int64_t from_us, std::int64_t to_us, const Slowdown& slow,
             const std::function<void(const IncidentEvent&)>& on_event) {
        std::vector<std::vector<Samples>> slots(cells_.size());
        std::vector<double> minute_level(cells_.size(), 1.0);
        std::int64_t hour = -1;
        for (std::int64_t t = from_us; t < to_us; t += kSlotUs) {
            if (t / kHourUs != hour) {
                hour = t / kHourUs;
                set_baselines(d, hour * kHourUs);
            }
            std::vector<std::pair<CellRef, CellStats>> recent;
            for (std::size_t i = 0; i < cells_.size(); ++i) {
                const SimCell& c = cells_[i];
                if (t % (60 * kSecondUs) == 0) minute_level[i] = gen_.level(0.08);
                const auto [ttft, tpot] = slow ? slow(c.ref, t) : std::pair{1.0, 1.0};
                slots[i].push_back(
                    gen_.draw(c, t, gen_.poisson(c.rate * 30), minute_level[i], ttft, tpot));
                if (slots[i].size() > kWindowSlots) slots[i].erase(slots[i].begin());
                Samples window;
                for (const Samples& s : slots[i]) window.append(s);
                recent.emplace_back(c.ref, stats_of(std::move(window)));
            }
            for (const IncidentEvent& e : d.evaluate(t + kSlotUs, recent)) on_event(e);
        }
    }

  private:
    std::vector<SimCell> cells_;
    Generator gen_;
};

std::vector<SimCell> eight_cells() {
    std::vector<SimCell> cells;
    const char* models[] = {"gpt-4o", "claude-3-5-sonnet", "gemini-1.5-pro", "llama-3-70b"};
    const double ttft[] = {280, 310, 620, 410};
    const double tpot[] = {24, 26, 34, 28};
    for (int m = 0; m < 4; ++m) {
        for (const char* region : {"us-east", "eu-west"}) {
            cells.push_back(
                SimCell{CellRef{"sim", models[m], region}, ttft[m], tpot[m], 0.5, 0.01});
        }
    }
    return cells;
}

// A Monday 00:00 UTC (2026-11-02) plus four weeks of history before it.
constexpr std::int64_t kMondayUs = 1'793'577'600LL * kSecondUs;

TEST(IncidentDetector, QuietWeekWithOrdinaryNoiseRaisesNoIncident) {
    IncidentDetector detector;
    Simulation sim(eight_cells(), 42);
    std::size_t opened = 0;
    sim.run(detector, kMondayUs, kMondayUs + kWeekUs, {}, [&](const IncidentEvent& e) {
        if (e.kind == IncidentEvent::Kind::opened) {
            ++opened;
            ADD_FAILURE() << "false alarm: " << e.incident.model << " at "
                          << (e.incident.detected_us - kMondayUs) / kSecondUs << " s, "
                          << kWatchedNames[static_cast<std::size_t>(e.incident.worst_stat)] << " x"
                          << e.incident.worst_ratio;
        }
    });
    // 8 cells x 20,160 evaluations.
    EXPECT_EQ(opened, 0U);
}

struct SlowCase {
    double ttft_factor;
    double tpot_factor;
    Watched expected;
};

class IncidentDetectorSlowdown : public ::testing::TestWithParam<SlowCase> {};

TEST_P(IncidentDetectorSlowdown, OpensWithinThreeMinutesAndClosesWhenItEnds) {
    const SlowCase param = GetParam();
    IncidentDetector detector;
    Simulation sim(eight_cells(), 7);
    // Tuesday 15:07:00 (a peak hour) to 15:37:00 UTC: gpt-4o in eu-west only.
    const std::int64_t begin = kMondayUs + 24 * kHourUs + 15 * kHourUs + 7 * 60 * kSecondUs;
    const std::int64_t end = begin + 30 * 60 * kSecondUs;
    const CellRef slow{"sim", "gpt-4o", "eu-west"};
    std::vector<IncidentEvent> events;
    sim.run(
        detector, begin - 2 * kHourUs, end + kHourUs,
        [&](const CellRef& ref, std::int64_t t) {
            return ref == slow && t >= begin && t < end
                       ? std::pair{param.ttft_factor, param.tpot_factor}
                       : std::pair{1.0, 1.0};
        },
        [&](const IncidentEvent& e) { events.push_back(e); });
    ASSERT_EQ(events.size(), 2U);
    const Incident& opened = events[0].incident;
    EXPECT_EQ(events[0].kind, IncidentEvent::Kind::opened);
    EXPECT_EQ(opened.model, "gpt-4o");
    EXPECT_GE(opened.detected_us, begin);
    EXPECT_LE(opened.detected_us - begin, 180 * kSecondUs);
    std::cout << "detected " << (opened.detected_us - begin) / kSecondUs << " s after the start\n";
    ASSERT_EQ(opened.cells.size(), 1U);
    EXPECT_EQ(opened.cells[0].region, "eu-west");
    EXPECT_EQ(opened.worst_stat == Watched::ttft_p50 || opened.worst_stat == Watched::ttft_p95,
              param.expected == Watched::ttft_p50);
    const Incident& closed = events[1].incident;
    EXPECT_EQ(events[1].kind, IncidentEvent::Kind::closed);
    EXPECT_EQ(closed.id, opened.id);
    EXPECT_GE(closed.end_us, end);
    // Quiet for close_after, plus the window's 2 minutes to forget the slow samples.
    EXPECT_LE(closed.end_us - end, 8 * 60 * kSecondUs);
    EXPECT_GT(closed.worst_ratio, 2.0);
}

INSTANTIATE_TEST_SUITE_P(ThreeFold, IncidentDetectorSlowdown,
                         ::testing::Values(SlowCase{3, 1, Watched::ttft_p50},
                                           SlowCase{1, 3, Watched::tpot_p50}));

CellStats steady(double ttft, double tpot, std::uint64_t samples, std::uint64_t errors = 0) {
    CellStats s;
    s.samples = samples;
    s.errors = errors;
    s.ttft_samples = s.tpot_samples = samples - errors;
    s.values = {ttft, ttft * 1.8, tpot, tpot * 1.5};
    return s;
}

TEST(IncidentDetector, ErrorJumpOpensWithoutALatencyBaseline) {
    IncidentDetector detector;
    const CellRef cell{"p", "m", "r"};
    std::vector<std::pair<CellRef, CellStats>> recent = {{cell, steady(100, 10, 100, 30)}};
    EXPECT_TRUE(detector.evaluate(0, recent).empty());
    EXPECT_TRUE(detector.evaluate(30 * kSecondUs, recent).empty());
    const auto events = detector.evaluate(60 * kSecondUs, recent);
    ASSERT_EQ(events.size(), 1U);
    ASSERT_EQ(events[0].incident.cells.size(), 1U);
    ASSERT_EQ(events[0].incident.cells[0].breaches.size(), 1U);
    EXPECT_EQ(events[0].incident.cells[0].breaches[0].stat, Watched::error_rate);
    EXPECT_DOUBLE_EQ(events[0].incident.worst_error_rate, 0.3);
    EXPECT_EQ(events[0].incident.start_us, 0);
}

TEST(IncidentDetector, ABaselineWithTheSameErrorsKeepsQuiet) {
    IncidentDetector detector;
    const CellRef cell{"p", "m", "r"};
    const std::vector<CellStats> weeks(4, steady(100, 10, 1000, 250));
    detector.set_baseline(cell, weeks);
    std::vector<std::pair<CellRef, CellStats>> recent = {{cell, steady(100, 10, 100, 30)}};
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(detector.evaluate(i * kSlotUs, recent).empty());
}

TEST(IncidentDetector, ABreachShorterThanOpenAfterOpensNothing) {
    IncidentDetector detector;
    const CellRef cell{"p", "m", "r"};
    const std::vector<CellStats> weeks(3, steady(100, 10, 1000));
    detector.set_baseline(cell, weeks);
    const std::vector<std::pair<CellRef, CellStats>> slow = {{cell, steady(400, 10, 100)}};
    const std::vector<std::pair<CellRef, CellStats>> calm = {{cell, steady(100, 10, 100)}};
    EXPECT_TRUE(detector.evaluate(0, slow).empty());
    EXPECT_TRUE(detector.evaluate(30 * kSecondUs, slow).empty());
    EXPECT_TRUE(detector.evaluate(60 * kSecondUs, calm).empty());
    EXPECT_TRUE(detector.evaluate(90 * kSecondUs, slow).empty());
    EXPECT_TRUE(detector.evaluate(120 * kSecondUs, slow).empty());
    EXPECT_EQ(detector.evaluate(150 * kSecondUs, slow).size(), 1U);  // 60 s from 90 s
    EXPECT_EQ(detector.open_count(), 1U);
}

TEST(IncidentDetector, TooFewSamplesAreNoVerdict) {
    IncidentDetector detector;
    const CellRef cell{"p", "m", "r"};
    const std::vector<CellStats> weeks(3, steady(100, 10, 1000));
    detector.set_baseline(cell, weeks);
    const std::vector<std::pair<CellRef, CellStats>> slow = {{cell, steady(400, 40, 19)}};
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(detector.evaluate(i * kSlotUs, slow).empty());
}

TEST(IncidentDetector, OneIncidentPerModelListsItsRegionsAndClosesWhenDataStop) {
    IncidentDetector detector;
    const CellRef east{"p", "m", "east"}, west{"p", "m", "west"}, other{"p", "n", "east"};
    const std::vector<CellStats> weeks(3, steady(100, 10, 1000));
    for (const CellRef& c : {east, west, other}) detector.set_baseline(c, weeks);
    const std::vector<std::pair<CellRef, CellStats>> slow = {
        {east, steady(300, 10, 100)}, {west, steady(100, 40, 100)}, {other, steady(100, 10, 100)}};
    std::vector<IncidentEvent> events;
    for (int i = 0; i <= 4; ++i) {
        for (auto& e : detector.evaluate(i * kSlotUs, slow)) events.push_back(std::move(e));
    }
    ASSERT_EQ(events.size(), 1U);
    const auto incidents = detector.incidents();
    ASSERT_EQ(incidents.size(), 1U);
    EXPECT_EQ(incidents[0].model, "m");
    ASSERT_EQ(incidents[0].cells.size(), 2U);
    EXPECT_EQ(incidents[0].worst_stat, Watched::tpot_p50);  // west's 40 / 10
    EXPECT_DOUBLE_EQ(incidents[0].worst_ratio, 4.0);
    // No data at all from then on: quiet, so it closes after close_after.
    const std::int64_t last = 4 * kSlotUs;
    EXPECT_TRUE(detector.evaluate(last + 299 * kSecondUs, {}).empty());
    const auto closed = detector.evaluate(last + 300 * kSecondUs, {});
    ASSERT_EQ(closed.size(), 1U);
    EXPECT_EQ(closed[0].kind, IncidentEvent::Kind::closed);
    EXPECT_EQ(detector.open_count(), 0U);
    EXPECT_EQ(detector.incidents()[0].end_us, last + 300 * kSecondUs);
}

TEST(IncidentDetector, AVariableBaselineNeedsABiggerRise) {
    const auto [median, spread] = median_and_spread({100, 110, 90, 200, 105});
    EXPECT_DOUBLE_EQ(median, 105);
    EXPECT_DOUBLE_EQ(spread, 1.4826 * 5);  // deviations 5, 5, 15, 95, 0: median 5
    IncidentDetector detector;
    const CellRef cell{"p", "m", "r"};
    std::vector<CellStats> weeks;
    for (double v : {100.0, 160.0, 60.0, 140.0}) weeks.push_back(steady(v, 10, 1000));
    detector.set_baseline(cell, weeks);
    // median 120, MAD 30: threshold 120 + 4 x 44.5 = 297.9 > 1.5 x 120.
    const std::vector<std::pair<CellRef, CellStats>> rise = {{cell, steady(250, 10, 100)}};
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(detector.evaluate(i * kSlotUs, rise).empty());
}

}  // namespace
}  // namespace tokenradar::observatory
