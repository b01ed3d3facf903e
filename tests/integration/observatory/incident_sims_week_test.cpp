// The incident detector over a week of the sims' own model: records drawn by
// sim::HistoryGenerator from the four shipped provider profiles (their peak curves, per-request
// noise and faults), summed by the observatory's Aggregate and judged through cell_stats, as
// IncidentMonitor's rollup queries give them. Issue 31 asks for no false incident over a quiet
// week; incident_detector_test.cpp shows the same with a hand-made noise model, this with the
// model the demo's and the tests' sims run.

#include <tokenradar/observatory/incident_detector.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>
#include <tokenradar/observatory/rollup.hpp>
#include <tokenradar/sim/history.hpp>
#include <tokenradar/sim/profile.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace tokenradar::observatory {
namespace {

constexpr std::int64_t kSecondUs = 1'000'000;
constexpr std::int64_t kHourUs = 3600 * kSecondUs;
constexpr std::int64_t kWeekUs = 7 * 24 * kHourUs;
// IncidentMonitor's defaults: one evaluation every 30 s over the last 2 minutes.
constexpr std::int64_t kEveryUs = 30 * kSecondUs;
constexpr std::size_t kWindowSlots = 4;
constexpr int kBaselineWeeks = 4;
// A Monday 00:00 UTC (2026-11-02).
constexpr std::int64_t kMondayUs = 1'793'577'600LL * kSecondUs;

struct SimCell {
    sim::Profile profile;
    CellRef ref;
};

std::vector<SimCell> shipped_cells() {
    const std::filesystem::path dir = std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "profiles";
    std::vector<SimCell> cells;
    const std::pair<const char*, const char*> shipped[] = {
        {"gpt-4o-like", "gpt-4o"},
        {"claude-3.5-sonnet-like", "claude-3-5-sonnet"},
        {"gemini-1.5-pro-like", "gemini-1.5-pro"},
        {"llama-3-70b-like", "llama-3-70b"}};
    for (const auto& [profile, model] : shipped) {
        cells.push_back(SimCell{sim::load_profile(profile, dir), CellRef{"sim", model, "us-east"}});
    }
    return cells;
}

// Draws a cell's records over [from, to) at 0.5 requests/s (the detector test's rate): short
// streamed chats, so every success has a TTFT and a TPOT.
class Draws {
  public:
    Aggregate draw(const sim::Profile& profile, const CellRef& ref, std::int64_t from_us,
                   std::int64_t to_us) {
        sim::HistoryOptions options;
        options.from_us = from_us;
        options.to_us = to_us;
        options.rate_per_s = 0.5;
        options.seed = ++seed_;
        options.tasks = {sim::HistoryTask{"chat", 20, 80, 0, 40}};
        options.stream_share = 1.0;
        options.labels.provider = ref.provider;
        options.labels.model = ref.model;
        options.labels.upstream_region = ref.region;
        sim::HistoryGenerator generator(profile, options);
        Aggregate out;
        while (generator.next(batch_, 4096) > 0) {
            for (const Measurement& m : batch_) out.add(m);
            batch_.clear();
        }
        records_ += generator.generated();
        return out;
    }
    [[nodiscard]] std::uint64_t records() const { return records_; }

  private:
    std::uint64_t seed_ = 0;
    std::uint64_t records_ = 0;
    std::vector<Measurement> batch_;
};

// A replica of `profile` whose every TTFT part is `factor` times as long (a slowed upstream).
sim::Profile slowed(sim::Profile profile, double factor) {
    profile.ttft.base_ms *= factor;
    profile.ttft.prefill_ms_per_1k_tokens *= factor;
    profile.ttft.noise_median_ms *= factor;
    return profile;
}

// A cell whose recent records come from another (slowed) profile during [from_us, to_us).
struct Slowdown {
    std::size_t cell = 0;
    std::int64_t from_us = 0, to_us = 0;
    sim::Profile profile;
};

// Runs the detector over [from, to) as IncidentMonitor would (`slow` may be null); returns the
// events.
std::vector<IncidentEvent> run(const std::vector<SimCell>& cells, std::int64_t from_us,
                               std::int64_t to_us, const Slowdown* slow, Draws& draws) {
    IncidentDetector detector;
    std::vector<std::deque<Aggregate>> slots(cells.size());
    std::vector<IncidentEvent> events;
    for (std::int64_t t = from_us; t < to_us; t += kEveryUs) {
        if (t == from_us || t % kHourUs == 0) {
            // The same hour in each earlier week (20 of its minutes: enough samples for its
            // percentiles, a third of the drawing time).
            const std::int64_t hour = t - t % kHourUs;
            for (const SimCell& cell : cells) {
                std::vector<CellStats> weeks;
                for (int w = 1; w <= kBaselineWeeks; ++w) {
                    const std::int64_t start = hour - w * kWeekUs;
                    weeks.push_back(cell_stats(
                        draws.draw(cell.profile, cell.ref, start, start + 20 * 60 * kSecondUs)));
                }
                detector.set_baseline(cell.ref, weeks);
            }
        }
        std::vector<std::pair<CellRef, CellStats>> recent;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool slowed_now =
                slow != nullptr && slow->cell == i && t >= slow->from_us && t < slow->to_us;
            slots[i].push_back(draws.draw(slowed_now ? slow->profile : cells[i].profile,
                                          cells[i].ref, t, t + kEveryUs));
            if (slots[i].size() > kWindowSlots) slots[i].pop_front();
            Aggregate window;
            for (const Aggregate& slot : slots[i]) window.merge(slot);
            recent.emplace_back(cells[i].ref, cell_stats(window));
        }
        for (IncidentEvent& e : detector.evaluate(t + kEveryUs, recent)) {
            events.push_back(std::move(e));
        }
    }
    return events;
}

TEST(IncidentDetectorOverTheSims, AQuietWeekOfTheShippedProfilesRaisesNoIncident) {
    Draws draws;
    const std::vector<IncidentEvent> events =
        run(shipped_cells(), kMondayUs, kMondayUs + kWeekUs, nullptr, draws);
    for (const IncidentEvent& e : events) {
        ADD_FAILURE() << "false alarm: " << e.incident.model << " at "
                      << (e.incident.detected_us - kMondayUs) / kSecondUs << " s, "
                      << kWatchedNames[static_cast<std::size_t>(e.incident.worst_stat)] << " x"
                      << e.incident.worst_ratio;
    }
    std::cout << kWeekUs / kEveryUs << " evaluations of 4 cells over " << draws.records()
              << " records\n";
    EXPECT_GT(draws.records(), 4U * 300'000U);  // the week's recent windows at 0.5/s, and more
}

TEST(IncidentDetectorOverTheSims, AReplicaThreeTimesSlowerInAPeakHourOpensWithinThreeMinutes) {
    const std::vector<SimCell> cells = shipped_cells();
    // Tuesday 15:07 to 15:37 UTC, a peak hour: gemini-1.5-pro's TTFT three times as long.
    const std::int64_t begin = kMondayUs + 24 * kHourUs + 15 * kHourUs + 7 * 60 * kSecondUs;
    const Slowdown slow{2, begin, begin + 30 * 60 * kSecondUs, slowed(cells[2].profile, 3)};
    Draws draws;
    const std::vector<IncidentEvent> events =
        run(cells, begin - kHourUs, slow.to_us + kHourUs, &slow, draws);
    ASSERT_EQ(events.size(), 2U);
    const Incident& opened = events[0].incident;
    EXPECT_EQ(events[0].kind, IncidentEvent::Kind::opened);
    EXPECT_EQ(opened.model, "gemini-1.5-pro");
    EXPECT_GE(opened.detected_us, begin);
    EXPECT_LE(opened.detected_us - begin, 180 * kSecondUs);
    std::cout << "detected " << (opened.detected_us - begin) / kSecondUs << " s after the start\n";
    EXPECT_EQ(events[1].kind, IncidentEvent::Kind::closed);
    EXPECT_GE(events[1].incident.end_us, slow.to_us);
    EXPECT_GT(events[1].incident.worst_ratio, 2.0);
}

}  // namespace
}  // namespace tokenradar::observatory
