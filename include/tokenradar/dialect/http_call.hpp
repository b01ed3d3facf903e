#pragma once
// The HTTP request a client (bench, gateway) sends to a provider for a ChatRequest: path,
// auth headers in the provider's shape, body. Pure: no I/O, the key is only copied into the
// header that needs it.
//
// Base paths follow each SDK's base URL convention, with or without the version segment:
//   openai     https://api.openai.com/v1                 -> {base}/chat/completions
//   openai-responses (same base)                         -> {base}/responses
//   anthropic  https://api.anthropic.com[/v1]            -> {base}[/v1]/messages
//   gemini     https://generativelanguage.googleapis.com[/v1beta]
//              -> {base}/v1beta/models/{model}:generateContent | :streamGenerateContent?alt=sse

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/dialect/chat.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::dialect {

struct HttpCall {
    std::string target;  // path and query
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
};

inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

// `base_path` is the path part of the provider's base URL ("" or "/v1"...).
Result<HttpCall> make_http_call(Api api, std::string_view base_path, const ChatRequest& request,
                                const Secret& key);
// The same around a body that is already written (translate.hpp's passthrough); `model` and
// `stream` only shape Gemini's path and the accept header.
HttpCall make_http_call(Api api, std::string_view base_path, std::string_view model, bool stream,
                        std::string body, const Secret& key);

// The environment variable that holds a provider's key by convention.
std::string_view default_key_env(Api api) noexcept;

// The provider's own API host (api.openai.com, api.anthropic.com,
// generativelanguage.googleapis.com).
std::string_view official_host(Api api) noexcept;

}  // namespace tokenradar::dialect
