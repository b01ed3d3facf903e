#pragma once
// The query API's JSON bodies, written from the rollup's Groups (docs/observatory-api.md).
// Pure: no index, no clock. Bodies leave out `generated_at`, so the ETag can be a hash of
// what the data say (QueryApi adds it with with_generated_at()).
//
// Numbers: milliseconds (tokens/s for decode_tps_p50), rounded to 4 significant digits
// (0.05% of the value, well inside the sketches' 1%; 281.2 ms, 0.04123 ms of gateway
// overhead). Every number carries the count behind it: `samples` on rows, cells, points,
// each metric object. Under `min_samples` a row, cell or metric is `insufficient` and its
// numbers are null.

#include "query_params.hpp"

#include <tokenradar/observatory/rollup.hpp>

#include <cctz/time_zone.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tokenradar::observatory {

// `value` to `digits` significant digits (0 stays 0; NaN and infinities unchanged).
double round_significant(double value, int digits = 4);

// Groups by Query::by = ApiRequest::by.
std::string render_leaderboard(const ApiRequest& req, const Groups& groups,
                               std::uint64_t min_samples);
// Groups by client_region, upstream_region, provider, model.
std::string render_regions(const ApiRequest& req, const Groups& groups, std::uint64_t min_samples);
// Groups by provider, model and bucket.
std::string render_timeseries(const ApiRequest& req, const Groups& groups,
                              std::uint64_t min_samples);
// Groups by provider, model.
std::string render_distribution(const ApiRequest& req, const Groups& groups,
                                std::uint64_t min_samples);
// Groups (any keys) of records with source = gateway; all are summed.
std::string render_gateway(const ApiRequest& req, const Groups& groups, std::uint64_t min_samples);
// Groups by hour bucket (by=weekday) or by provider, model and hour bucket (by=model), at
// hour resolution; each UTC hour goes to its local_slot() in `zone`.
std::string render_heatmap(const ApiRequest& req, const Groups& groups, const cctz::time_zone& zone,
                           std::uint64_t min_samples);
std::string render_labels(const ApiRequest& req,
                          const std::array<std::vector<std::string>, kCellLabelCount>& labels);

// `body` (a JSON object) with "generated_at" as its first member.
std::string with_generated_at(std::string_view body, std::int64_t now_us);

}  // namespace tokenradar::observatory
