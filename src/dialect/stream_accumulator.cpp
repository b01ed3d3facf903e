#include <tokenradar/dialect/stream_accumulator.hpp>

namespace tokenradar::dialect {

void StreamAccumulator::on_event(std::int64_t t_ns, std::span<const StreamDelta> deltas) {
    ++events_;
    if (!times_.first_chunk) times_.first_chunk = t_ns;
    bool output = false;
    bool answer = false;
    for (const StreamDelta& d : deltas) {
        using K = StreamDelta::Kind;
        if (d.carries_output()) {
            output = true;
            output_bytes_ += d.kind == K::tool_call ? d.arguments.size() : d.text.size();
            if (d.kind == K::text) answer = true;
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
            case K::done:
                if (!saw_done_) {
                    saw_done_ = true;
                    times_.done = t_ns;
                }
                break;
            default:
                break;
        }
    }
    if (output) {
        if (times_.last_token) gaps_.push_back(t_ns - *times_.last_token);
        if (!times_.first_token) times_.first_token = t_ns;
        times_.last_token = t_ns;
        ++output_events_;
    }
    if (answer) {
        if (!times_.first_answer) times_.first_answer = t_ns;
        ++answer_events_;
    }
}

void StreamAccumulator::on_end(std::int64_t t_ns) {
    if (!times_.done) times_.done = t_ns;
}

}  // namespace tokenradar::dialect
