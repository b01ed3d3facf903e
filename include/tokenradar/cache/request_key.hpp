#pragma once
// What identifies a cached answer: the exact cache's key and the semantic cache's scope, both
// SHA-256 digests of a canonical form of the client's OpenAI request.
//
// The canonical form is the request JSON with object keys sorted at every depth, no
// whitespace, and these top-level fields left out because they do not change the answer:
// `model` (the virtual model is hashed instead), `stream`, `stream_options`, `user`,
// `safety_identifier`, `metadata`, `store` and `prompt_cache_key`. Every other value counts:
// every message and part (tool calls and results, images), tools, tool_choice,
// response_format and every generation parameter. Field order and whitespace do not matter.
// Numbers are compared as parsed: 1 and 1.0 are different keys (a miss, never a wrong hit).
//
// The tenant (the client key's name) and the virtual model come first, length-prefixed, so
// two tenants never share a key.

#include <boost/json/object.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::cache {

inline constexpr std::size_t kDigestSize = 32;  // SHA-256

// The exact cache's key: kDigestSize raw bytes.
std::string exact_key(std::string_view tenant, std::string_view virtual_model,
                      const boost::json::object& request);

// Lowercase hex of a digest (the shared tier's key names).
std::string hex(std::string_view digest);

// Why the request's answer may not be cached or served from the cache, or nullopt when it may.
// Not cacheable: `n` over 1 and `logprobs` (a cached answer holds one choice and no
// log-probabilities), audio output, and sampling without a seed unless `sampling_ok`: a
// `temperature` over 0 or none at all (every provider's default is over 0).
std::optional<std::string_view> not_cacheable(const boost::json::object& request, bool sampling_ok);

// A semantic lookup: the last user turn's text, and the scope that must be equal for a hit
// (tenant, virtual model and the canonical request without that turn: system prompt, earlier
// turns, tools, parameters).
struct SemanticQuery {
    std::string scope;  // kDigestSize raw bytes
    std::string question;
};
// nullopt when the conversation is too long (more than `max_turns` user turns), the last
// message is not a user turn of text only, or its text is over `max_question_bytes`.
std::optional<SemanticQuery> semantic_query(std::string_view tenant, std::string_view virtual_model,
                                            const boost::json::object& request,
                                            std::size_t max_turns, std::size_t max_question_bytes);

}  // namespace tokenradar::cache
