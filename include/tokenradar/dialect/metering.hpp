#pragma once
// Filling a Measurement (metrics.md) from what a response carried: one place for bench and
// the gateway, so both count tokens and stamp times the same way. Sans-IO.

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_accumulator.hpp>

#include <string_view>

namespace tokenradar::dialect {

// Copies the provider's usage (prompt, cached, cache-creation, output, reasoning tokens).
void record_usage(Measurement& m, const Usage& usage);

// A whole (non-streaming) response: its id and usage, else the documented estimate from the
// answer and reasoning text (token_source = estimate). A whole response has no first token of
// its own.
void record_response(Measurement& m, const ChatResponse& response);

// A whole response body of `api`, parsed and recorded as record_response does;
// Errc::protocol_error (parse_response's) when it is not the dialect's response. An OpenAI body
// of the usual shape (one choice with a text answer) is read by a SAX scan instead of a DOM:
// the gateway relays such a body unchanged and needs nothing else from it.
Result<void> meter_response(Measurement& m, Api api, std::string_view body);

// A stream: event timestamps, output events, chunk gaps (p50, p99, max) and usage, else the
// estimate from the output bytes (token_source = estimate).
void record_stream(Measurement& m, const StreamAccumulator& acc);

}  // namespace tokenradar::dialect
