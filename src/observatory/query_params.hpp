#pragma once
// The query API's request: a GET target (`/api/v1/<endpoint>?<params>`) parsed and checked
// as docs/observatory-api.md says, before any rollup is read. Pure; any thread.

#include <tokenradar/core/error.hpp>
#include <tokenradar/observatory/cell.hpp>
#include <tokenradar/observatory/rollup.hpp>

#include <boost/system/result.hpp>
#include <cctz/time_zone.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {

enum class Endpoint {
    leaderboard,
    heatmap,
    timeseries,
    distribution,
    regions,
    gateway,
    labels,
    status
};
enum class HeatmapBy { weekday, model };
// What an answer is written as: the JSON of the contract, or that flattened to CSV.
enum class Format { json, csv };

// The groupings of the per-model answers (timeseries, distribution, heatmap by=model) and
// of /regions, in the order their GroupKey::labels hold the values.
inline const std::vector<Label> kModelLabels = {Label::provider, Label::model};
inline const std::vector<Label> kRegionLabels = {Label::client_region, Label::upstream_region,
                                                 Label::provider, Label::model};

std::string_view endpoint_name(Endpoint e) noexcept;
// "ttft", "tpot", "e2e", "e2e500" (the `metric` parameter's values), "overhead".
std::string_view metric_name(Metric m) noexcept;

// How much one answer may hold, so none can grow to megabytes whatever labels the index
// has: `limit` counts leaderboard and regions rows, heatmap models (by=model: 24 cells each)
// and timeseries and distribution series; answers cut short say "truncated": true.
struct AnswerLimit {
    std::size_t fallback = 0;  // without `limit`
    std::size_t max = 0;       // `limit` from 1 to this
};
AnswerLimit answer_limit(Endpoint e) noexcept;
// /status: its only windows (24 or 168 hour buckets).
inline constexpr std::int64_t kStatusDayUs = 24 * kHourUs;
inline constexpr std::int64_t kStatusWeekUs = 7 * 24 * kHourUs;
// Besides `limit`: series that would take an answer past this many points are left out.
inline constexpr std::size_t kMaxTimeseriesPoints = 6'000;  // ~1.3 MB with 8 quantiles
inline constexpr std::size_t kMaxCdfPoints = 20'000;        // distribution: series x points
// /labels lists at most this many values per label.
inline constexpr std::size_t kMaxLabelValuesShown = 1'000;

struct ParamLimits {
    std::chrono::hours max_window{30 * 24};
    // Minute buckets exist this far back (RollupOptions::minute_retention): the longest
    // window a minute time series may cover.
    std::chrono::hours minute_retention{6};
    std::size_t max_points = 1000;  // distribution
};

struct ApiRequest {
    Endpoint endpoint = Endpoint::leaderboard;
    std::int64_t window_us = 24 * kHourUs;
    std::string window_text = "24h";     // as answers echo it (format_duration)
    Filter filter;                       // values sorted, without duplicates
    Metric metric = Metric::ttft;        // never Metric::overhead (only /gateway shows it)
    std::vector<double> quantiles{0.5};  // ascending, distinct; several only for timeseries
    std::string tz = "UTC";
    cctz::time_zone zone;   // tz, loaded (UTC by default)
    std::vector<Label> by;  // leaderboard: provider, model and the extra labels, in cell order
    HeatmapBy heatmap_by = HeatmapBy::weekday;
    Resolution bucket = Resolution::hour;  // timeseries
    std::size_t points = 100;              // distribution
    std::size_t limit = 0;                 // answer_limit(endpoint) unless given; 0 for
                                           // endpoints without one
    Format format = Format::json;

    // One string per distinct answer: path and every parameter, normalised (order, defaults,
    // duplicates and spellings like 1440m vs 24h do not matter). The response cache's key.
    [[nodiscard]] std::string cache_key() const;
};

// What is wrong with a request: the status (400, 404), the error for the body, and the
// parameter it names (empty when it is the path or the target's syntax).
struct RequestError {
    Errc errc = Errc::bad_request;
    std::string param;
    std::string message;
};

using ParsedRequest = boost::system::result<ApiRequest, RequestError>;

// Errc::not_found for a path that is not an endpoint; Errc::bad_request naming the first bad
// parameter: unknown names, repeated single-valued ones, values out of range.
ParsedRequest parse_request(std::string_view target, const ParamLimits& limits = {});

// The name of a quantile's key in answers: 0.5 -> "p50", 0.95 -> "p95", 0.999 -> "p99.9".
std::string quantile_key(double q);

// Used by ParsedRequest::value() when it holds an error.
[[noreturn]] void throw_exception_from_error(const RequestError& e,
                                             const boost::source_location& loc);

}  // namespace tokenradar::observatory
