// cache::decode reads entries back from the shared tier (Redis), which another version, a
// corrupt write or anyone with access to that Redis may have put there: arbitrary bytes must
// give an answer or a protocol_error, never a crash or an unbounded allocation. Whatever
// decodes must re-encode to the same bytes and replay as well-formed JSON chunks.

#include <tokenradar/cache/answer.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace cache = tokenradar::cache;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto decoded = cache::decode(bytes);
    if (!decoded) return 0;
    if (cache::encode(*decoded) != bytes) std::abort();
    tokenradar::dialect::OpenAiStreamEncoder encoder({"chatcmpl-x", decoded->model, 1, true});
    std::string out;
    for (const auto& d : cache::replay_deltas(*decoded)) encoder.encode(d.delta, out);
    encoder.finish(out);
    for (std::size_t at = out.find("data: {"); at != std::string::npos;
         at = out.find("data: {", at + 1)) {
        const auto end = out.find("\n\n", at);
        boost::system::error_code ec;
        boost::json::parse(std::string_view(out).substr(at + 6, end - at - 6), ec);
        if (ec) std::abort();
    }
    (void)tokenradar::dialect::emit_openai_response(decoded->response());
    return 0;
}
