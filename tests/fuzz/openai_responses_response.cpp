// libFuzzer target: a whole Responses body (what bench reads from a Responses target). A body
// that parses is written back as a `response` object, which must parse to the same answer.
#include <tokenradar/dialect/responses.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::dialect;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    auto parsed = parse_responses_response(body);
    if (!parsed) return 0;
    auto again = parse_responses_response(emit_responses_response(*parsed, parsed->created));
    if (!again) std::abort();
    // The writer drops reasoning (no item for it) and names the id resp_<id>.
    if (again->text != parsed->text || again->tool_calls != parsed->tool_calls ||
        again->usage.output_tokens.value_or(0) != parsed->usage.output_tokens.value_or(0))
        std::abort();
    return 0;
}
