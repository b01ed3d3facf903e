#pragma once
// Automatic Anthropic prompt-cache breakpoints (README "Provider prompt caching"): a per-model
// gateway option for clients that never mark their prompts. Anthropic caches a prompt prefix
// only up to a block carrying `cache_control`, and only when that prefix is at least ~1024
// tokens long (most models; 2048 or 4096 for some): shorter marks are ignored, not refused.
//
// Pure functions over the neutral model: no I/O, any thread.

#include <tokenradar/dialect/chat.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace tokenradar::dialect {

// `[[models]] prompt_cache` in the gateway configuration.
enum class PromptCache { off, automatic };
std::string_view to_string(PromptCache mode) noexcept;
std::optional<PromptCache> parse_prompt_cache(std::string_view text) noexcept;  // "off", "auto"

// Anthropic's minimum cacheable prefix for most models, in tokens.
inline constexpr std::int64_t kAnthropicMinCacheTokens = 1024;
// What add_prompt_cache_breakpoints puts on a block.
inline constexpr std::string_view kEphemeralCacheControl = R"({"type":"ephemeral"})";

// Whether any content part or tool of `req` carries a cache_control.
bool has_cache_control(const ChatRequest& req) noexcept;

// Marks the stable prefix of a request whose client marked nothing (has_cache_control false;
// otherwise the client's breakpoints stand alone and nothing is added). Tokens are estimated
// as bytes / 4 (core/token_estimate.hpp) of tool names, descriptions and schemas, text parts
// and tool-call arguments; images count nothing, so a prefix is never overestimated by them.
// In Anthropic's prefix order (tools, system, messages), a breakpoint goes on:
//   - the last tool, when the tools alone reach `min_tokens`;
//   - the last system block (system messages are hoisted), when tools + system reach it;
//   - in a multi-turn conversation, the last non-empty block before the final user turn (the
//     trailing user / tool messages), when everything up to it reaches it.
// At most 3 of Anthropic's 4. Returns how many were added.
int add_prompt_cache_breakpoints(ChatRequest& req,
                                 std::int64_t min_tokens = kAnthropicMinCacheTokens);

}  // namespace tokenradar::dialect
