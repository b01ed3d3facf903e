#pragma once
// The CSV form of the observatory's read answers (format=csv, docs/observatory-api.md "CSV"):
// each endpoint's table shape for core/csv.hpp's writer, which flattens the JSON body the
// endpoint already wrote. Rows: leaderboard and regions `rows`, heatmap `cells`, a time
// series' points and a distribution's CDF points with their series' labels repeated, a status
// model's buckets, `incidents` (an incident's `cells` stay in the JSON); /labels one row per
// label value; /gateway one row. Pure; any thread.

#include <tokenradar/core/csv.hpp>

#include <string>
#include <string_view>

namespace tokenradar::observatory {

using tokenradar::csv_field;
using tokenradar::kCsvContentType;

// `json` is a body as `endpoint` ("leaderboard", ..., "status", "incidents") writes it.
std::string csv_from_json(std::string_view endpoint, std::string_view json);

// "tokenradar-<endpoint>-<window>.csv" ("tokenradar-<endpoint>.csv" without a window).
std::string csv_filename(std::string_view endpoint, std::string_view window);

}  // namespace tokenradar::observatory
