#pragma once
// Per-request overrides of the latency model from test-only request headers (x-sim-*), in
// the spirit of Envoy's autonomous upstream: a test steers one request without a new
// profile. Parsing is sans-IO and returns located errors (the server answers 400).

#include <tokenradar/core/error.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace tokenradar::sim {

enum class FaultKind { none, http_429, http_500, http_503, disconnect, stall, malformed };

// "none", "429", "500", "503", "disconnect", "stall", "malformed".
[[nodiscard]] std::string_view to_string(FaultKind kind) noexcept;

// Whether a request that declares tools is answered with a tool call (x-sim-tool-call):
// always (unless its tool_choice forbids calls), or never (unless its tool_choice demands one).
enum class ToolCallMode { always, never };

// Whether a request's TTFT gets the profile's heavy-tail multiplier (x-sim-tail), instead of
// drawing it at the profile's [tail] rate.
enum class TailMode { always, never };

// Every override is exact: it replaces the drawn value and is not scaled by the peak curve
// nor jittered.
struct Overrides {
    std::optional<double> ttft_ms;               // x-sim-ttft-ms: TTFT before queueing
    std::optional<double> tpot_ms;               // x-sim-tpot-ms: every gap between tokens
    std::optional<double> tokens_per_s;          // x-sim-tokens-per-s: gap = 1000/rate ms
    std::optional<int> tokens_per_chunk;         // x-sim-tokens-per-chunk
    std::optional<std::int64_t> output_tokens;   // x-sim-output-tokens (still <= max_tokens)
    std::optional<FaultKind> fault;              // x-sim-fault (none disables profile faults)
    std::optional<std::int64_t> fault_at_token;  // x-sim-fault-at-token (mid-stream faults)
    std::optional<double> stall_ms;              // x-sim-stall-ms
    std::optional<std::uint64_t> seed;           // x-sim-seed: the request seed
    std::optional<ToolCallMode> tool_call;       // x-sim-tool-call: always | never
    std::optional<TailMode> tail;                // x-sim-tail: always | never

    [[nodiscard]] bool empty() const noexcept;
};

using Header = std::pair<std::string_view, std::string_view>;

// Reads every header whose name starts with "x-sim-" (case-insensitive); other headers are
// ignored. An unknown x-sim-* name or a bad value is an Errc::bad_request error naming the
// header, the value and what was expected. A repeated header: the last one wins.
Result<Overrides> parse_overrides(std::span<const Header> headers);

}  // namespace tokenradar::sim
