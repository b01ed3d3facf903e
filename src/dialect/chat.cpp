#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

namespace tokenradar::dialect {

std::string_view to_string(Api api) noexcept {
    switch (api) {
        case Api::openai:
            return "openai";
        case Api::anthropic:
            return "anthropic";
        case Api::gemini:
            return "gemini";
        case Api::openai_responses:
            return "openai-responses";
    }
    return "openai";
}

std::optional<Api> parse_api(std::string_view name) noexcept {
    if (name == "openai") return Api::openai;
    if (name == "anthropic") return Api::anthropic;
    if (name == "gemini") return Api::gemini;
    if (name == "openai-responses") return Api::openai_responses;
    return std::nullopt;
}

std::string_view to_string(Role role) noexcept {
    switch (role) {
        case Role::system:
            return "system";
        case Role::user:
            return "user";
        case Role::assistant:
            return "assistant";
        case Role::tool:
            return "tool";
    }
    return "user";
}

std::string_view to_string(FinishReason r) noexcept {
    switch (r) {
        case FinishReason::stop:
            return "stop";
        case FinishReason::length:
            return "length";
        case FinishReason::tool_calls:
            return "tool_calls";
        case FinishReason::content_filter:
            return "content_filter";
        case FinishReason::error:
            return "error";
        case FinishReason::other:
            return "other";
    }
    return "other";
}

std::string_view to_string(StreamDelta::Kind k) noexcept {
    using K = StreamDelta::Kind;
    switch (k) {
        case K::role:
            return "role";
        case K::text:
            return "text";
        case K::reasoning:
            return "reasoning";
        case K::tool_call:
            return "tool_call";
        case K::usage:
            return "usage";
        case K::finish:
            return "finish";
        case K::error:
            return "error";
        case K::done:
            return "done";
        case K::ignorable:
            return "ignorable";
    }
    return "ignorable";
}

void Usage::merge(const Usage& later) noexcept {
    if (later.prompt_tokens) prompt_tokens = later.prompt_tokens;
    if (later.cached_prompt_tokens) cached_prompt_tokens = later.cached_prompt_tokens;
    if (later.cache_creation_tokens) cache_creation_tokens = later.cache_creation_tokens;
    if (later.output_tokens) output_tokens = later.output_tokens;
    if (later.reasoning_tokens) reasoning_tokens = later.reasoning_tokens;
}

}  // namespace tokenradar::dialect
