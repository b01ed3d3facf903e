#include <tokenradar/observatory/cell.hpp>

#include <tokenradar/core/utf8.hpp>

#include <fmt/format.h>

namespace tokenradar::observatory {

// Every slot of the cell key is taken once.
static_assert([] {
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        if (cell_slot(kCellLabels[i]) != i || !is_cell_label(kCellLabels[i])) return false;
    }
    return true;
}());

std::optional<Label> parse_cell_label(std::string_view name) noexcept {
    const std::optional<Label> label = tokenradar::parse_label(name);
    if (!label || !is_cell_label(*label)) return std::nullopt;
    return label;
}

Result<void> check_label_value(std::string_view field, std::string_view value) {
    if (value.size() > kMaxLabelBytes) {
        return Error(Errc::bad_request, fmt::format("{}: expected at most {} bytes, got {}", field,
                                                    kMaxLabelBytes, value.size()));
    }
    bool blank = true;
    for (std::size_t i = 0; i < value.size();) {
        const auto [n, cp] = decode_utf8(value.substr(i));
        if (n == 0) {
            return Error(Errc::bad_request,
                         fmt::format("{}: expected UTF-8 text, got a malformed byte at offset {}",
                                     field, i));
        }
        if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
            return Error(
                Errc::bad_request,
                fmt::format("{}: expected no control characters, got U+{:04X} at offset {}", field,
                            static_cast<std::uint32_t>(cp), i));
        }
        blank = blank && cp == U' ';
        i += n;
    }
    if (blank && !value.empty()) {
        return Error(Errc::bad_request, fmt::format("{}: expected text, got only spaces", field));
    }
    return {};
}

CellKey CellKey::of(const Labels& labels) {
    CellKey key;
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        key.values[i] = label_value(labels, kCellLabels[i]);
    }
    return key;
}

bool CellKey::matches(const Labels& labels) const noexcept {
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        if (values[i] != label_value(labels, kCellLabels[i])) return false;
    }
    return true;
}

}  // namespace tokenradar::observatory
