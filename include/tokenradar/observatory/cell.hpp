#pragma once
// The label cell of the observatory: the metrics.md labels a rollup is keyed by and a query
// filters or groups by. `endpoint` is left out (one provider has few, and the region says
// where it is); `cache` and `route` are counted inside a cell rather than splitting it.
// Hour and weekday are not labels: they come from the bucket time at query time.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::observatory {

enum class Label : std::uint8_t {
    provider,
    model,
    task,
    source,
    api,
    upstream_region,
    client_region,
    stream,  // "true" / "false"
};
inline constexpr std::size_t kLabelCount = 8;
inline constexpr std::array<Label, kLabelCount> kAllLabels = {
    Label::provider, Label::model,           Label::task,          Label::source,
    Label::api,      Label::upstream_region, Label::client_region, Label::stream};

// The query-parameter and JSON name ("upstream_region").
std::string_view label_name(Label label) noexcept;
std::optional<Label> parse_label(std::string_view name) noexcept;

// A submitted label value must be at most this many bytes.
inline constexpr std::size_t kMaxLabelBytes = 128;

// Checks a label value from the network: at most kMaxLabelBytes, valid UTF-8, no control
// characters (C0, DEL, C1) and not only spaces. Anything printable is allowed, markup
// included: the dashboard renders labels as text. Errc::bad_request naming `field`.
Result<void> check_label_value(std::string_view field, std::string_view value);

struct CellKey {
    std::string provider, model, task, source, api, upstream_region, client_region;
    bool stream = true;

    static CellKey of(const Labels& labels);
    // The value as a query or JSON shows it ("true"/"false" for stream).
    [[nodiscard]] std::string_view value(Label label) const noexcept;

    friend auto operator<=>(const CellKey&, const CellKey&) = default;
    friend bool operator==(const CellKey&, const CellKey&) = default;
};

}  // namespace tokenradar::observatory
