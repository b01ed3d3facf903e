#include <tokenradar/dialect/embeddings.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>

namespace tokenradar::dialect {
namespace json = boost::json;

std::optional<std::vector<float>> first_embedding(std::string_view body) {
    boost::system::error_code ec;
    const json::value v = json::parse(body, ec);
    const auto* o = ec ? nullptr : v.if_object();
    const auto* data = o != nullptr ? o->if_contains("data") : nullptr;
    const auto* items = data != nullptr ? data->if_array() : nullptr;
    if (items == nullptr || items->empty() || !(*items)[0].is_object()) return std::nullopt;
    const auto* embedding = (*items)[0].as_object().if_contains("embedding");
    const auto* numbers = embedding != nullptr ? embedding->if_array() : nullptr;
    if (numbers == nullptr || numbers->empty() || numbers->size() > kMaxEmbeddingDimension)
        return std::nullopt;
    std::vector<float> out;
    out.reserve(numbers->size());
    for (const auto& n : *numbers) {
        if (!n.is_number()) return std::nullopt;
        out.push_back(n.to_number<float>());
    }
    return out;
}

namespace {

constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the object of the last `"usage":` key starts, or npos. A `"usage"` that is a string
// value (followed by `,` or `}`) or the tail of an escaped key (`"x\"usage"`, preceded by a
// backslash) is not a key: a key string is preceded by `{` or `,`.
std::size_t usage_object(std::string_view body) {
    constexpr std::string_view kKey = "\"usage\"";
    for (std::size_t at = body.rfind(kKey); at != std::string_view::npos;
         at = at == 0 ? std::string_view::npos : body.rfind(kKey, at - 1)) {
        std::size_t before = at;
        while (before > 0 && is_space(body[before - 1])) --before;
        std::size_t after = at + kKey.size();
        while (after < body.size() && is_space(body[after])) ++after;
        if (before == 0 || (body[before - 1] != '{' && body[before - 1] != ',')) continue;
        if (after >= body.size() || body[after] != ':') continue;
        ++after;
        while (after < body.size() && is_space(body[after])) ++after;
        return after < body.size() && body[after] == '{' ? after : std::string_view::npos;
    }
    return std::string_view::npos;
}

}  // namespace

std::optional<std::int64_t> embeddings_prompt_tokens(std::string_view body) {
    const std::size_t open = usage_object(body);
    if (open == std::string_view::npos) return std::nullopt;
    json::parser parser;
    boost::system::error_code ec;
    // write_some stops after the object (the answer's closing brace is not read); an object
    // cut short at kMaxEmbeddingsUsageBytes is an error.
    parser.write_some(body.substr(open, kMaxEmbeddingsUsageBytes), ec);
    if (ec) return std::nullopt;
    const json::value usage = parser.release();
    const auto* tokens =
        usage.is_object() ? usage.as_object().if_contains("prompt_tokens") : nullptr;
    if (tokens == nullptr || !tokens->is_int64() || tokens->as_int64() < 0) return std::nullopt;
    return tokens->as_int64();
}

}  // namespace tokenradar::dialect
