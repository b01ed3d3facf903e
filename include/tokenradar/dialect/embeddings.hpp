#pragma once
// OpenAI embeddings answers (`POST /v1/embeddings`), read for what the gateway needs from them:
// the first vector (the semantic cache's embedder) and the usage (metering). Sans-IO.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

// Longest vector accepted from an embedder.
inline constexpr std::size_t kMaxEmbeddingDimension = 16384;

// `data[0].embedding` of an embeddings answer, if it is a non-empty array of at most
// kMaxEmbeddingDimension numbers.
std::optional<std::vector<float>> first_embedding(std::string_view body);

// `usage.prompt_tokens` (a non-negative integer) of an embeddings answer. The usage object
// closes the answer, after vectors of up to megabytes: the last `"usage"` key (a string
// preceded by `{` or `,` and followed by `:`) is found from the end, and only its object is
// parsed, at most kMaxEmbeddingsUsageBytes of it.
inline constexpr std::size_t kMaxEmbeddingsUsageBytes = 1024;
std::optional<std::int64_t> embeddings_prompt_tokens(std::string_view body);

}  // namespace tokenradar::dialect
