// libFuzzer target, differential: a whole OpenAI response body must meter exactly alike
// through meter_response (whose SAX scan takes the usual shape) and through the full DOM
// parser: the same success or error, and the same id, usage and estimate.
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar;
    using namespace tokenradar::dialect;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    Measurement fast;
    Measurement full;
    const auto metered = meter_response(fast, Api::openai, body);
    const auto parsed = parse_openai_response(body);
    if (parsed) record_response(full, *parsed);
    if (metered.has_value() != parsed.has_value() || !(fast == full)) std::abort();
    if (!metered && metered.error().message != parsed.error().message) std::abort();
    return 0;
}
