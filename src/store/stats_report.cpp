#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/text_table.hpp>
#include <tokenradar/core/version.hpp>
#include <tokenradar/store/stats_report.hpp>

#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace tokenradar::store {
namespace {

// A metric column: its heading in the terminal table, in Markdown, in CSV, and its cell.
struct MetricColumn {
    const char* short_name;
    const char* long_name;
    const char* csv_name;
    std::string (*cell)(const stats::RecordSummary&);
};

using S = stats::Summary;
const std::array<MetricColumn, 11> kColumns = {{
    {"requests", "requests", "requests",
     [](const stats::RecordSummary& r) { return std::to_string(r.requests); }},
    {"errors", "errors", "errors",
     [](const stats::RecordSummary& r) { return std::to_string(r.errors); }},
    {"err %", "error rate (%)", "error_rate_pct",
     [](const stats::RecordSummary& r) { return fmt::format("{:.1f}", 100.0 * r.error_rate()); }},
    {"TTFT p50", "median TTFT (ms)", "ttft_p50_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.ttft_ms, &S::p50); }},
    {"TTFT p95", "p95 TTFT (ms)", "ttft_p95_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.ttft_ms, &S::p95); }},
    {"TTFT p95*", "p95 TTFT incl. errors (ms)", "ttft_p95_error_adjusted_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.ttft_adjusted[1]); }},
    {"tok/s p50", "median tokens/s", "decode_tps_p50",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.decode_tps, &S::p50); }},
    {"TPOT p50", "median TPOT (ms)", "tpot_p50_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.tpot_ms, &S::p50); }},
    {"E2E p95", "p95 latency (ms)", "e2e_p95_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.e2e_ms, &S::p95); }},
    {"E2E p95*", "p95 latency incl. errors (ms)", "e2e_p95_error_adjusted_ms",
     [](const stats::RecordSummary& r) { return stats::format_cell(r.e2e_adjusted[1]); }},
    {"N est.", "N estimated", "token_source_estimate",
     [](const stats::RecordSummary& r) { return std::to_string(r.token_source_estimate); }},
}};

TextTable make_table(const StatsReport& report, ReportFormat format) {
    std::vector<TextTable::Column> columns;
    for (Label label : report.by)
        columns.push_back({std::string(label_name(label)), TextTable::Align::left});
    for (const auto& c : kColumns) {
        const char* name = format == ReportFormat::table      ? c.short_name
                           : format == ReportFormat::markdown ? c.long_name
                                                              : c.csv_name;
        columns.push_back({name, TextTable::Align::right});
    }
    TextTable table(std::move(columns));
    for (const auto& group : report.groups) {
        std::vector<std::string> row = group.key;
        for (const auto& c : kColumns) row.push_back(c.cell(group.summary));
        table.add_row(std::move(row));
    }
    return table;
}

std::string render_json(const StatsReport& report) {
    boost::json::object window;
    window["from_ts_us"] = report.from_ts_us;
    window["to_ts_us"] = report.to_ts_us;
    window["from"] = rfc3339_utc(report.from_ts_us);
    window["to"] = rfc3339_utc(report.to_ts_us);
    boost::json::array by;
    for (Label label : report.by) by.emplace_back(label_name(label));
    boost::json::array groups;
    for (const auto& group : report.groups) {
        boost::json::object key;
        for (std::size_t i = 0; i < report.by.size(); ++i)
            key[label_name(report.by[i])] = group.key[i];
        boost::json::object o;
        o["key"] = std::move(key);
        stats::put_json(o, group.summary);
        groups.push_back(std::move(o));
    }
    boost::json::object out;
    out["metrics_spec"] = kMetricsSpec;
    out["window"] = std::move(window);
    out["by"] = std::move(by);
    out["groups"] = std::move(groups);
    return boost::json::serialize(out) + "\n";
}

}  // namespace

Result<std::vector<Label>> parse_labels(std::string_view text) {
    std::vector<Label> out;
    if (text.empty()) return out;
    for (;;) {
        const auto comma = text.find(',');
        const std::string_view name = text.substr(0, comma);
        const std::optional<Label> known = parse_label(name);
        if (!known) {
            return Error(Errc::bad_request,
                         fmt::format("unknown label '{}': expected {}", name, label_names()));
        }
        if (std::find(out.begin(), out.end(), *known) != out.end()) {
            return Error(Errc::bad_request, fmt::format("label '{}' is given twice", name));
        }
        out.push_back(*known);
        if (comma == std::string_view::npos) return out;
        text = text.substr(comma + 1);
    }
}

void GroupSummarizer::add(const Measurement& m) {
    key_.resize(by_.size());
    for (std::size_t i = 0; i < by_.size(); ++i) key_[i].assign(label_value(m.labels, by_[i]));
    auto it = groups_.find(key_);
    if (it == groups_.end()) it = groups_.emplace(key_, stats::RecordSummarizer{}).first;
    it->second.add(m);
}

std::vector<GroupReport> GroupSummarizer::finish() {
    std::vector<GroupReport> out;
    out.reserve(groups_.size());
    for (auto& [key, summarizer] : groups_) out.push_back({key, summarizer.finish()});
    groups_.clear();
    return out;
}

Result<StatsReport> build_stats_report(MeasurementStore& store, std::int64_t from_ts_us,
                                       std::int64_t to_ts_us, std::vector<Label> by) {
    StatsReport report;
    report.from_ts_us = from_ts_us;
    report.to_ts_us = to_ts_us;
    report.by = by;
    GroupSummarizer groups(std::move(by));
    RecordQuery query;
    query.from_ts_us = from_ts_us;
    query.to_ts_us = to_ts_us;
    auto scanned = store.scan(query, [&groups](const Measurement& m) { groups.add(m); });
    if (!scanned) return scanned.error();
    report.groups = groups.finish();
    return report;
}

Result<ReportFormat> parse_report_format(std::string_view text) {
    if (text == "table") return ReportFormat::table;
    if (text == "json") return ReportFormat::json;
    if (text == "csv") return ReportFormat::csv;
    if (text == "markdown") return ReportFormat::markdown;
    return Error(Errc::bad_request,
                 fmt::format("unknown format '{}': expected table, json, csv or markdown", text));
}

std::string render_stats_report(const StatsReport& report, ReportFormat format) {
    switch (format) {
        case ReportFormat::json:
            return render_json(report);
        case ReportFormat::csv:
            return make_table(report, format).render_csv();
        case ReportFormat::markdown:
            return make_table(report, format).render_markdown();
        case ReportFormat::table:
            break;
    }
    std::size_t requests = 0;
    for (const auto& group : report.groups) requests += group.summary.requests;
    std::string out =
        report.from_ts_us <= 0
            ? fmt::format("{} requests up to {}\n", requests, rfc3339_utc(report.to_ts_us))
            : fmt::format("{} requests from {} to {}\n", requests, rfc3339_utc(report.from_ts_us),
                          rfc3339_utc(report.to_ts_us));
    if (report.groups.empty()) return out;
    out += make_table(report, format).render_aligned();
    out +=
        "times in ms, over successful requests; * error-adjusted (failures count as slower than "
        "any success; \"> max\" when the p95 is a failure)\n";
    return out;
}

}  // namespace tokenradar::store
