#pragma once
// Turning one run's records into the tables people read and the summary machines read.
// Percentiles are exact (all samples sorted); failures are counted in every table and in
// the error-adjusted percentiles (metrics.md "Failures").

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/stats/record_summary.hpp>

#include <boost/json/object.hpp>

#include <span>
#include <string>
#include <vector>

namespace tokenradar::bench {

// One target's summary (stats::RecordSummary) under the target's name, API and model.
struct TargetReport : stats::RecordSummary {
    std::string name;
    std::string api;
    std::string model;
    // The extra body fields its requests carried, as compact JSON ("" when none); the
    // caller fills it in (extra_body.hpp).
    std::string extra_body;
};

TargetReport summarize_target(std::string name, std::span<const Measurement> records);

// One report per name, in the given order, over the records whose `provider` label is that
// name (bench labels each record with its target's name).
std::vector<TargetReport> summarize_targets(std::span<const std::string> names,
                                            std::span<const Measurement> records);

// The terminal table: one block per target.
std::string render_table(std::span<const TargetReport> reports);
// The published comparison's columns: provider, model, median TTFT (ms), median tokens/s,
// p95 latency (E2E p95, ms), plus sample and error counts.
std::string render_markdown(std::span<const TargetReport> reports);
// One row per target, a header line first; the last column is `extra_body`.
std::string render_csv(std::span<const TargetReport> reports);
// The summary object of one target: name, requests, errors, and ttft_ms, tpot_ms,
// decode_tps, e2e_ms, e2e500_ms objects with p50, p90, p95, p99 (and count).
boost::json::object to_json(const TargetReport& r);

}  // namespace tokenradar::bench
