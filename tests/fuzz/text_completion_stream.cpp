// libFuzzer target: a legacy text completions stream (what the gateway's /v1/completions relay
// reads from its upstream) through TextCompletionStreamDecoder; see stream_fuzz.hpp. The
// deltas are also re-encoded as text_completion chunks, which must decode again.
#include "stream_fuzz.hpp"

#include <tokenradar/dialect/text_completion.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::dialect;
    TextCompletionStreamDecoder decoder;
    const std::vector<StreamDelta> all = fuzz_stream(decoder, data, size);
    TextCompletionStreamEncoder encoder(StreamMeta{"cmpl-1", "model", 0, true});
    TextCompletionStreamDecoder again;
    check_reencoded(encoder, again, all);
    return 0;
}
