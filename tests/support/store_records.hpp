#pragma once
// Measurement records for store tests: one with every field set to a distinct value, one with
// every optional empty; TempDb (temp_path.hpp) for the database file.

#include "temp_path.hpp"

#include <tokenradar/core/measurement.hpp>

#include <cstdint>
#include <string>

namespace tokenradar::testing {

inline constexpr std::int64_t kMsNs = 1'000'000;

// Every field non-default and distinct, derived from `i`. Steady stamps are absolute (send is
// not zero) so tests see the store make them relative.
inline Measurement full_record(std::int64_t i, std::int64_t ts_us = 1'764'460'800'000'000) {
    Measurement m;
    m.request_id = "req-" + std::to_string(i);
    m.response_id = "chatcmpl-" + std::to_string(i);
    m.client_id = "client-" + std::to_string(i % 3);
    m.attempt = 1 + static_cast<int>(i % 3);
    m.labels.provider = "prov-" + std::to_string(i % 2);
    m.labels.model = "model-" + std::to_string(i % 5);
    m.labels.endpoint = "api.example.com";
    m.labels.upstream_region = "us-east";
    m.labels.client_region = "eu-west";
    m.labels.task = "gen-500";
    m.labels.source = "gateway";
    m.labels.cache = Cache::miss;
    m.labels.route = Route::hedge;
    m.labels.api = "anthropic";
    m.labels.stream = (i % 2) == 0;
    m.labels.client_key = "team-" + std::to_string(i % 2);
    m.status = RequestStatus::ok;
    m.http_status = 200;
    m.ts_us = ts_us + i;
    m.received_us = ts_us + i + 250'000;
    const std::int64_t send = 5'000'000'000 + i * 1000;
    m.t.send = send;
    m.t.sched = send - 3 * kMsNs;
    m.t.headers = send + 40 * kMsNs;
    m.t.first_chunk = send + 90 * kMsNs;
    m.t.first_token = send + 100 * kMsNs + i;
    m.t.first_answer = send + 150 * kMsNs;
    m.t.last_token = send + 1100 * kMsNs;
    m.t.done = send + 1101 * kMsNs;
    m.connect_ns = 2 * kMsNs + i;
    m.tls_ns = 3 * kMsNs + i;
    m.prompt_tokens = 1200 + i;
    m.cached_prompt_tokens = 1024;
    m.cache_creation_tokens = 7;
    m.output_tokens = 51;
    m.reasoning_tokens = 11;
    m.token_source = TokenSource::estimate;
    m.output_events = 49;
    m.chunk_gap_p50_ns = 19 * kMsNs;
    m.chunk_gap_p99_ns = 41 * kMsNs;
    m.chunk_gap_max_ns = 77 * kMsNs;
    m.overhead_ns = 123'456 + i;
    m.relay_p50_ns = 8'000;
    m.relay_max_ns = 90'000;
    return m;
}

// A failure before headers: every optional empty, labels at their defaults.
inline Measurement bare_record(std::int64_t ts_us) {
    Measurement m;
    m.request_id = "bare";
    m.status = RequestStatus::timeout_connect;
    m.ts_us = ts_us;
    m.t.send = 0;
    m.t.sched = 0;
    m.labels.stream = false;
    return m;
}

// The record as the store gives it back: steady stamps relative to send.
inline Measurement relative_to_send(Measurement m) {
    const std::int64_t send = m.t.send;
    m.t.send = 0;
    m.t.sched -= send;
    for (auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                        &m.t.last_token, &m.t.done}) {
        if (*stamp) **stamp -= send;
    }
    return m;
}

}  // namespace tokenradar::testing
