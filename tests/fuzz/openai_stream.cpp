// libFuzzer target: see stream_fuzz.hpp. For OpenAI also differential: every event must
// decode exactly alike through the decoder's fast paths (the chunk scanner and its envelope
// match) and through the full DOM decoder, fed the same events in the same order.
#include "stream_fuzz.hpp"

#include <tokenradar/dialect/openai.hpp>

namespace {

void fast_paths_match_the_full_decoder(std::string_view bytes) {
    using tokenradar::dialect::OpenAiStreamDecoder;
    using tokenradar::dialect::StreamDelta;
    tokenradar::sse::SseParser parser(
        tokenradar::sse::SseParser::Options{.max_buffered_bytes = 64 * 1024});
    OpenAiStreamDecoder fast;
    OpenAiStreamDecoder full(false);
    std::vector<StreamDelta> a;
    std::vector<StreamDelta> b;
    (void)parser.feed(bytes, [&](const tokenradar::sse::SseEvent& e) {
        a.clear();
        b.clear();
        const auto fast_result = fast.decode(e.event, e.data, a);
        const auto full_result = full.decode(e.event, e.data, b);
        if (fast_result.has_value() != full_result.has_value() || a != b) std::abort();
        // An error is the full decoder's, word for word.
        if (!fast_result && fast_result.error().message != full_result.error().message)
            std::abort();
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fast_paths_match_the_full_decoder(std::string_view(reinterpret_cast<const char*>(data), size));
    return tokenradar::dialect::fuzz_stream(tokenradar::dialect::Api::openai, data, size);
}
