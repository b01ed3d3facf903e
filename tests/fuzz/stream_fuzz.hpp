#pragma once
// Shared body of the <dialect>_stream fuzz targets: arbitrary bytes through SseParser (small
// buffer bound), the dialect's decoder and a StreamAccumulator; the decoded deltas are then
// re-encoded in every dialect, and what our encoders write must decode without error.

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/stream_accumulator.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

inline bool decode_all(StreamDecoder& decoder, std::string_view bytes, std::size_t chunk,
                       std::vector<StreamDelta>& all, StreamAccumulator* acc) {
    sse::SseParser parser(sse::SseParser::Options{.max_buffered_bytes = 64 * 1024});
    bool ok = true;
    std::int64_t t = 0;
    std::vector<StreamDelta> deltas;
    auto sink = [&](const sse::SseEvent& e) {
        deltas.clear();
        if (!decoder.decode(e.event, e.data, deltas)) ok = false;
        if (acc) acc->on_event(++t, deltas);
        all.insert(all.end(), deltas.begin(), deltas.end());
    };
    while (!bytes.empty()) {
        std::size_t n = chunk < bytes.size() ? chunk : bytes.size();
        if (!parser.feed(bytes.substr(0, n), sink)) return false;
        bytes.remove_prefix(n);
    }
    parser.finish();
    if (acc) acc->on_end(++t);
    return ok;
}

inline bool decode_all(Api api, std::string_view bytes, std::size_t chunk,
                       std::vector<StreamDelta>& all, StreamAccumulator* acc) {
    auto decoder = make_stream_decoder(api);
    return decode_all(*decoder, bytes, chunk, all, acc);
}

// What our encoder writes for `all` must decode without error.
inline void check_reencoded(StreamEncoder& encoder, StreamDecoder& decoder,
                            const std::vector<StreamDelta>& all) {
    std::string out;
    for (const auto& d : all) encoder.encode(d, out);
    encoder.finish(out);
    std::vector<StreamDelta> again;
    if (!decode_all(decoder, out, out.size() + 1, again, nullptr)) std::abort();
}

// `decoder`: the stream's shape (a dialect's, or another shape of one: text completions).
inline std::vector<StreamDelta> fuzz_stream(StreamDecoder& decoder, const std::uint8_t* data,
                                            std::size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::size_t chunk = size == 0 ? 1 : 1 + data[0] % 97;
    std::vector<StreamDelta> all;
    StreamAccumulator acc;
    decode_all(decoder, bytes, chunk, all, &acc);
    for (Api to : {Api::openai, Api::anthropic, Api::gemini, Api::openai_responses}) {
        auto encoder = make_stream_encoder(to, StreamMeta{"id", "model", 0, true});
        auto again = make_stream_decoder(to);
        check_reencoded(*encoder, *again, all);
    }
    return all;
}

inline int fuzz_stream(Api api, const std::uint8_t* data, std::size_t size) {
    auto decoder = make_stream_decoder(api);
    fuzz_stream(*decoder, data, size);
    return 0;
}

}  // namespace tokenradar::dialect
