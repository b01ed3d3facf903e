#pragma once
// Server-sent events parser (WHATWG HTML "event stream interpretation"), sans-IO: bytes in,
// events out. It never suspends, never blocks and owns no socket; the caller moves bytes.

#include <tokenradar/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace tokenradar::sse {

// One dispatched event, or one comment line when SseParser::Options::expose_comments is set.
// The views point into the parser and are valid only during the callback that receives them.
struct SseEvent {
    std::string_view event;              // "message" when the block had no `event:` field
    std::string_view data;               // `data:` lines joined with "\n"; for a comment, the text
                                         // after the colon (one leading space stripped)
    std::string_view id;                 // the last event ID (persists across events, per the spec)
    std::optional<std::uint32_t> retry;  // a valid `retry:` seen in this event's block
    bool is_comment = false;             // a ':' line; data holds the text after the ':'
    // How many `data:` lines SseParser joined into data (0 for a comment). At 1, data holds no
    // CR or LF, so it can be written back as one line without a scan (SseWriter::data_line).
    std::size_t data_lines = 0;
};

class SseParser {
  public:
    struct Options {
        // Bytes held between calls (a partial line plus the data of an undispatched event).
        // Exceeding it fails feed() with Errc::protocol_error instead of growing without bound.
        std::size_t max_buffered_bytes = 1 << 20;
        // Deliver ':' comment lines (heartbeats) to the callback as SseEvent{is_comment=true}.
        bool expose_comments = false;
    };

    SseParser() = default;
    explicit SseParser(Options options) : options_(options) {}

    // Parses bytes (any split: a chunk may end anywhere, even between CR and LF) and calls
    // on_event(const SseEvent&) for each complete event. After an error every later call
    // fails too, until reset().
    template <class F>
    Result<void> feed(std::string_view bytes, F&& on_event) {
        auto thunk = [](void* ctx, const SseEvent& e) {
            (*static_cast<std::remove_reference_t<F>*>(ctx))(e);
        };
        return feed_impl(bytes, Sink{&on_event, thunk});
    }

    // End of stream. An event not yet terminated by a blank line is discarded, as the spec
    // says; returns true when something was discarded (a truncated stream).
    bool finish() noexcept;

    // Forget everything, including the last event ID and a sticky error.
    void reset() noexcept;

    // The last valid `retry:` value seen anywhere in the stream.
    std::optional<std::uint32_t> last_retry() const noexcept { return last_retry_; }
    std::string_view last_event_id() const noexcept { return last_id_; }
    std::size_t buffered_bytes() const noexcept { return line_.size() + data_.size(); }

  private:
    struct Sink {
        void* ctx;
        void (*fn)(void*, const SseEvent&);
    };

    Result<void> feed_impl(std::string_view bytes, Sink sink);
    Result<void> feed_lines(std::string_view bytes, Sink sink);
    void process_line(std::string_view line, Sink sink);
    void dispatch(Sink sink);
    Result<void> check_limit();

    Options options_{};
    std::string line_;            // partial line carried over from the previous feed
    std::string data_;            // data buffer of the event being built (each line + '\n')
    std::size_t data_lines_ = 0;  // lines in data_
    std::string event_;           // event type buffer
    std::string last_id_;
    std::optional<std::uint32_t> retry_;
    std::optional<std::uint32_t> last_retry_;
    bool started_ = false;     // BOM check done
    bool skip_lf_ = false;     // previous chunk ended with CR: a leading LF belongs to it
    bool has_fields_ = false;  // a field line was seen since the last dispatch
    bool failed_ = false;
};

}  // namespace tokenradar::sse
