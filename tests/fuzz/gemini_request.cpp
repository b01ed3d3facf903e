// libFuzzer target: the gemini request parser over arbitrary bytes; a parsed request is emitted
// in every dialect and parsed back, which must not crash either.
#include <tokenradar/dialect/codec.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::dialect;
    std::string_view body(reinterpret_cast<const char*>(data), size);
    auto req = parse_request(Api::gemini, body, "model", true);
    if (!req) return 0;
    for (Api to : {Api::openai, Api::anthropic, Api::gemini}) {
        auto out = emit_request(to, *req);
        if (out) (void)parse_request(to, *out, req->model, req->stream);
    }
    (void)parse_response(Api::gemini, body);
    (void)parse_error_body(Api::gemini, 500, body);
    return 0;
}
