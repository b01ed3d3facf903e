#pragma once
// The CSV form of the observatory's read answers (format=csv, docs/observatory-api.md "CSV"):
// one writer for every endpoint, flattening the JSON body the endpoint already wrote, so a
// column always holds exactly the JSON's number. Pure; any thread.
//
// Rows: the answer's table (leaderboard and regions `rows`, heatmap `cells`, a time series'
// points and a distribution's CDF points with their series' labels repeated, a status
// model's buckets, `incidents`; /labels one row per label value; /gateway one row). Nested
// objects become columns: `ttft_ms.p50` -> `ttft_p50_ms`, `ttft_ms.samples` ->
// `ttft_samples`, `cache.miss` -> `cache_miss`; arrays of numbers or strings are joined with
// ';'; arrays of objects outside the table (an incident's `cells`) are left out. The answer's
// top-level scalars (window, min_samples, truncated...) are not repeated on every row.
//
// Cells: RFC 4180 (CRLF line ends, a field holding a comma, quote, CR or LF is quoted, quotes
// doubled), a header row first. Null is an empty cell. A text cell starting with '=', '+',
// '-', '@', tab or CR gets a leading "'" so spreadsheets do not read it as a formula; numbers
// and booleans are never text.

#include <string>
#include <string_view>

namespace tokenradar::observatory {

inline constexpr std::string_view kCsvContentType = "text/csv; charset=utf-8";

// `json` is a body as `endpoint` ("leaderboard", ..., "status", "incidents") writes it.
// Throws on a body that is not JSON (a programmer error: bodies come from this process).
std::string csv_from_json(std::string_view endpoint, std::string_view json);

// "tokenradar-<endpoint>-<window>.csv" ("tokenradar-<endpoint>.csv" without a window).
std::string csv_filename(std::string_view endpoint, std::string_view window);

// One CSV field: guarded against formulas when `text`, quoted when it must be.
std::string csv_field(std::string_view value, bool text);

}  // namespace tokenradar::observatory
