#pragma once
// What one stream event means, dialect-neutral. A decoder turns one SSE event into zero or
// more deltas; an encoder turns a delta sequence back into SSE events of a dialect.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

struct StreamDelta {
    enum class Kind {
        role,       // start of the assistant message; id = message id, name = model
        text,       // answer text in `text`
        reasoning,  // reasoning / thinking text in `text`
        tool_call,  // index (0-based among tool calls), id + name on the first delta of a
                    // call, `arguments` = a fragment of the arguments JSON text
        usage,      // cumulative usage so far; absent fields are unknown, not zero
        finish,     // finish_reason
        error,      // in-stream error: error_code, error_type (the dialect's), text = message
        done,       // terminal event ([DONE], message_stop, Gemini chunk with finishReason)
        ignorable,  // ping, block stop, signature: an event that carries nothing we model
    };
    Kind kind = Kind::ignorable;
    std::string text;
    int index = 0;
    std::string id;
    std::string name;
    std::string arguments;
    std::string signature;  // tool_call: Gemini thoughtSignature (see ToolCall::signature)
    Usage usage;
    FinishReason finish_reason = FinishReason::stop;
    Errc error_code = Errc::upstream_http_error;
    std::string error_type;

    static StreamDelta make(Kind k) {
        StreamDelta d;
        d.kind = k;
        return d;
    }
    static StreamDelta make_text(std::string t) {
        StreamDelta d;
        d.kind = Kind::text;
        d.text = std::move(t);
        return d;
    }
    // Carries generated output as metrics.md counts it: non-empty answer text, reasoning
    // text or tool-call arguments.
    bool carries_output() const noexcept {
        return ((kind == Kind::text || kind == Kind::reasoning) && !text.empty()) ||
               (kind == Kind::tool_call && !arguments.empty());
    }
    bool operator==(const StreamDelta&) const = default;
};

std::string_view to_string(StreamDelta::Kind k) noexcept;

// Decodes one SSE event of a dialect. Stateful (Anthropic block indexes, Gemini function-call
// numbering), so one decoder per stream. Never suspends, does no I/O.
class StreamDecoder {
  public:
    virtual ~StreamDecoder() = default;
    // Appends the deltas of this event to `out`. A data payload that is not what the dialect
    // sends (bad JSON, wrong types) is Errc::protocol_error; nothing is appended then.
    virtual Result<void> decode(std::string_view event, std::string_view data,
                                std::vector<StreamDelta>& out) = 0;
};

// Identity of the stream an encoder writes, for the fields every chunk repeats. An empty id
// or model is taken from the first role delta (the upstream's message id and model).
struct StreamMeta {
    std::string id;  // chatcmpl-... / msg_... / responseId
    std::string model;
    std::int64_t created = 0;   // unix seconds (OpenAI chunks)
    bool include_usage = true;  // OpenAI: emit the usage chunk (stream_options.include_usage)

    void adopt(const StreamDelta& role) {
        if (id.empty()) id = role.id;
        if (model.empty()) model = role.name;
    }
};

// Encodes deltas as SSE events of a dialect, appending bytes to `out`. Stateful: it opens
// and closes what the dialect needs (OpenAI role chunk; Anthropic message_start and content
// blocks). One encoder per stream. Never suspends, does no I/O.
class StreamEncoder {
  public:
    virtual ~StreamEncoder() = default;
    virtual void encode(const StreamDelta& delta, std::string& out) = 0;
    // End of stream: emits whatever terminal events the dialect requires and were not yet
    // written (as if a `done` delta arrived). Idempotent.
    virtual void finish(std::string& out) = 0;
};

}  // namespace tokenradar::dialect
