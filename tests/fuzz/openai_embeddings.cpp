// libFuzzer target: an embeddings answer from an upstream, read for its first vector and its
// usage; the usage scan from the end must agree with a full parse where the two can agree.
#include <tokenradar/dialect/embeddings.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace json = boost::json;
    using namespace tokenradar::dialect;
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    if (auto vector = first_embedding(body)) {
        if (vector->empty() || vector->size() > kMaxEmbeddingDimension) std::abort();
    }
    const auto scanned = embeddings_prompt_tokens(body);
    if (scanned && *scanned < 0) std::abort();

    // The differential check: a body without escapes (so the text `"usage"` is what it
    // looks like) holding it once, as its top-level key, with an object of at most the
    // scan's window.
    boost::system::error_code ec;
    const json::value whole = json::parse(body, ec);
    if (ec || !whole.is_object() || body.find('\\') != std::string_view::npos) return 0;
    const auto first = body.find("\"usage\"");
    if (first == std::string_view::npos ||
        body.find("\"usage\"", first + 1) != std::string_view::npos)
        return 0;
    const auto* usage = whole.as_object().if_contains("usage");
    if (usage == nullptr || !usage->is_object()) return 0;
    json::parser parser;
    const std::size_t open = body.find('{', first);
    const std::size_t length = parser.write_some(body.substr(open), ec);
    if (ec || length > kMaxEmbeddingsUsageBytes) return 0;
    const auto* tokens = usage->as_object().if_contains("prompt_tokens");
    const bool countable = tokens != nullptr && tokens->is_int64() && tokens->as_int64() >= 0;
    if (countable != scanned.has_value()) std::abort();
    if (countable && *scanned != tokens->as_int64()) std::abort();
    return 0;
}
