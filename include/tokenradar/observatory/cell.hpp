#pragma once
// The label cell of the observatory: the metrics.md labels a rollup is keyed by and a query
// filters or groups by, as core's label table says (LabelInfo::cell): `endpoint` is left
// out (one provider has few, and the region says where it is); `cache` and `route` are
// counted inside a cell rather than splitting it. Hour and weekday are not labels: they come
// from the bucket time at query time.

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

using ::tokenradar::Label;

inline constexpr std::size_t kCellLabelCount = [] {
    std::size_t n = 0;
    for (const LabelInfo& info : kLabelTable) n += info.cell.role == CellRole::key ? 1 : 0;
    return n;
}();
// The labels that key a cell, in slot order: the order of cell keys, of filter arrays
// (indexed by cell_slot()) and of the /labels answer.
inline constexpr std::array<Label, kCellLabelCount> kCellLabels = [] {
    std::array<Label, kCellLabelCount> out{};
    for (const LabelInfo& info : kLabelTable) {
        if (info.cell.role == CellRole::key) out[info.cell.slot] = info.label;
    }
    return out;
}();
// A key label's position in kCellLabels.
constexpr std::size_t cell_slot(Label label) noexcept { return label_info(label).cell.slot; }
constexpr bool is_cell_label(Label label) noexcept {
    return label_info(label).cell.role == CellRole::key;
}

// A cell label by its query-parameter and JSON name ("upstream_region"); nullopt for the
// others ("endpoint", "cache").
std::optional<Label> parse_cell_label(std::string_view name) noexcept;

// A submitted label value must be at most this many bytes.
inline constexpr std::size_t kMaxLabelBytes = 128;

// Checks a label value from the network: at most kMaxLabelBytes, valid UTF-8, no control
// characters (C0, DEL, C1) and not only spaces. Anything printable is allowed, markup
// included: the dashboard renders labels as text. Errc::bad_request naming `field`.
Result<void> check_label_value(std::string_view field, std::string_view value);

// A cell's key: the value of every key label as a query or JSON shows it ("true"/"false" for
// stream), in slot order, which is also the order cells sort in.
struct CellKey {
    std::array<std::string, kCellLabelCount> values;

    static CellKey of(const Labels& labels);
    // `label` must be a cell label.
    [[nodiscard]] std::string_view value(Label label) const noexcept {
        return values[cell_slot(label)];
    }
    // Whether `labels` have this key (what CellKey::of(labels) == *this says, without copies).
    [[nodiscard]] bool matches(const Labels& labels) const noexcept;

    friend auto operator<=>(const CellKey&, const CellKey&) = default;
    friend bool operator==(const CellKey&, const CellKey&) = default;
};

}  // namespace tokenradar::observatory
