#pragma once
// The observatory's read API (docs/observatory-api.md): GET /api/v1/leaderboard, heatmap,
// timeseries, distribution, regions, gateway, labels and status, answered from a RollupIndex
// (status also from an IncidentMonitor, when attached); JSON, or CSV with format=csv. Pure:
// a request target in, status + JSON body + cache headers out; the HTTP server owns sockets
// and methods.
//
//     QueryApi api(index, {.min_samples = 20});
//     ApiResponse r = api.get("/api/v1/leaderboard?window=24h&task=chat", if_none_match, now_us);
//
// Windows: a window of an hour or more is read at hour resolution from the start of the hour
// `window` before now (so it covers up to an hour more than asked); shorter windows at
// minute resolution; a time series with bucket=minute reads minutes (at most
// `minute_retention` back).
//
// Caching: the ETag is a hash of the body without `generated_at`, so a poll of an unchanged
// answer revalidates (304) even while other data move. Computed answers are kept per
// normalised request for `cache_ttl`, and beyond it for as long as the index's generation and
// the window's snapped start are unchanged; concurrent requests for an answer being computed
// wait for that computation instead of repeating it.
//
// Threads: get() from any number of threads at once (the index's query is shared-locked, the
// cache has its own mutex, held only to look up and store). get() blocks while it computes
// or waits for another thread's computation of the same answer; nothing suspends.

#include <tokenradar/observatory/incident_detector.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tokenradar::observatory {

class IncidentMonitor;

// How /api/v1/status judges an hour against its baseline: as the incident detector does,
// with [incidents]' thresholds (the defaults when the section is absent).
struct StatusJudgement {
    DetectorOptions detector;
    int baseline_weeks = 4;
};

struct QueryApiOptions {
    std::uint64_t min_samples = 20;             // fewer samples: "insufficient", numbers null
    std::chrono::milliseconds cache_ttl{5000};  // 0 disables the answer cache
    std::size_t cache_entries = 512;            // distinct requests kept
    std::chrono::hours max_window{30 * 24};
};

struct ApiResponse {
    int status = 200;           // 200, 304, 400, 404
    std::string body;           // JSON (an OpenAI-style error body for 4xx); empty for 304
    std::string etag;           // strong, quoted; empty on errors
    std::string cache_control;  // "public, max-age=10"; "no-store" on errors
    std::string content_type = "application/json";
    // Non-empty: sent as `Content-Disposition: attachment; filename="<filename>"` (CSV).
    std::string filename;
};

class QueryApi {
  public:
    explicit QueryApi(const RollupIndex& index, QueryApiOptions options = {});
    ~QueryApi();
    QueryApi(const QueryApi&) = delete;
    QueryApi& operator=(const QueryApi&) = delete;

    // `target` is the request's path and query as received ("/api/v1/heatmap?tz=..."),
    // `if_none_match` the header's value (empty when absent), `now_us` the wall clock (UTC us).
    [[nodiscard]] ApiResponse get(std::string_view target, std::string_view if_none_match,
                                  std::int64_t now_us) const;

    // /api/v1/status's judgement and incidents (`monitor` may be null: [incidents] is off, and
    // no bucket is red). Call before the first get(); the monitor must outlive this object.
    void attach_incidents(const IncidentMonitor* monitor, StatusJudgement judgement);

    // Changes whenever an answer of `status` may have: the index's generation, and for the
    // status page also the monitor's evaluations. Badges (badge.hpp) key their cache by it.
    [[nodiscard]] std::uint64_t data_version(bool status) const;

  private:
    struct Cache;
    void evict(std::int64_t now_us) const;  // with the cache's mutex held

    const RollupIndex& index_;
    QueryApiOptions options_;
    const IncidentMonitor* monitor_ = nullptr;
    StatusJudgement judgement_;
    std::unique_ptr<Cache> cache_;
};

// True when an If-None-Match value (a list of entity tags, or "*") matches `etag` by the
// weak comparison RFC 9110 prescribes for it (W/"x" matches "x").
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace tokenradar::observatory
