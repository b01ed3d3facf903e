#include <tokenradar/dialect/metering.hpp>

#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/stats/percentiles.hpp>

namespace tokenradar::dialect {

void record_usage(Measurement& m, const Usage& usage) {
    m.prompt_tokens = usage.prompt_tokens;
    m.cached_prompt_tokens = usage.cached_prompt_tokens;
    m.cache_creation_tokens = usage.cache_creation_tokens;
    m.output_tokens = usage.output_tokens;
    m.reasoning_tokens = usage.reasoning_tokens;
}

void record_response(Measurement& m, const ChatResponse& response) {
    m.response_id = response.id;
    record_usage(m, response.usage);
    if (!m.output_tokens) {
        m.output_tokens = estimate_tokens(response.text) + estimate_tokens(response.reasoning);
        m.token_source = TokenSource::estimate;
    }
}

void record_stream(Measurement& m, const StreamAccumulator& acc) {
    const auto& times = acc.times();
    m.t.first_chunk = times.first_chunk;
    m.t.first_token = times.first_token;
    m.t.first_answer = times.first_answer;
    m.t.last_token = times.last_token;
    m.t.done = times.done;
    m.output_events = static_cast<std::int64_t>(acc.output_events());
    record_usage(m, acc.usage());
    if (!m.output_tokens) {
        // No usage arrived: estimate from the output bytes and say so (metrics.md).
        m.output_tokens = estimate_tokens_from_bytes(acc.output_bytes());
        m.token_source = TokenSource::estimate;
    }
    std::vector<double> gaps(acc.chunk_gaps_ns().begin(), acc.chunk_gaps_ns().end());
    if (auto s = stats::summarize(std::move(gaps))) {
        m.chunk_gap_p50_ns = static_cast<std::int64_t>(s->p50);
        m.chunk_gap_p99_ns = static_cast<std::int64_t>(s->p99);
        m.chunk_gap_max_ns = static_cast<std::int64_t>(s->max);
    }
}

}  // namespace tokenradar::dialect
