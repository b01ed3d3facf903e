#pragma once
// The neutral chat model every dialect parses into and emits from. The gateway translates
// OpenAI <-> Anthropic / Gemini through it; same-dialect passthrough sends the client's text
// (make_upstream_call's client_text), or `original` re-serialized.
//
// Token semantics are OpenAI's, whatever the dialect: prompt_tokens includes cached and
// cache-creation tokens; output_tokens includes reasoning tokens (Gemini's
// candidatesTokenCount + thoughtsTokenCount, Anthropic's output_tokens).

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

// OpenAI Chat Completions, Anthropic Messages, Gemini generateContent, OpenAI Responses
// ("openai-responses": bench targets, the sim and the gateway's door speak it; no gateway
// upstream does).
enum class Api { openai, anthropic, gemini, openai_responses };
std::string_view to_string(Api api) noexcept;
std::optional<Api> parse_api(std::string_view name) noexcept;

enum class Role { system, user, assistant, tool };
std::string_view to_string(Role role) noexcept;

struct ContentPart {
    enum class Kind { text, image_url, image_base64 };
    Kind kind = Kind::text;
    std::string text;        // text
    std::string url;         // image_url
    std::string media_type;  // image_base64 (required), image_url (optional)
    std::string data;        // image_base64: the base64 payload
    // Anthropic prompt-cache breakpoint on this block, as JSON text (`{"type":"ephemeral"}`,
    // with its `ttl` when given), sent untouched to an Anthropic upstream; empty when none.
    // OpenAI-format clients put it on content parts (LiteLLM's and Anthropic's shape).
    std::string cache_control;

    static ContentPart make_text(std::string t) {
        ContentPart p;
        p.text = std::move(t);
        return p;
    }
    bool operator==(const ContentPart&) const = default;
};

struct ToolCall {
    std::string id;  // may be empty for Gemini
    std::string name;
    std::string arguments;  // JSON text of the arguments object
    // Gemini's thoughtSignature of the functionCall part (opaque base64), which Gemini 3 needs
    // back in later turns; OpenAI shape carries it as extra_content.google.thought_signature,
    // as Google's own OpenAI-compatible endpoint does.
    std::string signature;
    bool operator==(const ToolCall&) const = default;
};

struct Message {
    Role role = Role::user;
    std::vector<ContentPart> content;
    std::vector<ToolCall> tool_calls;  // assistant only
    std::string tool_call_id;          // tool only: the call this result answers
    std::string name;                  // tool only: the function's name (Gemini needs it)
    bool operator==(const Message&) const = default;
};

struct ToolDefinition {
    std::string name;
    std::string description;
    std::string parameters;     // JSON schema text; empty when none
    bool strict = false;        // OpenAI / Anthropic strict schema adherence; Gemini has none
    std::string cache_control;  // as ContentPart::cache_control, on the tool definition
    bool operator==(const ToolDefinition&) const = default;
};

// Whether and which tool the model must call. OpenAI "auto" | "none" | "required" |
// {function}; Anthropic tool_choice auto | none | any | tool; Gemini functionCallingConfig
// AUTO | NONE | ANY (+ one allowedFunctionNames).
struct ToolChoice {
    enum class Mode { automatic, none, required, function };
    Mode mode = Mode::automatic;
    std::string name;  // function only
    bool operator==(const ToolChoice&) const = default;
};

// OpenAI response_format; Anthropic output_config.format (json_schema only); Gemini
// responseMimeType application/json (+ responseJsonSchema).
struct ResponseFormat {
    enum class Kind { text, json_object, json_schema };
    Kind kind = Kind::text;
    std::string name;     // json_schema: OpenAI's schema name (required there, unused elsewhere)
    std::string schema;   // json_schema: JSON Schema text
    bool strict = false;  // json_schema: OpenAI strict
    bool operator==(const ResponseFormat&) const = default;
};

struct ChatRequest {
    std::string model;  // Gemini: from the URL path, not the body
    std::vector<Message> messages;
    std::vector<ToolDefinition> tools;
    std::optional<std::int64_t> max_tokens;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::vector<std::string> stop;
    // Generation options beyond the basics; a dialect without the option neither reads nor
    // writes it (translate.hpp decides whether dropping it is acceptable).
    std::optional<ToolChoice> tool_choice;
    std::optional<bool> parallel_tool_calls;  // false: at most one tool call per turn
    std::optional<ResponseFormat> response_format;
    std::optional<std::int64_t> seed;             // OpenAI, Gemini
    std::optional<double> presence_penalty;       // OpenAI, Gemini
    std::optional<double> frequency_penalty;      // OpenAI, Gemini
    std::optional<std::int64_t> thinking_budget;  // Anthropic, Gemini; tokens, 0 = no thinking
    bool stream = false;         // Gemini: streamGenerateContent vs generateContent
    bool include_usage = false;  // always true for Anthropic and Gemini, which always report
    // The request as received, so same-dialect passthrough loses nothing (cache_control,
    // vendor fields...). Not part of equality.
    boost::json::object original;

    bool operator==(const ChatRequest& o) const {
        return model == o.model && messages == o.messages && tools == o.tools &&
               max_tokens == o.max_tokens && temperature == o.temperature && top_p == o.top_p &&
               stop == o.stop && tool_choice == o.tool_choice &&
               parallel_tool_calls == o.parallel_tool_calls &&
               response_format == o.response_format && seed == o.seed &&
               presence_penalty == o.presence_penalty && frequency_penalty == o.frequency_penalty &&
               thinking_budget == o.thinking_budget && stream == o.stream &&
               include_usage == o.include_usage;
    }
};

struct Usage {
    std::optional<std::int64_t> prompt_tokens;
    std::optional<std::int64_t> cached_prompt_tokens;
    std::optional<std::int64_t> cache_creation_tokens;
    std::optional<std::int64_t> output_tokens;
    std::optional<std::int64_t> reasoning_tokens;

    bool empty() const noexcept {
        return !prompt_tokens && !cached_prompt_tokens && !cache_creation_tokens &&
               !output_tokens && !reasoning_tokens;
    }
    // Fields present in `later` replace ours (usage reports are cumulative).
    void merge(const Usage& later) noexcept;
    bool operator==(const Usage&) const = default;
};

enum class FinishReason { stop, length, tool_calls, content_filter, error, other };
std::string_view to_string(FinishReason r) noexcept;

struct ChatResponse {
    std::string id;
    std::string model;
    std::string text;       // the answer
    std::string reasoning;  // reasoning / thinking text, when the provider returns it
    std::vector<ToolCall> tool_calls;
    std::optional<FinishReason> finish_reason;
    Usage usage;
    std::int64_t created = 0;  // unix seconds (OpenAI); 0 when the dialect has none
    bool operator==(const ChatResponse&) const = default;
};

}  // namespace tokenradar::dialect
