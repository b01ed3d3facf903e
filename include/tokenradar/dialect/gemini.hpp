#pragma once
// Gemini generateContent / streamGenerateContent?alt=sse. The model and streaming are in
// the URL path, not the body, so they are inputs of parse and read from ChatRequest by the
// caller when emitting. Pure functions over bytes; no I/O.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace boost::json {
class monotonic_resource;
}  // namespace boost::json

namespace tokenradar::dialect {

class EventJson;  // private: a reusable arena for one event's JSON

// "/v1beta/models/<model>:generateContent" or "...:streamGenerateContent?alt=sse".
std::string gemini_path(std::string_view model, bool stream);

// `scratch`: see request_storage (json_util.hpp); the request's `original` lives in it.
Result<ChatRequest> parse_gemini_request(std::string_view body, std::string_view model, bool stream,
                                         boost::json::monotonic_resource* scratch = nullptr);
// The body only (contents, systemInstruction, tools, generationConfig).
Result<std::string> emit_gemini_request(const ChatRequest& request);

Result<ChatResponse> parse_gemini_response(std::string_view body);
std::string emit_gemini_response(const ChatResponse& response);

// Emits role on the first chunk, then the chunk's cumulative usage, its parts (thought parts
// as reasoning, functionCall parts as whole tool calls), and finish + done on the chunk with
// finishReason. STOP after a function call is reported as tool_calls.
class GeminiStreamDecoder final : public StreamDecoder {
  public:
    GeminiStreamDecoder();
    ~GeminiStreamDecoder() override;
    Result<void> decode(std::string_view event, std::string_view data,
                        std::vector<StreamDelta>& out) override;

  private:
    std::unique_ptr<EventJson> json_;
    int tool_calls_ = 0;
    bool started_ = false;
};

// One chunk per text / reasoning delta carrying the cumulative usage known so far; tool
// calls are collected and sent whole (Gemini has no argument deltas) in the final chunk,
// which carries finishReason and the final usage.
class GeminiStreamEncoder final : public StreamEncoder {
  public:
    explicit GeminiStreamEncoder(StreamMeta meta) : meta_(std::move(meta)) {}
    void encode(const StreamDelta& delta, std::string& out) override;
    void finish(std::string& out) override;

  private:
    StreamMeta meta_;
    Usage usage_;
    std::map<int, ToolCall> tools_;
    std::optional<FinishReason> finish_;
    bool terminated_ = false;
};

}  // namespace tokenradar::dialect
