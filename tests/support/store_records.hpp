#pragma once
// Measurement records for store tests: one with every field set to a distinct value, one with
// every optional empty, and a temporary database file removed at the end of the test.

#include <unistd.h>

#include <tokenradar/core/measurement.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
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
    m.labels.cache = "miss";
    m.labels.route = "hedge";
    m.labels.api = "anthropic";
    m.labels.stream = (i % 2) == 0;
    m.status = "ok";
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
    m.status = "timeout_connect";
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

// A fresh path in the temp directory; the file and its -wal/-shm are removed on destruction.
class TempDb {
  public:
    TempDb() {
        static std::atomic<int> counter{0};
        path_ = (std::filesystem::temp_directory_path() /
                 ("tokenradar_store_test_" + std::to_string(::getpid()) + "_" +
                  std::to_string(counter++) + ".db"))
                    .string();
        remove();
    }
    ~TempDb() { remove(); }
    TempDb(const TempDb&) = delete;
    TempDb& operator=(const TempDb&) = delete;

    [[nodiscard]] const std::string& path() const { return path_; }

  private:
    void remove() {
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
            std::filesystem::remove(path_ + suffix, ec);
        }
    }
    std::string path_;
};

}  // namespace tokenradar::testing
