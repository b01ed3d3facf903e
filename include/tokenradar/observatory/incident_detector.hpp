#pragma once
// Latency incidents, sans-IO: fed each evaluation with the recent statistics of every label
// cell (provider, model, upstream region) and a clock value, it compares them with the cell's
// own baseline (the same hour of the week in earlier weeks) and opens or closes incidents.
// No clock, thread or index of its own: IncidentMonitor (incident_monitor.hpp) reads the
// rollups and drives it; tests drive it with generated statistics and a simulated clock.
//
//     IncidentDetector d;
//     d.set_baseline(cell, weeks);                 // when the hour of the week changes
//     auto events = d.evaluate(now_us, recent);    // every 30 s: opened / closed incidents
//
// A statistic (TTFT or TPOT p50 or p95) breaches when it exceeds its baseline median by
// `ratio` (`ratio_p95` for a p95) and by `mad_k` robust deviations (1.4826 x the median absolute
// deviation over the baseline weeks), so a cell whose hour varies a lot from week to week needs a
// bigger rise. The error rate breaches when it exceeds both `error_ratio` x and `error_jump` over
// the baseline's pooled rate with at least `min_errors` errors. A cell fires once it has breached
// at every evaluation for `open_after`; it stops firing after `close_after` without a breach (a
// cell without recent data does not breach). An incident is one provider/model: open while any of
// its cells fires; its cells are the ones that fired.
//
// Threads: none; one caller at a time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::observatory {

// The statistics watched, in this order in CellStats::values; then the error rate.
enum class Watched : std::uint8_t { ttft_p50, ttft_p95, tpot_p50, tpot_p95, error_rate };
inline constexpr std::size_t kLatencyStats = 4;
inline constexpr std::array<std::string_view, 5> kWatchedNames = {
    "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms", "error_rate"};

// One cell over one window (recent minutes, or one baseline hour).
struct CellStats {
    std::uint64_t samples = 0;  // records, ok or not
    std::uint64_t errors = 0;
    // Samples behind the TTFT and the TPOT values (successful, timed records).
    std::uint64_t ttft_samples = 0;
    std::uint64_t tpot_samples = 0;
    // Indexed by Watched (latency only), milliseconds; ignored when their samples are 0.
    std::array<double, kLatencyStats> values{};
};

struct CellRef {
    std::string provider;
    std::string model;
    std::string region;  // upstream region ("" when unset)
    friend auto operator<=>(const CellRef&, const CellRef&) = default;
};

struct DetectorOptions {
    double ratio = 1.5;      // a p50 over its baseline median by at least this...
    double ratio_p95 = 1.8;  // a p95 (fewer samples behind it in a short window: noisier)
    double mad_k = 4;        // ...and by this many robust deviations across the baseline weeks
    std::uint64_t min_samples = 20;             // recent timed samples for a latency verdict
    std::uint64_t min_baseline_samples = 50;    // a baseline week with fewer is left out
    double error_ratio = 3;                     // recent error rate over baseline rate x this...
    double error_jump = 0.05;                   // ...and over baseline rate + this
    std::uint64_t min_errors = 10;              // recent errors for an error verdict
    std::int64_t open_after_us = 60'000'000;    // breaching this long opens
    std::int64_t close_after_us = 300'000'000;  // quiet this long closes
    std::size_t closed_kept = 256;              // closed incidents remembered
};

struct Breach {
    Watched stat = Watched::ttft_p50;
    double recent = 0;
    double baseline = 0;  // the baseline median (the pooled rate for errors)
    double ratio = 0;     // recent / baseline (errors: 0 when the baseline rate is 0)
};

// A cell's baseline as the detector judges against it: per latency statistic the breach
// threshold and the median over the weeks (0 when no week had enough samples), and the
// weeks' pooled error rate.
struct Baseline {
    std::array<double, kLatencyStats> threshold{};
    std::array<double, kLatencyStats> median{};
    double error_rate = 0;
};

// The detector's judgement, pure, for anyone who must judge exactly as it does (the status
// page's hourly strips): the baseline of these weeks (any order; weeks under
// min_baseline_samples are left out), and the breaches of `recent` against `baseline`
// (nullptr: no baseline, so errors alone can breach). `out` is cleared first.
Baseline baseline_of(std::span<const CellStats> weeks, const DetectorOptions& options);
void judge(const CellStats& recent, const Baseline* baseline, const DetectorOptions& options,
           std::vector<Breach>& out);

struct AffectedCell {
    std::string region;
    std::int64_t since_us = 0;     // its first breach of the run that made it fire
    std::vector<Breach> breaches;  // per statistic, the worst seen while it fired
};

struct Incident {
    std::uint64_t id = 0;  // 1, 2, ... in order of opening
    std::string provider;
    std::string model;
    std::int64_t start_us = 0;     // first breach of the first cell that fired
    std::int64_t detected_us = 0;  // the evaluation that opened it
    std::int64_t end_us = -1;      // the evaluation that closed it; -1 while open
    std::vector<AffectedCell> cells;
    // The size: the largest latency ratio any cell reached (0 for errors alone), and the
    // highest error rate.
    double worst_ratio = 0;
    Watched worst_stat = Watched::ttft_p50;
    double worst_error_rate = 0;
};

struct IncidentEvent {
    enum class Kind : std::uint8_t { opened, closed };
    Kind kind = Kind::opened;
    Incident incident;  // as it stands at the event
};

class IncidentDetector {
  public:
    explicit IncidentDetector(DetectorOptions options = {});
    ~IncidentDetector();
    IncidentDetector(IncidentDetector&&) noexcept;
    IncidentDetector& operator=(IncidentDetector&&) noexcept;

    // Replaces the cell's baseline with these weeks' statistics (any order; weeks under
    // min_baseline_samples are left out). A cell without one is judged on errors alone.
    void set_baseline(const CellRef& cell, std::span<const CellStats> weeks);
    void clear_baselines();

    // One evaluation at `now_us` (non-decreasing between calls) over the cells' recent
    // statistics; a cell left out has no recent data. Returns what opened and closed.
    std::vector<IncidentEvent> evaluate(std::int64_t now_us,
                                        std::span<const std::pair<CellRef, CellStats>> recent);

    // Open incidents (oldest first), then closed ones (newest first).
    [[nodiscard]] std::vector<Incident> incidents() const;
    [[nodiscard]] std::size_t open_count() const noexcept;
    [[nodiscard]] const DetectorOptions& options() const noexcept;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

// The baseline's robust statistics of one value over the weeks: median and 1.4826 x MAD.
std::pair<double, double> median_and_spread(std::vector<double> values);

}  // namespace tokenradar::observatory
