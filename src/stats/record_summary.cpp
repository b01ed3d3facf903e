#include <tokenradar/stats/record_summary.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tokenradar::stats {
namespace {

void push(std::vector<double>& values, const std::optional<double>& v) {
    if (v) values.push_back(*v);
}

// Sorts `ok` in place (summarize copies it) and returns the error-adjusted p50, p95, p99.
std::array<AdjustedPercentile, 3> adjusted(std::vector<double>& ok, std::size_t failures) {
    std::sort(ok.begin(), ok.end());
    std::array<AdjustedPercentile, 3> out;
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = error_adjusted_percentile(ok, failures, RecordSummary::kAdjustedQuantiles[i]);
    }
    return out;
}

void put_summary(boost::json::object& o, std::string_view key, const std::optional<Summary>& s) {
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

boost::json::value adjusted_json(const AdjustedPercentile& p) {
    if (p.above_max) return "> max";
    if (p.value) return *p.value;
    return nullptr;
}

}  // namespace

void RecordSummarizer::add(const Measurement& m) {
    RecordSummary& r = summary_;
    ++r.requests;
    sched_lag_ms_.push_back(static_cast<double>(m.t.send - m.t.sched) / 1e6);
    if (!m.ok()) {
        ++r.errors;
        ++r.statuses[std::string(to_string(m.status))];
        return;
    }
    r.prompt_tokens += m.prompt_tokens.value_or(0);
    r.cached_prompt_tokens += m.cached_prompt_tokens.value_or(0);
    (m.token_source == TokenSource::usage ? r.token_source_usage : r.token_source_estimate)++;
    // A success without a metric (no stream, no token) is left out of that metric's samples,
    // also in the error-adjusted views.
    const Derived d = derive(m);
    push(ttft_ms_, d.ttft_ms);
    push(ttft_sched_ms_, d.ttft_sched_ms);
    push(ttfat_ms_, d.ttfat_ms);
    push(ttfb_ms_, d.ttfb_ms);
    push(tpot_ms_, d.tpot_ms);
    push(decode_tps_, d.decode_tps);
    push(e2e_ms_, d.e2e_ms);
    push(e2e500_ms_, d.e2e500_ms);
    push(tokens_per_chunk_, d.tokens_per_chunk);
    if (m.chunk_gap_max_ns)
        chunk_gap_max_ms_.push_back(static_cast<double>(*m.chunk_gap_max_ns) / 1e6);
}

RecordSummary RecordSummarizer::finish() {
    RecordSummary r = std::exchange(summary_, RecordSummary{});
    r.ttft_adjusted = adjusted(ttft_ms_, r.errors);
    r.e2e_adjusted = adjusted(e2e_ms_, r.errors);
    r.sched_lag_ms = summarize(std::exchange(sched_lag_ms_, {}));
    r.ttft_ms = summarize(std::exchange(ttft_ms_, {}));
    r.ttft_sched_ms = summarize(std::exchange(ttft_sched_ms_, {}));
    r.ttfat_ms = summarize(std::exchange(ttfat_ms_, {}));
    r.ttfb_ms = summarize(std::exchange(ttfb_ms_, {}));
    r.tpot_ms = summarize(std::exchange(tpot_ms_, {}));
    r.decode_tps = summarize(std::exchange(decode_tps_, {}));
    r.e2e_ms = summarize(std::exchange(e2e_ms_, {}));
    r.e2e500_ms = summarize(std::exchange(e2e500_ms_, {}));
    r.tokens_per_chunk = summarize(std::exchange(tokens_per_chunk_, {}));
    r.chunk_gap_max_ms = summarize(std::exchange(chunk_gap_max_ms_, {}));
    return r;
}

RecordSummary summarize_records(std::span<const Measurement> records) {
    RecordSummarizer s;
    for (const auto& m : records) s.add(m);
    return s.finish();
}

std::string format_cell(const std::optional<Summary>& s, double Summary::*field) {
    return s ? fmt::format("{:.1f}", (*s).*field) : std::string("-");
}

std::string format_cell(const AdjustedPercentile& p) {
    if (p.above_max) return "> max";
    return p.value ? fmt::format("{:.1f}", *p.value) : std::string("-");
}

void put_json(boost::json::object& o, const RecordSummary& r) {
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
    for (const auto& [key, values] :
         {std::pair{"ttft_ms", &r.ttft_adjusted}, std::pair{"e2e_ms", &r.e2e_adjusted}}) {
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
}

}  // namespace tokenradar::stats
