#include <tokenradar/dialect/stream_accumulator.hpp>

namespace tokenradar::dialect {

EventClass classify(std::span<const StreamDelta> deltas) noexcept {
    EventClass c;
    for (const StreamDelta& d : deltas) {
        if (d.carries_output()) {
            c.output = true;
            if (d.kind == StreamDelta::Kind::text) c.answer = true;
        }
        if (d.kind == StreamDelta::Kind::done) c.terminal = true;
    }
    return c;
}

EventClass StreamAccumulator::on_event(std::int64_t t_ns, std::span<const StreamDelta> deltas) {
    using K = StreamDelta::Kind;
    ++events_;
    if (!times_.first_chunk) times_.first_chunk = t_ns;
    EventClass c = classify(deltas);
    for (const StreamDelta& d : deltas) {
        if (d.carries_output()) {
            output_bytes_ += d.kind == K::tool_call ? d.arguments.size() : d.text.size();
        }
        switch (d.kind) {
            case K::usage:
                usage_.merge(d.usage);
                break;
            case K::finish:
                finish_ = d.finish_reason;
                break;
            case K::error:
                if (!error_) error_ = StreamError{d.error_code, d.error_type, d.text};
                break;
            default:
                break;
        }
    }
    if (c.terminal && !saw_done_) {
        saw_done_ = true;
        times_.done = t_ns;
    }
    if (c.output) {
        if (times_.last_token) gaps_.push_back(t_ns - *times_.last_token);
        if (!times_.first_token) times_.first_token = t_ns;
        times_.last_token = t_ns;
        ++output_events_;
    }
    if (c.answer) {
        if (!times_.first_answer) times_.first_answer = t_ns;
        ++answer_events_;
    }
    return c;
}

void StreamAccumulator::on_end(std::int64_t t_ns) {
    if (!times_.done) times_.done = t_ns;
}

}  // namespace tokenradar::dialect
