// libFuzzer target: see stream_fuzz.hpp.
#include "stream_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return tokenradar::dialect::fuzz_stream(tokenradar::dialect::Api::openai_responses, data, size);
}
