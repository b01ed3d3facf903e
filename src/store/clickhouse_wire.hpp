#pragma once
// ClickHouse's wire forms, sans-IO (no sockets here, so the fuzzer links them): the store URL,
// SQL string literals, the RowBinary format the store writes and reads (integers little
// endian, a String as its LEB128 length then its bytes), and the text of the server's answers
// (an exception's message, a number). ClickhouseStore moves the bytes (clickhouse_http.hpp).

#include <tokenradar/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tokenradar::store {

// clickhouse://[user[:password]@]host[:port]/database[?secure=true[&ca_file=PATH]]
struct ClickHouseUrl {
    static constexpr std::uint16_t kHttpPort = 8123;   // the HTTP interface's
    static constexpr std::uint16_t kHttpsPort = 8443;  // and over TLS (ClickHouse Cloud's)

    std::string user = "default";
    std::string password;
    std::string host;
    std::uint16_t port = kHttpPort;  // kHttpsPort when secure and none is given
    std::string database;
    // HTTPS: the server's certificate is checked against the system's CAs (or `ca_file`'s)
    // and must name `host`.
    bool secure = false;
    std::string ca_file;  // PEM; empty: the system's
};
// Errc::bad_request naming what is wrong and the form expected; the password never appears.
Result<ClickHouseUrl> parse_clickhouse_url(std::string_view url);
// The URL with its password replaced by "[redacted]".
std::string redact_clickhouse_url(std::string_view url);

// A ClickHouse SQL string literal of any bytes: quotes, backslashes and control bytes escaped.
std::string clickhouse_quote(std::string_view bytes);
// A name quoted with backquotes (a column called `key`).
std::string clickhouse_name(std::string_view name);

// RowBinary writers, appending to `out`.
void put_row_int64(std::string& out, std::int64_t v);
void put_row_int32(std::string& out, std::int32_t v);
void put_row_uint64(std::string& out, std::uint64_t v);
void put_row_string(std::string& out, std::string_view bytes);
// An Array's length (LEB128, as a String's), before its elements.
void put_row_varint(std::string& out, std::uint64_t n);

// One value of a RowBinary column as read: an integer (Int32, Int64, UInt8) or String bytes
// (a view into the buffer given to decode_row_binary); an Array(String) as its RowBinary bytes
// (split_string_array reads them).
enum class RowType : std::uint8_t { int32, int64, uint8, string, string_array };
using RowValue = std::variant<std::int64_t, std::string_view>;

// The longest String value a row may carry: the store writes at most a few KiB per value, so
// anything longer is a damaged answer, refused before it is buffered.
inline constexpr std::size_t kMaxRowString = 1U << 20U;
// The most elements an Array(String) may have (a rollup row's labels).
inline constexpr std::size_t kMaxRowArray = 256;

// Decodes the complete rows of `types` at the start of `bytes`, calling `row` with each row's
// values; returns how many bytes they took (the rest is an incomplete row: keep it, append
// what comes next, call again). A String longer than kMaxRowString or a malformed length is
// Errc::protocol_error. `row` may return an error, which stops the decoding and is returned.
using RowSink = Result<void> (*)(void* context, std::span<const RowValue> values);
Result<std::size_t> decode_row_binary(std::span<const std::uint8_t> bytes,
                                      std::span<const RowType> types, RowSink row, void* context);

// The elements of an Array(String) that decode_row_binary returned (already checked whole).
std::vector<std::string_view> split_string_array(std::string_view raw);

// The message of an error answer ("Code: 60, e.displayText() = DB::Exception: Table x doesn't
// exist, e.what() = DB::Exception" -> "Code: 60: Table x doesn't exist"), on one line, at most
// ~500 bytes, non-printable bytes as '?'.
std::string clickhouse_error_message(std::string_view body);
// The exception code of an error answer ("Code: 60, ..." -> 60), -1 when there is none.
int clickhouse_error_code(std::string_view body);

// A TabSeparated answer of one signed integer (and its newline), as `SELECT count()` gives it.
// Errc::protocol_error quoting (at most 80 bytes of) what came instead.
Result<std::int64_t> parse_clickhouse_integer(std::string_view body);

}  // namespace tokenradar::store
