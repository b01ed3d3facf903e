#pragma once
// Token accounting of the simulator. Both directions are deterministic and cheap, so usage
// figures are exact and reproducible:
//
// - Prompt tokens: tokenradar::estimate_tokens (core/token_estimate.hpp), ceil(utf8_bytes / 4) of
// the canonical prompt text (the text the dialect
//   codec extracts, e.g. roles and contents concatenated). It is the usual "4 bytes per
//   token" rule of thumb; it needs no tokenizer, costs one division, and makes a token a
//   fixed 4-byte span, so prefix-cache blocks are byte ranges.
// - Output tokens: words from a fixed vocabulary, one word = one token. Token 0 is a
//   capitalised word without a leading space; every later token is " word", "," or ".".
//   Tokens are string_views into static storage (valid for the whole program).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::sim {

// `count` output tokens drawn from a generator seeded with `seed`: the same seed gives the
// same tokens, and a shorter answer is a prefix of a longer one with the same seed.
[[nodiscard]] std::vector<std::string_view> generate_output_tokens(std::uint64_t seed,
                                                                   std::int64_t count);

// The tokens concatenated.
[[nodiscard]] std::string join_tokens(const std::vector<std::string_view>& tokens,
                                      std::size_t first = 0, std::size_t count = SIZE_MAX);

}  // namespace tokenradar::sim
