#pragma once
// One provider stream's body as it arrives: bytes -> SSE events -> deltas -> metering
// (StreamAccumulator). The one read path of bench's probe and the gateway's relay, so both
// stamp and count exactly alike. Sans-IO: the caller reads the socket and passes the time.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_accumulator.hpp>
#include <tokenradar/dialect/stream_delta.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

class StreamMeter {
  public:
    // Called for every event that decoded, with its deltas (already metered).
    using OnEvent = std::function<void(const sse::SseEvent&, std::span<const StreamDelta>)>;

    explicit StreamMeter(Api api);
    // A stream of another shape of a dialect (the legacy text completions: text_completion.hpp).
    explicit StreamMeter(std::unique_ptr<StreamDecoder> decoder);

    // One piece of body, read at steady time `t_ns` (every event it completes shares it).
    // The first malformed event (or an over-long line) is the error; nothing after it in
    // this piece is decoded, and the stream should be abandoned.
    Result<void> feed(std::string_view piece, std::int64_t t_ns, const OnEvent& on_event = {});
    // The body ended at `t_ns`: Errc::protocol_error when it ended inside an event.
    Result<void> end(std::int64_t t_ns);
    // The stream stopped early (failure, cancellation): stamps the end if nothing did.
    void abandon(std::int64_t t_ns);

    [[nodiscard]] const StreamAccumulator& accumulator() const noexcept { return acc_; }
    // The provider's response id, from the first role delta ("" until then).
    [[nodiscard]] const std::string& response_id() const noexcept { return response_id_; }

  private:
    sse::SseParser parser_;
    std::unique_ptr<StreamDecoder> decoder_;
    StreamAccumulator acc_;
    std::vector<StreamDelta> deltas_;
    std::string response_id_;
};

}  // namespace tokenradar::dialect
