#pragma once
// Anthropic Messages (POST /v1/messages). Pure functions over bytes; no I/O.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstdint>
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

// max_tokens is required by Anthropic; emit uses this when the request has none.
inline constexpr std::int64_t kAnthropicDefaultMaxTokens = 4096;

// Top-level `system` becomes system messages; `tool_result` blocks become tool messages
// (ahead of the rest of their user message); thinking blocks in history are dropped.
// `scratch`: see request_storage (json_util.hpp); the request's `original` lives in it.
Result<ChatRequest> parse_anthropic_request(std::string_view body,
                                            boost::json::monotonic_resource* scratch = nullptr);
// Consecutive tool messages (and a user message right after them) become one user message;
// tool-call arguments must be JSON objects (bad_request naming the field otherwise).
Result<std::string> emit_anthropic_request(const ChatRequest& request);

Result<ChatResponse> parse_anthropic_response(std::string_view body);
std::string emit_anthropic_response(const ChatResponse& response);

// Tool-call indexes are numbered among tool_use blocks (0, 1, ...), not content blocks.
class AnthropicStreamDecoder final : public StreamDecoder {
  public:
    AnthropicStreamDecoder();
    ~AnthropicStreamDecoder() override;
    Result<void> decode(std::string_view event, std::string_view data,
                        std::vector<StreamDelta>& out) override;

  private:
    std::unique_ptr<EventJson> json_;
    std::map<std::int64_t, int> tool_index_by_block_;
    Usage started_;  // message_start's usage (its cache reads and writes)
};

// message_start (sent lazily with the usage known by then), one content block per run of
// text / thinking / tool call, message_delta (stop_reason + usage) and message_stop on done.
class AnthropicStreamEncoder final : public StreamEncoder {
  public:
    explicit AnthropicStreamEncoder(StreamMeta meta) : meta_(std::move(meta)) {}
    void encode(const StreamDelta& delta, std::string& out) override;
    void finish(std::string& out) override;

  private:
    enum class Block { none, text, thinking, tool };
    void ensure_started(std::string& out);
    void open_block(Block kind, const StreamDelta& d, std::string& out);
    void close_block(std::string& out);
    StreamMeta meta_;
    Usage usage_;
    std::optional<FinishReason> finish_;
    Block block_ = Block::none;
    int block_index_ = -1;
    int tool_index_ = -1;
    bool started_ = false;
    bool terminated_ = false;
};

}  // namespace tokenradar::dialect
