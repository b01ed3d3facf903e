#include <tokenradar/dialect/metering.hpp>

#include "openai_response_scan.hpp"

#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/stats/percentiles.hpp>

namespace tokenradar::dialect {

void record_usage(Measurement& m, const Usage& usage) {
    m.prompt_tokens = usage.prompt_tokens;
    m.cached_prompt_tokens = usage.cached_prompt_tokens;
    m.cache_creation_tokens = usage.cache_creation_tokens;
    m.output_tokens = usage.output_tokens;
    m.reasoning_tokens = usage.reasoning_tokens;
}

namespace {

// What metering reads of a whole response, from a DOM or a scan: one place for both.
void record_answer(Measurement& m, std::string_view id, const Usage& usage, std::size_t text_bytes,
                   std::size_t reasoning_bytes) {
    m.response_id = id;
    record_usage(m, usage);
    if (!m.output_tokens) {
        m.output_tokens =
            estimate_tokens_from_bytes(text_bytes) + estimate_tokens_from_bytes(reasoning_bytes);
        m.token_source = TokenSource::estimate;
    }
}

}  // namespace

void record_response(Measurement& m, const ChatResponse& response) {
    record_answer(m, response.id, response.usage, response.text.size(), response.reasoning.size());
}

Result<void> meter_response(Measurement& m, Api api, std::string_view body) {
    if (api == Api::openai) {
        thread_local OpenAiResponseScanner scanner;  // its parser's buffers are reused
        if (scanner.scan(body)) {
            record_answer(m, scanner.id(), scanner.usage(), scanner.text_bytes(),
                          scanner.reasoning_bytes());
            return {};
        }
    }
    auto parsed = parse_response(api, body);
    if (!parsed) return parsed.error();
    record_response(m, *parsed);
    return {};
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
