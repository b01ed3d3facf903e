#pragma once
// A cached answer in its canonical form: what the model said (answer text, reasoning, tool
// calls), how it ended (finish reason, usage) and when each piece arrived, relative to the
// original upstream request. One form for both kinds of request: a stream's answer replays as
// a JSON body and a JSON answer as a stream, and a stream replays as its original chunks
// (never one collapsed chunk), at once or with their original gaps.
//
// Compact: the pieces' text lives in one pool and each piece is 24 bytes, so an entry costs
// about its text plus 24 bytes a chunk (a 500-chunk answer ~14 KB, where a StreamDelta per
// chunk would be ~150 KB). `bytes()` is what the memory tier charges for it.
//
// encode()/decode(): versioned bytes for the shared tier (Redis). decode() checks every length
// and value (entries come back over the network) and is fuzzed (tests/fuzz/cached_answer.cpp).

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::cache {

// The upstream that produced the answer: the labels of a hit's record.
struct Origin {
    std::string provider;
    std::string model;  // the upstream's model name
    std::string endpoint;
    std::string region;
    std::string api;
    bool operator==(const Origin&) const = default;
};

struct AnswerPiece {
    enum class Kind : std::uint8_t { text, reasoning, tool_call };
    std::int64_t at_ns = 0;  // since the original request was sent
    std::uint32_t offset = 0;
    std::uint32_t size = 0;   // text, reasoning, or a fragment of a tool call's arguments
    std::uint16_t index = 0;  // tool_call: the call's index
    Kind kind = Kind::text;
    bool operator==(const AnswerPiece&) const = default;
};

// The first delta of a tool call: its id, name and Gemini signature.
struct ToolCallHead {
    std::uint32_t piece = 0;  // the piece it arrived with
    std::string id;
    std::string name;
    std::string signature;
    bool operator==(const ToolCallHead&) const = default;
};

struct CachedAnswer {
    Origin origin;
    std::string response_id;  // the original's (a hit gets its own)
    std::string model;        // the answer's `model` field
    std::vector<AnswerPiece> pieces;
    std::string text;  // every piece's bytes
    std::vector<ToolCallHead> tool_heads;
    std::optional<dialect::FinishReason> finish_reason;
    dialect::Usage usage;
    std::int64_t first_token_ns = 0;  // the original's TTFT from send (0: no output)
    std::int64_t e2e_ns = 0;          // the original's end to end from send
    std::int64_t stored_at_us = 0;    // wall clock when it was stored (max-age)
    bool from_stream = false;

    [[nodiscard]] std::string_view piece_text(const AnswerPiece& p) const {
        return std::string_view(text).substr(p.offset, p.size);
    }
    // What the memory tier charges: the struct, its vectors and strings.
    [[nodiscard]] std::size_t bytes() const noexcept;
    // The whole answer as a chat.completion (text, reasoning, tool calls, finish, usage).
    [[nodiscard]] dialect::ChatResponse response() const;

    bool operator==(const CachedAnswer&) const = default;
};

// Builds a CachedAnswer from an answer's deltas as they arrive (a relayed stream), or from a
// whole response. Only an answer that completed is one: `take()` is nullopt when the terminal
// event never came or an error delta did.
class AnswerBuilder {
  public:
    void add(const dialect::StreamDelta& delta, std::int64_t at_ns);
    void add(std::span<const dialect::StreamDelta> deltas, std::int64_t at_ns) {
        for (const auto& d : deltas) add(d, at_ns);
    }
    // The answer, when its terminal event arrived and no error did; `e2e_ns` is the original's
    // end (the terminal event's time when 0).
    std::optional<CachedAnswer> take(Origin origin, std::int64_t stored_at_us, bool from_stream,
                                     std::int64_t e2e_ns = 0);
    // The answer's text so far (a caller with an entry size limit stops feeding past it).
    [[nodiscard]] std::size_t bytes_so_far() const noexcept { return answer_.text.size(); }

  private:
    void add_piece(AnswerPiece::Kind kind, std::uint16_t index, std::string_view bytes,
                   std::int64_t at_ns);
    CachedAnswer answer_;
    std::int64_t done_ns_ = -1;
    bool failed_ = false;
};

// A whole (non-streamed) response, all of it at `at_ns` (the body's arrival).
CachedAnswer answer_from_response(const dialect::ChatResponse& response, Origin origin,
                                  std::int64_t at_ns, std::int64_t stored_at_us);

// The answer's deltas in order, each with its time: role, pieces, finish, usage, done. What a
// replay encodes (OpenAiStreamEncoder) and paces.
struct TimedDelta {
    std::int64_t at_ns = 0;
    dialect::StreamDelta delta;
};
std::vector<TimedDelta> replay_deltas(const CachedAnswer& answer);

std::string encode(const CachedAnswer& answer);
// Errc::protocol_error naming the field on anything that encode() would not have written.
Result<CachedAnswer> decode(std::string_view bytes);

}  // namespace tokenradar::cache
