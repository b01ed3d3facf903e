#pragma once
// Scanning JSON text by hand, where a parse into a DOM would cost more than the job (the
// passthrough's member splice, NDJSON ingestion): the whitespace JSON allows between tokens
// (RFC 8259: space, tab, LF, CR; not form feed or vertical tab).

#include <cstddef>
#include <string_view>

namespace tokenradar {

constexpr bool is_json_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The index of the first non-whitespace byte of `text` at or after `i` (text.size() if none).
constexpr std::size_t skip_json_space(std::string_view text, std::size_t i) noexcept {
    while (i < text.size() && is_json_space(text[i])) ++i;
    return i;
}

}  // namespace tokenradar
