#pragma once
// Latency incidents over an observatory's rollups: reads each cell's (provider, model,
// upstream region) recent minutes and its baseline (the same hour of the week in earlier
// weeks) through RollupIndex::query, feeds an IncidentDetector (incident_detector.hpp) and
// answers GET /api/v1/incidents (docs/observatory-api.md).
//
//     IncidentMonitor monitor(index, config);
//     for (const IncidentEvent& e : monitor.evaluate(wall_now_us())) webhooks.push(e);
//
// Baselines are read again when the hour changes (or every 10 minutes, for new cells); an
// evaluation in between costs one minute-resolution query and the detector.
//
// Threads: evaluate() and answer() from any threads (one mutex; evaluate() holds it while it
// queries, answer() while it copies the incidents). Nothing suspends.

#include <tokenradar/core/config.hpp>
#include <tokenradar/observatory/incident_detector.hpp>
#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {

// [incidents] (README "Latency incidents").
struct IncidentConfig {
    bool enabled = false;
    std::chrono::seconds every{30};    // one evaluation per
    std::chrono::seconds window{120};  // the recent minutes compared with the baseline
    int baseline_weeks = 4;
    DetectorOptions detector;
    std::vector<std::string> webhooks;  // http(s) URLs: a JSON POST on open and on close
    std::size_t webhook_queue = 256;    // events waiting for delivery; more are dropped
    int webhook_attempts = 5;           // per event and URL, with backoff from 1 s
};

// Throws ConfigError naming file:line and the key (incidents.<key>).
IncidentConfig load_incident_config(const std::optional<ConfigTable>& table);

// What one cell holds in an aggregate: samples, errors, TTFT and TPOT p50/p95.
CellStats cell_stats(const Aggregate& a);

// An event as the webhooks send it: {"event": "opened"|"closed", "incident": {...}}.
std::string event_json(const IncidentEvent& event);

class IncidentMonitor {
  public:
    IncidentMonitor(const RollupIndex& index, IncidentConfig config);

    // Reads the index as of `now_us` (UTC) and evaluates; returns what opened and closed.
    std::vector<IncidentEvent> evaluate(std::int64_t now_us);

    // GET /api/v1/incidents[?state=open|all&limit=N]: 200 with the list, 400 on a bad
    // parameter.
    [[nodiscard]] ApiResponse answer(std::string_view target, std::int64_t now_us) const;

    // Open incidents (oldest first), then closed ones (newest first): a copy. Incidents live
    // in memory only (a restart forgets them).
    [[nodiscard]] std::vector<Incident> incidents() const;
    [[nodiscard]] std::size_t open_count() const;
    [[nodiscard]] std::uint64_t evaluations() const;
    [[nodiscard]] const IncidentConfig& config() const noexcept { return config_; }

  private:
    void read_baselines(std::int64_t now_us);  // mutex held

    const RollupIndex& index_;
    IncidentConfig config_;
    mutable std::mutex mutex_;
    IncidentDetector detector_;
    std::int64_t baselines_hour_ = -1;
    std::int64_t baselines_read_us_ = -1;
    std::uint64_t evaluations_ = 0;
    std::int64_t last_evaluation_us_ = -1;
};

}  // namespace tokenradar::observatory
