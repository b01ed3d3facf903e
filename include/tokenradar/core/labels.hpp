#pragma once
// The labels of metrics.md "Labels" as one table: per label its name (JSON key, SQL column,
// query parameter, report heading), the `Labels` member that holds it, the values it may take
// and its part in an observatory cell. The record's JSON, the store, `tokenradar stats`, the
// observatory and the gateway all read labels through it.
//
// Adding a label: its member in `Labels` and one line in TOKENRADAR_LABELS (the store also
// needs its column). Adding a route or cache value: one line in TOKENRADAR_ROUTES or
// TOKENRADAR_CACHES, at the end: the observatory stores their counts in this order.

#include <tokenradar/core/enum_table.hpp>
#include <tokenradar/core/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tokenradar {

// metrics.md `route`: how the gateway reached the upstream that answered. metrics.md names
// primary, fallback and hedge; the gateway's routing strategies add why the first attempt
// went where it did: latency (power of two choices on live TTFT), affinity (the replica
// holding the prompt's prefix), local (offloaded to a local server), region (the upstream
// region measured fastest from the client's region).
#define TOKENRADAR_ROUTES(X) \
    X(primary) X(fallback) X(hedge) X(latency) X(affinity) X(local) X(region)
// metrics.md `cache`: whether the gateway's response cache answered.
#define TOKENRADAR_CACHES(X) X(miss) X(exact) X(semantic) X(bypass)

enum class Route : std::uint8_t { TOKENRADAR_ROUTES(TOKENRADAR_ENUMERATOR) };
enum class Cache : std::uint8_t { TOKENRADAR_CACHES(TOKENRADAR_ENUMERATOR) };
inline constexpr std::array kRouteNames = {TOKENRADAR_ROUTES(TOKENRADAR_ENUM_NAME)};
inline constexpr std::array kCacheNames = {TOKENRADAR_CACHES(TOKENRADAR_ENUM_NAME)};

constexpr std::string_view to_string(Route r) noexcept {
    return kRouteNames[static_cast<std::size_t>(r)];
}
constexpr std::string_view to_string(Cache c) noexcept {
    return kCacheNames[static_cast<std::size_t>(c)];
}
// Errc::bad_request "route: expected one of primary, fallback, hedge" on unknown text.
Result<Route> parse_route(std::string_view text);
Result<Cache> parse_cache(std::string_view text);
std::ostream& operator<<(std::ostream& os, Route r);  // for test failure messages
std::ostream& operator<<(std::ostream& os, Cache c);

// What a measurement is grouped by (metrics.md "Labels"). Hour and weekday are derived from
// `ts_us` at query time, so they are not stored. An empty text label is unset.
struct Labels {
    std::string provider;
    std::string model;
    std::string endpoint;  // upstream base URL host
    std::string upstream_region;
    std::string client_region;
    std::string task;    // chat, gen-500, long-context, code, prefix-reuse, ...
    std::string source;  // kSourceValues
    Cache cache = Cache::bypass;
    Route route = Route::primary;
    std::string api;  // kApiValues
    bool stream = true;
    // The name of the client key the gateway admitted the request with (a virtual key's name
    // or an [[auth.keys]] name); empty without one. The gateway's own: a public
    // submitter's is dropped at ingestion, and records forwarded to another observatory
    // leave without it.
    std::string client_key;

    friend bool operator==(const Labels&, const Labels&) = default;
};

// The values a closed text label may take (an empty value is unset, and allowed).
// "probe": serve's scheduled probes ([probes]).
inline constexpr std::array<std::string_view, 5> kSourceValues = {"bench", "gateway", "submitted",
                                                                  "sim", "probe"};
inline constexpr std::array<std::string_view, 3> kApiValues = {"openai", "anthropic", "gemini"};
inline constexpr std::array<std::string_view, 2> kBoolValues = {"false", "true"};
// Open text labels: anything (a submitted one is held to check_label_value()).
inline constexpr std::span<const std::string_view> kAnyText{};

// A label's part in an observatory rollup cell: a `key` label splits cells (`slot` is its
// position in the cell key, which orders cells, queries and the /labels answer); a `counted`
// one is counted inside a cell (Aggregate::cache, Aggregate::route); a `left_out` one is
// neither (one provider has few endpoints, and the region says where they are).
enum class CellRole : std::uint8_t { key, counted, left_out };
struct CellPart {
    CellRole role = CellRole::left_out;
    std::uint8_t slot = 0;
};
constexpr CellPart cell_key(std::uint8_t slot) noexcept { return {CellRole::key, slot}; }
inline constexpr CellPart kCounted{CellRole::counted, 0};
inline constexpr CellPart kLeftOut{CellRole::left_out, 0};

// The table, in metrics.md order (also the store's column order):
// X(name = Labels member, allowed values, observatory cell part).
#define TOKENRADAR_LABELS(X)                  \
    X(provider, kAnyText, cell_key(0))        \
    X(model, kAnyText, cell_key(1))           \
    X(endpoint, kAnyText, kLeftOut)           \
    X(upstream_region, kAnyText, cell_key(5)) \
    X(client_region, kAnyText, cell_key(6))   \
    X(task, kAnyText, cell_key(2))            \
    X(source, kSourceValues, cell_key(3))     \
    X(cache, kCacheNames, kCounted)           \
    X(route, kRouteNames, kCounted)           \
    X(api, kApiValues, cell_key(4))           \
    X(stream, kBoolValues, cell_key(8))       \
    X(client_key, kAnyText, cell_key(7))

#define TOKENRADAR_LABEL_ENUMERATOR(name, values, cell) name,
enum class Label : std::uint8_t { TOKENRADAR_LABELS(TOKENRADAR_LABEL_ENUMERATOR) };
#undef TOKENRADAR_LABEL_ENUMERATOR

struct LabelInfo {
    Label label;
    std::string_view name;
    std::span<const std::string_view> values;  // empty: any text
    CellPart cell;
};

#define TOKENRADAR_LABEL_INFO(name, values, cell)                                              \
    LabelInfo{Label::name, std::string_view(#name), std::span<const std::string_view>(values), \
              cell},
inline constexpr std::array kLabelTable = {TOKENRADAR_LABELS(TOKENRADAR_LABEL_INFO)};
#undef TOKENRADAR_LABEL_INFO
inline constexpr std::size_t kLabelCount = kLabelTable.size();

constexpr const LabelInfo& label_info(Label l) noexcept {
    return kLabelTable[static_cast<std::size_t>(l)];
}
constexpr std::string_view label_name(Label l) noexcept { return label_info(l).name; }
std::optional<Label> parse_label(std::string_view name) noexcept;
// "provider, model, endpoint, ..." (every label, table order): for error messages.
std::string label_names();

// The record's value of the label as text, without copying: "true"/"false" for stream, the
// enum's name for cache and route.
std::string_view label_value(const Labels& labels, Label label) noexcept;
// Sets the label from text, held to its values (an empty text label is unset; cache, route
// and stream must be one of theirs). Errc::bad_request "cache: expected one of miss, ...".
Result<void> set_label(Labels& labels, Label label, std::string_view text);

// A name in configuration and in the gateway's x-tokenradar-task (key names, provider names,
// regions, tasks): 1-64 letters, digits, '-', '_' or '.'.
bool is_simple_name(std::string_view s) noexcept;
inline constexpr std::string_view kSimpleNameRule = "1-64 letters, digits, '-', '_' or '.'";

}  // namespace tokenradar
