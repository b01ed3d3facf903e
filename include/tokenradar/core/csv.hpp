#pragma once
// JSON answers as CSV downloads (format=csv): one writer for every endpoint that has one,
// flattening the JSON body the endpoint already wrote, so a column always holds exactly the
// JSON's number. Pure; any thread. The observatory's shapes are in observatory/csv_export.hpp,
// the gateway's live endpoints' in gateway.cpp.
//
// Rows: the objects of the arrays the shape's levels name, outer levels' columns repeated on
// each row (a time series' labels on each of its points); an element that is itself an array
// (a CDF point) is named by `point_names`. No levels: the answer is the one row. Nested
// objects become columns: `ttft_ms.p50` -> `ttft_p50_ms`, `ttft_ms.samples` ->
// `ttft_samples`, `cache.miss` -> `cache_miss`; arrays of numbers or strings are joined with
// ';'; arrays of objects outside the table are left out. The answer's top-level scalars
// (window, truncated...) are not repeated on every row. An answer without rows is a header
// of `empty_header`, the columns that name a row.
//
// Cells: RFC 4180 (CRLF line ends, a field holding a comma, quote, CR or LF is quoted, quotes
// doubled), a header row first. Null is an empty cell. A text cell starting with '=', '+',
// '-', '@', tab or CR gets a leading "'" so spreadsheets do not read it as a formula; numbers
// and booleans are never text.

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar {

inline constexpr std::string_view kCsvContentType = "text/csv; charset=utf-8";

// One step down to the table's rows: the member holding the array, and the prefix its
// elements' columns get (a status bucket's `state` beside its model's `state`).
struct CsvLevel {
    std::string_view array;
    std::string_view prefix;
};

struct CsvShape {
    std::vector<CsvLevel> levels;
    std::array<std::string_view, 2> point_names{};
    std::vector<std::string_view> empty_header;
    // Instead of levels: the member holding an object of arrays (/labels), one row per value,
    // in columns `label` and `value`.
    std::string_view values_of{};
};

// Throws std::invalid_argument on a body that is not a JSON object (a programmer error:
// bodies come from this process).
std::string csv_from_json(std::string_view json, const CsvShape& shape);

// One CSV field: guarded against formulas when `text`, quoted when it must be.
std::string csv_field(std::string_view value, bool text);

}  // namespace tokenradar
