#pragma once
// UTF-8 (RFC 3629) checks for text that comes from the network or a file.

#include <cstddef>
#include <string>
#include <string_view>

namespace tokenradar {

// The valid UTF-8 sequence at the start of `s`: its length and code point. `size` is 0 when
// `s` is empty or does not start with one (overlong forms, surrogates and values past
// U+10FFFF included).
struct Utf8Char {
    std::size_t size = 0;
    char32_t code_point = 0;
};
Utf8Char decode_utf8(std::string_view s) noexcept;

// `s` with every byte that does not start a valid sequence replaced by U+FFFD (what JSON
// writers need when quoting a peer's bytes).
std::string valid_utf8(std::string_view s);

}  // namespace tokenradar
