#pragma once
// Synthetic measurement records for the observatory benchmarks: a fixed label space and
// latency models, deterministic from a seed, so every run (and every mode) sees the same data.
//
// Label space (960 cells): 8 providers x 3 models (24 models; upstream region and API fixed
// per provider), 4 client regions, 5 tasks, stream true (80%) / false (20%); source "bench".
// Clients: 6, one of them sending 40% of the records, the others 12% each (per-client
// weighting has work to do); with `submitters` set above 6, the other 60% are spread evenly
// over submitters - 1 (a public observatory's many gateways and benches). Records are spread evenly
// over [from_us, to_us) in time order (as a store hands them to the rollups), uniformly over
// models, regions and tasks.
//
// Latency: TTFT lognormal (sigma 0.35) around a per-model median of 180-600 ms, 1.4x slower
// from 13:00 to 21:00 UTC (US business hours) for half the providers; TPOT lognormal (sigma
// 0.2) around 8-35 ms; output tokens by task (chat 150, gen-500 500, long-context 300, code
// 400, prefix-reuse 200, +-50%). Non-streamed requests have no token stamps (E2E only, as
// metrics.md says). 1% of records are http_429 and 0.3% http_500 (counted, not timed).

#include <tokenradar/core/measurement.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tokenradar::bench_observatory {

inline constexpr std::int64_t kHourUs = 3'600'000'000;
inline constexpr std::int64_t kDayUs = 24 * kHourUs;

class RecordGenerator {
  public:
    // `total` records over [from_us, to_us), the i-th at from_us + i * (to_us - from_us) / total.
    RecordGenerator(std::uint64_t seed, std::int64_t from_us, std::int64_t to_us,
                    std::size_t total);

    [[nodiscard]] bool done() const noexcept { return next_ >= total_; }
    [[nodiscard]] std::size_t produced() const noexcept { return next_; }
    // Overwrites `m` with the next record (reusing its strings' storage). The request id is
    // 32 hex digits from the record's position and `id_salt`, unique per (salt, position):
    // random-looking (as new_request_id() makes them), or with time_ordered_ids the record's
    // ts in milliseconds first (12 digits, as a UUIDv7 starts), then 20 random-looking ones.
    void next(Measurement& m, std::uint64_t id_salt = 0);
    bool time_ordered_ids = false;
    std::size_t submitters = 6;  // clients (the default 6 keep the shares above)

    // Provider and model names of model `i` (0..23), for query filters.
    static std::string provider_of(std::size_t model);
    static std::string model_of(std::size_t model);

  private:
    std::mt19937_64 rng_;
    std::int64_t from_us_;
    std::int64_t to_us_;
    std::size_t total_;
    std::size_t next_ = 0;
};

inline constexpr std::size_t kModels = 24;
inline constexpr std::size_t kCells = kModels * 4 * 5 * 2;

// NDJSON body of the next `n` records (to_json, one per line), as bench --submit sends them.
std::string ndjson_body(RecordGenerator& gen, std::size_t n, std::uint64_t id_salt);

// CPU seconds of the calling thread / of the process; resident set size in bytes.
double thread_cpu_seconds() noexcept;
double process_cpu_seconds() noexcept;
std::size_t rss_bytes();

}  // namespace tokenradar::bench_observatory
