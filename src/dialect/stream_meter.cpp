#include <tokenradar/dialect/stream_meter.hpp>

#include <tokenradar/dialect/codec.hpp>

#include <optional>
#include <utility>

namespace tokenradar::dialect {

StreamMeter::StreamMeter(Api api) : decoder_(make_stream_decoder(api)) {}
StreamMeter::StreamMeter(std::unique_ptr<StreamDecoder> decoder) : decoder_(std::move(decoder)) {}

Result<void> StreamMeter::feed(std::string_view piece, std::int64_t t_ns, const OnEvent& on_event) {
    std::optional<Error> failure;
    auto fed = parser_.feed(piece, [&](const sse::SseEvent& event) {
        if (failure) return;
        deltas_.clear();
        if (auto decoded = decoder_->decode(event.event, event.data, deltas_); !decoded) {
            failure = decoded.error();
            return;
        }
        for (const auto& d : deltas_) {
            if (d.kind == StreamDelta::Kind::role && response_id_.empty()) response_id_ = d.id;
        }
        acc_.on_event(t_ns, deltas_);
        if (on_event) on_event(event, deltas_);
    });
    if (failure) return *failure;
    if (!fed) return fed.error();
    return {};
}

Result<void> StreamMeter::end(std::int64_t t_ns) {
    const bool inside_event = parser_.finish();
    acc_.on_end(t_ns);
    if (inside_event) return Error(Errc::protocol_error, "the stream ended inside an event");
    return {};
}

void StreamMeter::abandon(std::int64_t t_ns) {
    if (!acc_.times().done) acc_.on_end(t_ns);
}

}  // namespace tokenradar::dialect
