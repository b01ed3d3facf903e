#include <tokenradar/bench/report.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tokenradar::bench {
namespace {

constexpr std::array<double, 3> kAdjustedQuantiles = {0.50, 0.95, 0.99};

std::optional<stats::Summary> summarize_field(std::span<const Measurement> records,
                                              std::optional<double> Derived::*field) {
    std::vector<double> values;
    values.reserve(records.size());
    for (const auto& m : records) {
        if (!m.ok()) continue;
        if (auto v = derive(m).*field) values.push_back(*v);
    }
    return stats::summarize(std::move(values));
}

std::array<stats::AdjustedPercentile, 3> adjusted(std::span<const Measurement> records,
                                                  std::optional<double> Derived::*field) {
    std::vector<double> ok;
    std::size_t failures = 0;
    for (const auto& m : records) {
        if (!m.ok()) {
            ++failures;
        } else if (auto v = derive(m).*field) {
            ok.push_back(*v);  // a success without this metric (no stream, no token) is left out
        }
    }
    std::sort(ok.begin(), ok.end());
    std::array<stats::AdjustedPercentile, 3> out;
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = stats::error_adjusted_percentile(ok, failures, kAdjustedQuantiles[i]);
    }
    return out;
}

std::string cell(const std::optional<stats::Summary>& s, double stats::Summary::*field) {
    return s ? fmt::format("{:.1f}", (*s).*field) : std::string("-");
}

std::string cell(const stats::AdjustedPercentile& p) {
    if (p.above_max) return "> max";
    return p.value ? fmt::format("{:.1f}", *p.value) : std::string("-");
}

void put_summary(boost::json::object& o, std::string_view key, const std::optional<stats::Summary>& s) {
    boost::json::object v;
    if (s) {
        v["count"] = s->count;
        v["p50"] = s->p50;
        v["p90"] = s->p90;
        v["p95"] = s->p95;
        v["p99"] = s->p99;
        v["min"] = s->min;
        v["max"] = s->max;
        v["mean"] = s->mean;
    } else {
        v["count"] = 0;
        for (auto k : {"p50", "p90", "p95", "p99"}) v[k] = nullptr;
    }
    o[key] = std::move(v);
}

boost::json::value adjusted_json(const stats::AdjustedPercentile& p) {
    if (p.above_max) return "> max";
    if (p.value) return *p.value;
    return nullptr;
}

}  // namespace

TargetReport summarize_target(std::string name, std::span<const Measurement> records) {
    TargetReport r;
    r.name = std::move(name);
    if (!records.empty()) {
        r.api = records.front().labels.api;
        r.model = records.front().labels.model;
    }
    r.requests = records.size();
    std::vector<double> lag_ms;
    for (const auto& m : records) {
        if (!m.ok()) {
            ++r.errors;
            ++r.statuses[m.status];
        } else {
            r.prompt_tokens += m.prompt_tokens.value_or(0);
            r.cached_prompt_tokens += m.cached_prompt_tokens.value_or(0);
            (m.token_source == TokenSource::usage ? r.token_source_usage : r.token_source_estimate)++;
        }
        lag_ms.push_back(static_cast<double>(m.t.send - m.t.sched) / 1e6);
    }
    r.sched_lag_ms = stats::summarize(std::move(lag_ms));
    r.ttft_ms = summarize_field(records, &Derived::ttft_ms);
    r.ttft_sched_ms = summarize_field(records, &Derived::ttft_sched_ms);
    r.ttfat_ms = summarize_field(records, &Derived::ttfat_ms);
    r.ttfb_ms = summarize_field(records, &Derived::ttfb_ms);
    r.tpot_ms = summarize_field(records, &Derived::tpot_ms);
    r.decode_tps = summarize_field(records, &Derived::decode_tps);
    r.e2e_ms = summarize_field(records, &Derived::e2e_ms);
    r.e2e500_ms = summarize_field(records, &Derived::e2e500_ms);
    r.tokens_per_chunk = summarize_field(records, &Derived::tokens_per_chunk);
    std::vector<double> gap_max;
    for (const auto& m : records) {
        if (m.ok() && m.chunk_gap_max_ns) gap_max.push_back(static_cast<double>(*m.chunk_gap_max_ns) / 1e6);
    }
    r.chunk_gap_max_ms = stats::summarize(std::move(gap_max));
    r.ttft_adjusted = adjusted(records, &Derived::ttft_ms);
    r.e2e_adjusted = adjusted(records, &Derived::e2e_ms);
    return r;
}

std::vector<TargetReport> summarize_targets(std::span<const std::string> names,
                                            std::span<const Measurement> records) {
    std::vector<TargetReport> reports;
    for (const auto& name : names) {
        std::vector<Measurement> mine;
        for (const auto& m : records) {
            if (m.labels.provider == name) mine.push_back(m);
        }
        reports.push_back(summarize_target(name, mine));
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
                       r.name, r.api, r.model, r.requests, r.errors, 100.0 * r.error_rate(), failures);
        fmt::format_to(std::back_inserter(out), "  {:<22}{:>10}{:>10}{:>10}{:>10}{:>8}\n", "", "p50",
                       "p90", "p95", "p99", "n");
        const auto row = [&](std::string_view label, const std::optional<stats::Summary>& s) {
            fmt::format_to(std::back_inserter(out), "  {:<22}{:>10}{:>10}{:>10}{:>10}{:>8}\n", label,
                           cell(s, &stats::Summary::p50), cell(s, &stats::Summary::p90),
                           cell(s, &stats::Summary::p95), cell(s, &stats::Summary::p99),
                           s ? s->count : 0);
        };
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
        fmt::format_to(std::back_inserter(out),
                       "  error-adjusted         TTFT p50 {}  p95 {}  p99 {}   E2E p50 {}  p95 {}  p99 {}\n",
                       cell(r.ttft_adjusted[0]), cell(r.ttft_adjusted[1]), cell(r.ttft_adjusted[2]),
                       cell(r.e2e_adjusted[0]), cell(r.e2e_adjusted[1]), cell(r.e2e_adjusted[2]));
        fmt::format_to(std::back_inserter(out),
                       "  cached prompt tokens {:.1f}%   token source: usage {}, estimate {}   "
                       "send lag after due time p99 {} ms\n\n",
                       100.0 * r.cached_share(), r.token_source_usage, r.token_source_estimate,
                       cell(r.sched_lag_ms, &stats::Summary::p99));
    }
    return out;
}

std::string render_markdown(std::span<const TargetReport> reports) {
    std::string out =
        "| provider | model | median TTFT (ms) | median tokens/s | p95 latency (ms) | requests | errors "
        "| N estimated |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    for (const auto& r : reports) {
        fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.name,
                       r.model, cell(r.ttft_ms, &stats::Summary::p50),
                       cell(r.decode_tps, &stats::Summary::p50), cell(r.e2e_ms, &stats::Summary::p95),
                       r.requests, r.errors, r.token_source_estimate);
    }
    return out;
}

std::string render_csv(std::span<const TargetReport> reports) {
    std::string out =
        "target,api,model,requests,errors,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,ttfat_p50_ms,"
        "decode_tps_p50,tpot_p50_ms,tpot_p99_ms,e2e_p50_ms,e2e_p95_ms,e2e500_p95_ms,"
        "tokens_per_chunk_p50,cached_share,token_source_estimate\n";
    for (const auto& r : reports) {
        fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{}\n",
                       r.name, r.api, r.model, r.requests, r.errors, cell(r.ttft_ms, &stats::Summary::p50),
                       cell(r.ttft_ms, &stats::Summary::p95), cell(r.ttft_ms, &stats::Summary::p99),
                       cell(r.ttfat_ms, &stats::Summary::p50), cell(r.decode_tps, &stats::Summary::p50),
                       cell(r.tpot_ms, &stats::Summary::p50), cell(r.tpot_ms, &stats::Summary::p99),
                       cell(r.e2e_ms, &stats::Summary::p50), cell(r.e2e_ms, &stats::Summary::p95),
                       cell(r.e2e500_ms, &stats::Summary::p95),
                       cell(r.tokens_per_chunk, &stats::Summary::p50), r.cached_share(),
                       r.token_source_estimate);
    }
    return out;
}

boost::json::object to_json(const TargetReport& r) {
    boost::json::object o;
    o["name"] = r.name;
    o["api"] = r.api;
    o["model"] = r.model;
    o["requests"] = r.requests;
    o["errors"] = r.errors;
    o["error_rate"] = r.error_rate();
    boost::json::object statuses;
    for (const auto& [status, count] : r.statuses) statuses[status] = count;
    o["failures"] = std::move(statuses);
    put_summary(o, "ttft_ms", r.ttft_ms);
    put_summary(o, "ttft_sched_ms", r.ttft_sched_ms);
    put_summary(o, "ttfat_ms", r.ttfat_ms);
    put_summary(o, "ttfb_ms", r.ttfb_ms);
    put_summary(o, "tpot_ms", r.tpot_ms);
    put_summary(o, "decode_tps", r.decode_tps);
    put_summary(o, "e2e_ms", r.e2e_ms);
    put_summary(o, "e2e500_ms", r.e2e500_ms);
    put_summary(o, "tokens_per_chunk", r.tokens_per_chunk);
    put_summary(o, "chunk_gap_max_ms", r.chunk_gap_max_ms);
    put_summary(o, "sched_lag_ms", r.sched_lag_ms);
    boost::json::object adjusted_obj;
    for (const auto& [key, values] : {std::pair{"ttft_ms", &r.ttft_adjusted}, std::pair{"e2e_ms", &r.e2e_adjusted}}) {
        boost::json::object q;
        q["p50"] = adjusted_json((*values)[0]);
        q["p95"] = adjusted_json((*values)[1]);
        q["p99"] = adjusted_json((*values)[2]);
        adjusted_obj[key] = std::move(q);
    }
    o["error_adjusted"] = std::move(adjusted_obj);
    o["prompt_tokens"] = r.prompt_tokens;
    o["cached_prompt_tokens"] = r.cached_prompt_tokens;
    o["cached_share"] = r.cached_share();
    boost::json::object sources;
    sources["usage"] = r.token_source_usage;
    sources["estimate"] = r.token_source_estimate;
    o["token_source"] = std::move(sources);
    return o;
}

}  // namespace tokenradar::bench
