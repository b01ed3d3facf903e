// libFuzzer target: a whole legacy text completion answer (what the gateway's /v1/completions
// relay meters) through parse_text_completion; what it parses must survive
// emit_text_completion and parse again with the same id, model, text and usage (an unknown
// finish reason is written as "stop", absent token counts as 0).
#include <tokenradar/dialect/text_completion.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::dialect;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    const auto parsed = parse_text_completion(body);
    if (!parsed) return 0;
    const auto again = parse_text_completion(emit_text_completion(*parsed));
    if (!again || again->id != parsed->id || again->model != parsed->model ||
        again->text != parsed->text || again->created != parsed->created ||
        again->usage.prompt_tokens.value_or(0) != parsed->usage.prompt_tokens.value_or(0) ||
        again->usage.output_tokens.value_or(0) != parsed->usage.output_tokens.value_or(0)) {
        std::abort();
    }
    return 0;
}
