#pragma once
// The measurement record of ../shared/metrics.md (spec version 1): one per request attempt,
// written by bench and the gateway, submitted to the observatory. It never contains prompt
// or completion text.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/labels.hpp>
#include <tokenradar/core/request_status.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar {

enum class TokenSource { usage, estimate };

std::string_view to_string(TokenSource s) noexcept;

// Steady-clock timestamps in nanoseconds (same clock within one process). A moment that never
// happened (no token arrived, the request failed before headers) is nullopt.
struct Timestamps {
    std::int64_t sched = 0;  // due time (open loop); equals send in closed loop
    std::int64_t send = 0;   // first byte of the request written
    std::optional<std::int64_t> headers;
    std::optional<std::int64_t> first_chunk;
    std::optional<std::int64_t> first_token;
    std::optional<std::int64_t> first_answer;
    std::optional<std::int64_t> last_token;
    std::optional<std::int64_t> done;

    friend bool operator==(const Timestamps&, const Timestamps&) = default;
};

struct Measurement {
    std::string request_id;   // ours
    std::string response_id;  // the provider's (joins with the sim's --trace)
    std::string client_id;    // who submitted it (observatory de-duplication)
    int attempt = 1;
    Labels labels;
    RequestStatus status;
    int http_status = 0;
    std::int64_t ts_us = 0;  // wall clock (UTC microseconds) at send
    // Observatory ingestion: the server's wall clock when the record arrived (0 = measured by
    // this process). Stamped by the server, never taken from a submitted record.
    std::int64_t received_us = 0;

    Timestamps t;
    std::int64_t connect_ns = 0;
    std::int64_t tls_ns = 0;

    std::optional<std::int64_t> prompt_tokens;
    std::optional<std::int64_t> cached_prompt_tokens;
    std::optional<std::int64_t> cache_creation_tokens;
    std::optional<std::int64_t> output_tokens;  // N
    std::optional<std::int64_t> reasoning_tokens;
    TokenSource token_source = TokenSource::usage;
    std::int64_t output_events = 0;  // events that carried generated output

    // Gaps between consecutive output-carrying events.
    std::optional<std::int64_t> chunk_gap_p50_ns;
    std::optional<std::int64_t> chunk_gap_p99_ns;
    std::optional<std::int64_t> chunk_gap_max_ns;

    // Gateway-only figures.
    std::optional<std::int64_t> overhead_ns;
    std::optional<std::int64_t> relay_p50_ns;
    std::optional<std::int64_t> relay_max_ns;

    [[nodiscard]] bool ok() const noexcept { return status.is_ok(); }

    friend bool operator==(const Measurement&, const Measurement&) = default;
};

// Metrics derived exactly as metrics.md defines them; nullopt where undefined (TPOT needs
// N >= 2 and two token timestamps, etc.). Units: milliseconds and tokens/s.
struct Derived {
    std::optional<double> ttft_ms;
    std::optional<double> ttft_sched_ms;
    std::optional<double> ttfat_ms;
    std::optional<double> ttfb_ms;
    std::optional<double> e2e_ms;
    std::optional<double> tpot_ms;
    std::optional<double> decode_tps;
    std::optional<double> e2e_tps;
    std::optional<double> tokens_per_chunk;
    std::optional<double> e2e500_ms;
};

Derived derive(const Measurement& m) noexcept;

// JSON form (one JSONL line per record). Timestamps are written relative to `send` (ns), so
// the record is meaningful outside the process that took it: sched_offset_ns is
// sched - send (<= 0), headers_ns is headers - send, and so on. Derived metrics are
// included for readers' convenience and recomputed (not trusted) when parsed.
boost::json::object to_json(const Measurement& m);

// Parses a record written by to_json (or submitted by anyone), checking types, enums and
// timestamp order; errors name the field. `metrics_spec` must be 1 when present.
Result<Measurement> measurement_from_json(const boost::json::value& v);

}  // namespace tokenradar
