#include <tokenradar/bench/report.hpp>

#include <tokenradar/core/text_table.hpp>

#include <fmt/format.h>

#include <string>
#include <utility>

namespace tokenradar::bench {
namespace {

using stats::format_cell;

TargetReport make_report(std::string name, stats::RecordSummary summary) {
    TargetReport r;
    static_cast<stats::RecordSummary&>(r) = std::move(summary);
    r.name = std::move(name);
    return r;
}

}  // namespace

TargetReport summarize_target(std::string name, std::span<const Measurement> records) {
    TargetReport r = make_report(std::move(name), stats::summarize_records(records));
    if (!records.empty()) {
        r.api = records.front().labels.api;
        r.model = records.front().labels.model;
    }
    return r;
}

std::vector<TargetReport> summarize_targets(std::span<const std::string> names,
                                            std::span<const Measurement> records) {
    std::vector<TargetReport> reports;
    for (const auto& name : names) {
        stats::RecordSummarizer summarizer;
        const Measurement* first = nullptr;
        for (const auto& m : records) {
            if (m.labels.provider != name) continue;
            if (first == nullptr) first = &m;
            summarizer.add(m);
        }
        reports.push_back(make_report(name, summarizer.finish()));
        if (first != nullptr) {
            reports.back().api = first->labels.api;
            reports.back().model = first->labels.model;
        }
    }
    return reports;
}

std::string render_table(std::span<const TargetReport> reports) {
    std::string out;
    for (const auto& r : reports) {
        std::string failures;
        for (const auto& [status, count] : r.statuses) {
            failures += fmt::format("{}{} x{}", failures.empty() ? ": " : ", ", status, count);
        }
        fmt::format_to(std::back_inserter(out), "{} ({} {})  requests {}  errors {} ({:.1f}%{})\n",
                       r.name, r.api, r.model, r.requests, r.errors, 100.0 * r.error_rate(),
                       failures);
        fmt::format_to(std::back_inserter(out), "  {:<22}{:>10}{:>10}{:>10}{:>10}{:>8}\n", "",
                       "p50", "p90", "p95", "p99", "n");
        const auto row = [&](std::string_view label, const std::optional<stats::Summary>& s) {
            fmt::format_to(std::back_inserter(out), "  {:<22}{:>10}{:>10}{:>10}{:>10}{:>8}\n",
                           label, format_cell(s, &stats::Summary::p50),
                           format_cell(s, &stats::Summary::p90),
                           format_cell(s, &stats::Summary::p95),
                           format_cell(s, &stats::Summary::p99), s ? s->count : 0);
        };
        if (!r.extra_body.empty())
            fmt::format_to(std::back_inserter(out), "  extra body {}\n", r.extra_body);
        row("TTFT ms", r.ttft_ms);
        row("TTFT (scheduled) ms", r.ttft_sched_ms);
        row("TTFAT ms", r.ttfat_ms);
        row("TTFB ms", r.ttfb_ms);
        row("TPOT ms", r.tpot_ms);
        row("decode tokens/s", r.decode_tps);
        row("E2E ms", r.e2e_ms);
        row("E2E@500 ms", r.e2e500_ms);
        row("tokens/chunk", r.tokens_per_chunk);
        row("max chunk gap ms", r.chunk_gap_max_ms);
        fmt::format_to(
            std::back_inserter(out),
            "  error-adjusted         TTFT p50 {}  p95 {}  p99 {}   E2E p50 {}  p95 {}  p99 {}\n",
            format_cell(r.ttft_adjusted[0]), format_cell(r.ttft_adjusted[1]),
            format_cell(r.ttft_adjusted[2]), format_cell(r.e2e_adjusted[0]),
            format_cell(r.e2e_adjusted[1]), format_cell(r.e2e_adjusted[2]));
        fmt::format_to(std::back_inserter(out),
                       "  cached prompt tokens {:.1f}%   token source: usage {}, estimate {}   "
                       "send lag after due time p99 {} ms\n\n",
                       100.0 * r.cached_share(), r.token_source_usage, r.token_source_estimate,
                       format_cell(r.sched_lag_ms, &stats::Summary::p99));
    }
    return out;
}

std::string render_markdown(std::span<const TargetReport> reports) {
    using Align = TextTable::Align;
    TextTable table({{"provider", Align::left},
                     {"model", Align::left},
                     {"median TTFT (ms)"},
                     {"median tokens/s"},
                     {"p95 latency (ms)"},
                     {"requests"},
                     {"errors"},
                     {"N estimated"}});
    for (const auto& r : reports) {
        table.add_row({r.name, r.model, format_cell(r.ttft_ms, &stats::Summary::p50),
                       format_cell(r.decode_tps, &stats::Summary::p50),
                       format_cell(r.e2e_ms, &stats::Summary::p95), std::to_string(r.requests),
                       std::to_string(r.errors), std::to_string(r.token_source_estimate)});
    }
    return table.render_markdown();
}

std::string render_csv(std::span<const TargetReport> reports) {
    std::vector<TextTable::Column> columns;
    for (const char* name :
         {"target", "api", "model", "requests", "errors", "ttft_p50_ms", "ttft_p95_ms",
          "ttft_p99_ms", "ttfat_p50_ms", "decode_tps_p50", "tpot_p50_ms", "tpot_p99_ms",
          "e2e_p50_ms", "e2e_p95_ms", "e2e500_p95_ms", "tokens_per_chunk_p50", "cached_share",
          "token_source_estimate", "extra_body"}) {
        columns.push_back({name});
    }
    TextTable table(std::move(columns));
    using S = stats::Summary;
    for (const auto& r : reports) {
        table.add_row({r.name, r.api, r.model, std::to_string(r.requests), std::to_string(r.errors),
                       format_cell(r.ttft_ms, &S::p50), format_cell(r.ttft_ms, &S::p95),
                       format_cell(r.ttft_ms, &S::p99), format_cell(r.ttfat_ms, &S::p50),
                       format_cell(r.decode_tps, &S::p50), format_cell(r.tpot_ms, &S::p50),
                       format_cell(r.tpot_ms, &S::p99), format_cell(r.e2e_ms, &S::p50),
                       format_cell(r.e2e_ms, &S::p95), format_cell(r.e2e500_ms, &S::p95),
                       format_cell(r.tokens_per_chunk, &S::p50),
                       fmt::format("{:.4f}", r.cached_share()),
                       std::to_string(r.token_source_estimate), r.extra_body});
    }
    return table.render_csv();
}

boost::json::object to_json(const TargetReport& r) {
    boost::json::object o;
    o["name"] = r.name;
    o["api"] = r.api;
    o["model"] = r.model;
    stats::put_json(o, r);
    return o;
}

}  // namespace tokenradar::bench
