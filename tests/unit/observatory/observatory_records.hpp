#pragma once
// Measurement records for the observatory's tests: one successful streamed request with a
// given TTFT (ms), TPOT 20 ms over 11 tokens.

#include <tokenradar/core/measurement.hpp>

#include <cstdint>
#include <string>

namespace tokenradar::observatory::test {

inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr std::int64_t kDay0 = 1'764'460'800'000'000;  // 2025-11-30T00:00:00Z

inline Measurement record(std::string provider, std::int64_t ts_us, double ttft_ms,
                          std::string client = "") {
    Measurement m;
    m.request_id = "r";
    m.client_id = std::move(client);
    m.ts_us = ts_us;
    m.labels.provider = std::move(provider);
    m.labels.model = "m";
    m.labels.task = "chat";
    m.labels.source = "gateway";
    m.labels.api = "openai";
    m.t.headers = static_cast<std::int64_t>(ttft_ms * kMs) / 2;
    m.t.first_chunk = static_cast<std::int64_t>(ttft_ms * kMs);
    m.t.first_token = m.t.first_chunk;
    m.output_tokens = 11;
    m.output_events = 11;
    m.t.last_token = *m.t.first_token + 10 * 20 * kMs;  // TPOT 20 ms
    m.t.done = m.t.last_token;
    m.prompt_tokens = 100;
    return m;
}

}  // namespace tokenradar::observatory::test
