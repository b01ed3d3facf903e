#include <tokenradar/observatory/cell.hpp>

#include <fmt/format.h>

namespace tokenradar::observatory {
namespace {

constexpr std::array<std::string_view, kLabelCount> kLabelNames = {
    "provider", "model", "task", "source", "api", "upstream_region", "client_region", "stream"};

// Length of the UTF-8 sequence starting at s[i] and its code point; 0 when malformed
// (overlong forms, surrogates and values past U+10FFFF included).
std::size_t decode_utf8(std::string_view s, std::size_t i, char32_t& cp) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    std::size_t n = 0;
    char32_t min = 0;
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    if ((b0 & 0xE0) == 0xC0) {
        n = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        n = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        n = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

}  // namespace

std::string_view label_name(Label label) noexcept {
    return kLabelNames[static_cast<std::size_t>(label)];
}

std::optional<Label> parse_label(std::string_view name) noexcept {
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (kLabelNames[i] == name) return kAllLabels[i];
    }
    return std::nullopt;
}

Result<void> check_label_value(std::string_view field, std::string_view value) {
    if (value.size() > kMaxLabelBytes) {
        return Error(Errc::bad_request, fmt::format("{}: expected at most {} bytes, got {}", field,
                                                    kMaxLabelBytes, value.size()));
    }
    bool blank = true;
    for (std::size_t i = 0; i < value.size();) {
        char32_t cp = 0;
        const std::size_t n = decode_utf8(value, i, cp);
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
    return CellKey{labels.provider, labels.model,           labels.task,          labels.source,
                   labels.api,      labels.upstream_region, labels.client_region, labels.stream};
}

std::string_view CellKey::value(Label label) const noexcept {
    switch (label) {
        case Label::provider:
            return provider;
        case Label::model:
            return model;
        case Label::task:
            return task;
        case Label::source:
            return source;
        case Label::api:
            return api;
        case Label::upstream_region:
            return upstream_region;
        case Label::client_region:
            return client_region;
        case Label::stream:
            return stream ? "true" : "false";
    }
    return {};
}

}  // namespace tokenradar::observatory
