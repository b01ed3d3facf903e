#pragma once
// OpenAI Chat Completions (POST /v1/chat/completions), also what OpenAI-compatible servers
// (vLLM, SGLang, DeepSeek, OpenRouter...) speak. Pure functions over bytes; no I/O.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

class EventJson;           // private: a reusable arena for one event's JSON
class OpenAiChunkScanner;  // private: the text-chunk fast path (openai_chunk_scan.hpp)

// Errc::bad_request with the field path on invalid input ("messages[2].role: expected ...").
Result<ChatRequest> parse_openai_request(std::string_view body);
Result<std::string> emit_openai_request(const ChatRequest& request);
// The same as a DOM, unserialized (the doors keep it as ChatRequest::original), every value in
// `storage`.
Result<boost::json::object> openai_request_json(const ChatRequest& request,
                                                const boost::json::storage_ptr& storage = {});

// Errc::protocol_error on a body that is not a chat.completion.
Result<ChatResponse> parse_openai_response(std::string_view body);
std::string emit_openai_response(const ChatResponse& response);

// `data: [DONE]` -> done; `choices: []` + usage -> usage; `reasoning_content` / `reasoning`
// -> reasoning; `{"error":{...}}` -> error. Only choice index 0 is decoded. Plain text /
// finish chunks (nearly every event of a stream) take a SAX fast path with the same result;
// the rest are parsed into a reused arena.
class OpenAiStreamDecoder final : public StreamDecoder {
  public:
    // fast_path = false: every event through the DOM decoder (tests compare the two paths).
    explicit OpenAiStreamDecoder(bool fast_path = true);
    ~OpenAiStreamDecoder() override;
    Result<void> decode(std::string_view event, std::string_view data,
                        std::vector<StreamDelta>& out) override;

    // Events decoded by the fast path so far (tests).
    std::size_t fast_events() const noexcept { return fast_events_; }

  private:
    std::unique_ptr<EventJson> json_;
    std::unique_ptr<OpenAiChunkScanner> scan_;
    std::size_t fast_events_ = 0;
};

// Role chunk, content chunks, finish chunk, then (include_usage) the usage chunk with
// `choices: []`, then `data: [DONE]`. Reasoning is sent as `reasoning_content`.
class OpenAiStreamEncoder final : public StreamEncoder {
  public:
    explicit OpenAiStreamEncoder(StreamMeta meta) : meta_(std::move(meta)) {}
    void encode(const StreamDelta& delta, std::string& out) override;
    void finish(std::string& out) override;

  private:
    void ensure_role(std::string& out);
    void write_text_chunk(std::string_view field, std::string_view text, std::string& out);
    StreamMeta meta_;
    Usage usage_;
    std::string text_prefix_;  // built on the first text chunk, when id and model are known
    std::string text_suffix_;
    bool role_sent_ = false;
    bool terminated_ = false;
};

}  // namespace tokenradar::dialect
