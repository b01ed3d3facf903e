#pragma once
// The one token estimate TokenRadar uses wherever no tokenizer is available (the sim's
// prompt accounting, bench's fallback when a provider sends no usage): ceil(UTF-8 bytes / 4),
// the usual rule of thumb for English text under GPT-style BPE tokenizers. Records that
// use it say token_source = "estimate" (metrics.md).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tokenradar {

inline constexpr std::int64_t kBytesPerEstimatedToken = 4;

[[nodiscard]] constexpr std::int64_t estimate_tokens_from_bytes(std::size_t bytes) noexcept {
    return static_cast<std::int64_t>((bytes + kBytesPerEstimatedToken - 1) /
                                     kBytesPerEstimatedToken);
}

[[nodiscard]] constexpr std::int64_t estimate_tokens(std::string_view text) noexcept {
    return estimate_tokens_from_bytes(text.size());
}

}  // namespace tokenradar
