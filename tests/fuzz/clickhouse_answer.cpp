// What the ClickHouse store reads from the server (store/clickhouse_http.hpp and
// clickhouse_wire.hpp) over arbitrary bytes: the HTTP answer (status, headers, chunked or
// sized body) fed in pieces, the RowBinary rows of each query the store runs, and the text of
// error and number answers. The first byte picks the parser, the second cuts the input into
// pieces. Nothing may read outside the input, decode more than it was given, keep more than
// its bounds, or give a message that is not printable ASCII.

#include "../../src/store/clickhouse_http.hpp"
#include "../../src/store/clickhouse_wire.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace store = tokenradar::store;
using store::RowType;

constexpr std::array<RowType, 18> kScan = {
    RowType::int64,  RowType::int64,  RowType::string, RowType::string, RowType::int32,
    RowType::string, RowType::string, RowType::string, RowType::string, RowType::string,
    RowType::string, RowType::string, RowType::string, RowType::string, RowType::string,
    RowType::string, RowType::string, RowType::string};
constexpr std::array<RowType, 5> kRollups = {RowType::int64, RowType::string_array, RowType::uint8,
                                             RowType::string, RowType::string};
constexpr std::array<RowType, 3> kLookup = {RowType::string, RowType::string, RowType::int32};
constexpr std::array<RowType, 3> kDays = {RowType::int32, RowType::int64, RowType::uint8};

tokenradar::Result<void> check_row(void* /*context*/, std::span<const store::RowValue> values) {
    for (const auto& v : values) {
        if (const auto* text = std::get_if<std::string_view>(&v)) {
            if (text->size() > store::kMaxRowString * 2 + 16) std::abort();
            if (store::split_string_array(*text).size() > store::kMaxRowArray) std::abort();
        }
    }
    return {};
}

// Rows fed piece by piece, as the store does: the remainder kept and grown.
void rows(std::span<const RowType> types, std::string_view input, std::size_t piece) {
    std::vector<std::uint8_t> pending;
    for (std::size_t at = 0; at < input.size(); at += piece) {
        const std::string_view part = input.substr(at, piece);
        pending.insert(pending.end(), part.begin(), part.end());
        auto used = store::decode_row_binary(pending, types, check_row, nullptr);
        if (!used) return;
        if (*used > pending.size()) std::abort();
        pending.erase(pending.begin(), pending.begin() + static_cast<long>(*used));
    }
}

void printable(const std::string& message) {
    if (message.size() > 520) std::abort();
    for (const char c : message) {
        if (c < 0x20 || c > 0x7e) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
    const std::size_t piece = 1 + data[1];
    switch (data[0] % 6) {
        case 0: {
            std::size_t body = 0;
            const store::AnswerSink sink = [&](std::string_view bytes) {
                body += bytes.size();
                return tokenradar::Result<void>{};
            };
            // As ClickHouseHttp feeds it: what the parser left is given again with what follows
            // (Beast's parser keeps no bytes of its own).
            store::AnswerReader reader(sink);
            std::string pending;
            bool failed = false;
            for (std::size_t at = 0; at < input.size() && !failed && !reader.done(); at += piece) {
                pending.append(input.substr(at, piece));
                auto used = reader.feed(pending);
                failed = !used;
                if (used) {
                    if (*used > pending.size()) std::abort();
                    pending.erase(0, *used);
                }
            }
            if (!failed && !reader.done()) (void)reader.feed_eof();
            if (body > input.size()) std::abort();
            if (reader.error_text().size() > store::AnswerReader::kMaxErrorBody) std::abort();
            break;
        }
        case 1:
            rows(kScan, input, piece);
            break;
        case 2:
            rows(kRollups, input, piece);
            break;
        case 3:
            rows(kLookup, input, piece);
            break;
        case 4:
            rows(kDays, input, piece);
            break;
        default:
            printable(store::clickhouse_error_message(input));
            (void)store::clickhouse_error_code(input);
            if (auto n = store::parse_clickhouse_integer(input); !n) {
                printable(n.error().message);
            }
            break;
    }
    return 0;
}
