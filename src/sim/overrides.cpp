#include <tokenradar/sim/overrides.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace tokenradar::sim {
namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

Error bad_value(std::string_view name, std::string_view value, std::string_view expected) {
    return {Errc::bad_request,
            fmt::format("header {}: expected {}, got \"{}\"", name, expected, value)};
}

Result<double> parse_number(std::string_view name, std::string_view value, double max) {
    double v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc{} || end != value.data() + value.size() || !std::isfinite(v) || v < 0 ||
        v > max) {
        return bad_value(name, value, fmt::format("a number from 0 to {}", max));
    }
    return v;
}

Result<std::int64_t> parse_integer(std::string_view name, std::string_view value, std::int64_t min,
                                   std::int64_t max) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc{} || end != value.data() + value.size() || v < min || v > max) {
        return bad_value(name, value, fmt::format("an integer from {} to {}", min, max));
    }
    return v;
}

Result<FaultKind> parse_fault(std::string_view name, std::string_view value) {
    static constexpr FaultKind kAll[] = {
        FaultKind::none,       FaultKind::http_429, FaultKind::http_500, FaultKind::http_503,
        FaultKind::disconnect, FaultKind::stall,    FaultKind::malformed};
    const std::string v = lower(value);
    for (FaultKind k : kAll) {
        if (v == to_string(k)) return k;
    }
    return bad_value(name, value, "one of none, 429, 500, 503, disconnect, stall, malformed");
}

}  // namespace

std::string_view to_string(FaultKind kind) noexcept {
    switch (kind) {
        case FaultKind::none:
            return "none";
        case FaultKind::http_429:
            return "429";
        case FaultKind::http_500:
            return "500";
        case FaultKind::http_503:
            return "503";
        case FaultKind::disconnect:
            return "disconnect";
        case FaultKind::stall:
            return "stall";
        case FaultKind::malformed:
            return "malformed";
    }
    return "none";
}

bool Overrides::empty() const noexcept {
    return !ttft_ms && !tpot_ms && !tokens_per_s && !tokens_per_chunk && !output_tokens && !fault &&
           !fault_at_token && !stall_ms && !seed && !tool_call && !tail;
}

Result<Overrides> parse_overrides(std::span<const Header> headers) {
    constexpr double kMaxMs = 600'000;
    constexpr std::int64_t kMaxTokens = 1'000'000;
    Overrides o;
    for (const auto& [raw_name, raw_value] : headers) {
        const std::string name = lower(raw_name);
        if (!name.starts_with("x-sim-")) continue;
        const std::string_view value = trim(raw_value);
        if (name == "x-sim-ttft-ms") {
            auto v = parse_number(name, value, kMaxMs);
            if (!v) return v.error();
            o.ttft_ms = *v;
        } else if (name == "x-sim-tpot-ms") {
            auto v = parse_number(name, value, kMaxMs);
            if (!v) return v.error();
            o.tpot_ms = *v;
        } else if (name == "x-sim-tokens-per-s") {
            auto v = parse_number(name, value, 1e6);
            if (!v) return v.error();
            if (*v < 0.001) return bad_value(name, value, "a number from 0.001 to 1000000");
            o.tokens_per_s = *v;
        } else if (name == "x-sim-tokens-per-chunk") {
            auto v = parse_integer(name, value, 1, 4096);
            if (!v) return v.error();
            o.tokens_per_chunk = static_cast<int>(*v);
        } else if (name == "x-sim-output-tokens") {
            auto v = parse_integer(name, value, 0, kMaxTokens);
            if (!v) return v.error();
            o.output_tokens = *v;
        } else if (name == "x-sim-fault") {
            auto v = parse_fault(name, value);
            if (!v) return v.error();
            o.fault = *v;
        } else if (name == "x-sim-fault-at-token") {
            auto v = parse_integer(name, value, 0, kMaxTokens);
            if (!v) return v.error();
            o.fault_at_token = *v;
        } else if (name == "x-sim-stall-ms") {
            auto v = parse_number(name, value, kMaxMs);
            if (!v) return v.error();
            o.stall_ms = *v;
        } else if (name == "x-sim-seed") {
            std::uint64_t v = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            if (ec != std::errc{} || end != value.data() + value.size() || value.empty()) {
                return bad_value(name, value, "an unsigned 64-bit integer");
            }
            o.seed = v;
        } else if (name == "x-sim-tool-call") {
            const std::string v = lower(value);
            if (v == "always") {
                o.tool_call = ToolCallMode::always;
            } else if (v == "never") {
                o.tool_call = ToolCallMode::never;
            } else {
                return bad_value(name, value, "always or never");
            }
        } else if (name == "x-sim-tail") {
            const std::string v = lower(value);
            if (v == "always") {
                o.tail = TailMode::always;
            } else if (v == "never") {
                o.tail = TailMode::never;
            } else {
                return bad_value(name, value, "always or never");
            }
        } else {
            return Error{Errc::bad_request,
                         fmt::format("unknown header {} (known: x-sim-ttft-ms, x-sim-tpot-ms, "
                                     "x-sim-tokens-per-s, x-sim-tokens-per-chunk, "
                                     "x-sim-output-tokens, x-sim-fault, x-sim-fault-at-token, "
                                     "x-sim-stall-ms, x-sim-seed, x-sim-tool-call, x-sim-tail)",
                                     name)};
        }
    }
    if (o.fault_at_token && !o.fault) {
        return Error{Errc::bad_request,
                     "header x-sim-fault-at-token: needs x-sim-fault (disconnect, stall or "
                     "malformed)"};
    }
    return o;
}

}  // namespace tokenradar::sim
