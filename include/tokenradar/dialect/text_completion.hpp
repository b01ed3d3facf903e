#pragma once
// OpenAI's legacy text completions (POST /v1/completions): `prompt` in place of `messages`,
// answers and stream chunks of object "text_completion" with `choices[].text`. OpenAI keeps it
// for older models; self-hosted engines (llama.cpp, vLLM, SGLang) still serve it. The gateway
// passes it through to OpenAI-dialect upstreams only, so there is no translation here: the
// request in the neutral model (for validation and the sim), the whole answer, and stream
// chunks both ways. Pure functions and per-stream state machines over bytes; no I/O.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

class EventJson;  // private: a reusable arena for one event's JSON

// A completions request as the neutral model: each prompt becomes a user message (a prompt of
// token ids, its numbers separated by spaces); max_tokens, temperature, top_p, stop, stream
// and stream_options.include_usage as Chat Completions reads them; `original` is the body.
// Errc::bad_request naming the field ("prompt: expected a string, an array of strings or an
// array of token ids") otherwise.
Result<ChatRequest> parse_text_completion_request(std::string_view body);

// A whole answer: choice 0's `text` and finish_reason, id, model, created and usage.
// Errc::protocol_error on a body that is not a text_completion (an `object` other than
// "text_completion", `choices` missing, fields of the wrong types).
Result<ChatResponse> parse_text_completion(std::string_view body);
std::string emit_text_completion(const ChatResponse& response);

// Stream chunks: the first chunk's id and model -> role (the stream's identity, as Chat
// Completions' role chunk gives it), non-empty `choices[0].text` -> text, finish_reason ->
// finish, `usage` (the include_usage chunk, `choices: []`) -> usage, `{"error":{...}}` -> error,
// `data: [DONE]` -> done. Only choice index 0 is decoded.
class TextCompletionStreamDecoder final : public StreamDecoder {
  public:
    TextCompletionStreamDecoder();
    ~TextCompletionStreamDecoder() override;
    Result<void> decode(std::string_view event, std::string_view data,
                        std::vector<StreamDelta>& out) override;

  private:
    std::unique_ptr<EventJson> json_;
    bool identified_ = false;  // the role delta went out
};

// Text chunks, a finish chunk (empty text), then (include_usage) the usage chunk with
// `choices: []`, then `data: [DONE]`. Reasoning and tool calls have no place in this API and
// are dropped.
class TextCompletionStreamEncoder final : public StreamEncoder {
  public:
    explicit TextCompletionStreamEncoder(StreamMeta meta) : meta_(std::move(meta)) {}
    void encode(const StreamDelta& delta, std::string& out) override;
    void finish(std::string& out) override;

  private:
    void write_chunk(std::string_view text, const FinishReason* finish, std::string& out) const;
    StreamMeta meta_;
    Usage usage_;
    bool terminated_ = false;
};

}  // namespace tokenradar::dialect
