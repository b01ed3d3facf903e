#pragma once
// GET /api/v1/status (docs/observatory-api.md): per provider/model, one state per hour of the
// last day or week (green, amber, red, none) for a status page's strips. Pure: the two
// queries to ask the index, then the body from their groups and the incidents; no index,
// clock or lock of its own.
//
// A bucket is red when an incident of that model overlapped it; else amber when its TTFT or
// TPOT p50 breaches the baseline (the same hour of the week in up to `baseline_weeks` earlier
// weeks) or its error rate breaches, judged by the IncidentDetector's own judge() and
// baseline_of(); green with enough samples and no breach; none with too few.

#include "query_params.hpp"

#include <tokenradar/observatory/incident_detector.hpp>
#include <tokenradar/observatory/query_api.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <cstdint>
#include <span>
#include <string>

namespace tokenradar::observatory {

// The two hour-resolution queries behind one answer: the window's buckets (oldest first, the
// current partial hour last) and the baseline hours of earlier weeks, both by provider, model
// and bucket, all regions merged.
struct StatusPlan {
    Query window;
    Query baselines;
    std::int64_t first_bucket_us = 0;
    std::size_t buckets = 0;  // 24 or 168
};

StatusPlan plan_status(const ApiRequest& req, std::int64_t now_us, int baseline_weeks);

// The body without generated_at. `incidents` are the monitor's (any order; none when it is
// off), `incidents_enabled` whether there is a monitor; an open incident ends at `now_us`.
std::string render_status(const ApiRequest& req, const StatusPlan& plan, const Groups& window,
                          const Groups& baselines, std::span<const Incident> incidents,
                          bool incidents_enabled, const StatusJudgement& judgement,
                          std::int64_t now_us);

}  // namespace tokenradar::observatory
