#pragma once
// The report of `tokenradar stats`: stored records of a time window grouped by any of the
// metrics.md labels, each group summarised like one bench target (stats::RecordSummary:
// requests, error rate, percentiles over successful requests, error-adjusted p95, how many
// token counts were estimates), rendered as a table, Markdown, CSV or JSON.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/stats/record_summary.hpp>
#include <tokenradar/store/measurement_store.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::store {

// The labels of metrics.md, from core's table (label_name, label_value).
using ::tokenradar::Label;

// "provider,model,task" -> labels, in that order. An unknown or repeated name is an error that
// names it and lists the known ones.
Result<std::vector<Label>> parse_labels(std::string_view comma_separated);

struct GroupReport {
    std::vector<std::string> key;  // one value per grouping label
    stats::RecordSummary summary;
};

// Groups records by their label values and summarises each group; groups come out sorted by
// key. Keeps only derived numbers per record (stats::RecordSummarizer). Not thread-safe.
class GroupSummarizer {
  public:
    explicit GroupSummarizer(std::vector<Label> by) : by_(std::move(by)) {}
    void add(const Measurement& m);
    std::vector<GroupReport> finish();

  private:
    std::vector<Label> by_;
    std::map<std::vector<std::string>, stats::RecordSummarizer> groups_;
    std::vector<std::string> key_;  // reused per record
};

struct StatsReport {
    std::int64_t from_ts_us = 0;  // window, [from, to)
    std::int64_t to_ts_us = 0;
    std::vector<Label> by;
    std::vector<GroupReport> groups;
};

// Reads the window's records from the store (streaming, blocks on disk I/O) and groups them.
Result<StatsReport> build_stats_report(MeasurementStore& store, std::int64_t from_ts_us,
                                       std::int64_t to_ts_us, std::vector<Label> by);

enum class ReportFormat { table, json, csv, markdown };
// "table", "json", "csv" or "markdown"; the error names the value and lists those.
Result<ReportFormat> parse_report_format(std::string_view text);

// One row per group: the label values, requests, errors, error rate, TTFT p50/p95 and
// error-adjusted p95, decode tokens/s p50, TPOT p50, E2E p95 and error-adjusted p95, and the
// number of estimated token counts. `table` adds the window above and a legend below;
// `json` is {metrics_spec, window, by, groups: [{key: {label: value}, ...summary}]}.
std::string render_stats_report(const StatsReport& report, ReportFormat format);

}  // namespace tokenradar::store
