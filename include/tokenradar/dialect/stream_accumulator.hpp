#pragma once
// Metering of one stream (metrics.md): which events carried output, the timestamps derived
// from them, the last cumulative usage, the finish reason and any in-stream error. Sans-IO
// and clock-free: the caller passes the steady-clock time of each event.

#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tokenradar::dialect {

struct StreamTimes {
    std::optional<std::int64_t> first_chunk;   // first event of any kind
    std::optional<std::int64_t> first_token;   // first event carrying output (any kind)
    std::optional<std::int64_t> first_answer;  // first event carrying answer text
    std::optional<std::int64_t> last_token;    // last event carrying output
    std::optional<std::int64_t> done;          // terminal event, else end of body
    bool operator==(const StreamTimes&) const = default;
};

struct StreamError {
    Errc code = Errc::upstream_http_error;
    std::string type;
    std::string message;
};

// What one event carried, as metrics.md classifies it.
struct EventClass {
    bool output = false;    // non-empty answer text, reasoning text or tool-call arguments
    bool answer = false;    // non-empty answer text
    bool terminal = false;  // a done delta
    bool operator==(const EventClass&) const = default;
};

EventClass classify(std::span<const StreamDelta> deltas) noexcept;

class StreamAccumulator {
  public:
    // One call per SSE event, with the deltas it decoded to (possibly none), t_ns from the
    // steady clock when the event was read. Returns how the event was classified.
    EventClass on_event(std::int64_t t_ns, std::span<const StreamDelta> deltas);
    // End of the response body; sets `done` if no terminal event did.
    void on_end(std::int64_t t_ns);

    const StreamTimes& times() const noexcept { return times_; }
    const Usage& usage() const noexcept { return usage_; }  // merged, last value wins
    bool has_usage() const noexcept { return !usage_.empty(); }
    std::optional<FinishReason> finish_reason() const noexcept { return finish_; }
    const std::optional<StreamError>& error() const noexcept { return error_; }
    bool saw_done() const noexcept { return saw_done_; }
    std::size_t events() const noexcept { return events_; }
    std::size_t output_events() const noexcept { return output_events_; }
    std::size_t answer_events() const noexcept { return answer_events_; }
    // Bytes of generated output (answer + reasoning + tool arguments), for the documented
    // token estimate when no usage arrives.
    std::size_t output_bytes() const noexcept { return output_bytes_; }
    // Gaps between consecutive output-carrying events, in ns (output_events - 1 entries).
    const std::vector<std::int64_t>& chunk_gaps_ns() const noexcept { return gaps_; }

  private:
    StreamTimes times_;
    Usage usage_;
    std::optional<FinishReason> finish_;
    std::optional<StreamError> error_;
    std::vector<std::int64_t> gaps_;
    std::size_t events_ = 0;
    std::size_t output_events_ = 0;
    std::size_t answer_events_ = 0;
    std::size_t output_bytes_ = 0;
    bool saw_done_ = false;
};

}  // namespace tokenradar::dialect
