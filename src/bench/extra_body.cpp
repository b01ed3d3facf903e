#include <tokenradar/bench/extra_body.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

namespace tokenradar::bench {
namespace {

namespace json = boost::json;

std::string_view kind_of(const json::value& v) {
    switch (v.kind()) {
        case json::kind::array:
            return "an array";
        case json::kind::string:
            return "a string";
        case json::kind::bool_:
            return "a boolean";
        case json::kind::null:
            return "null";
        case json::kind::object:
            return "an object";
        default:
            return "a number";
    }
}

// Adds `extra` to `into` without replacing anything `into` has. `nested` is set when a key
// went into one of `into`'s objects rather than in as a new key.
Result<void> merge_new(json::object& into, const json::object& extra, const std::string& path,
                       bool& nested) {
    for (const auto& [key, value] : extra) {
        const std::string here =
            path.empty() ? std::string(key) : fmt::format("{}.{}", path, std::string_view(key));
        json::value* have = into.if_contains(key);
        if (have == nullptr) {
            into[key] = value;
            continue;
        }
        if (have->is_object() && value.is_object()) {
            nested = true;
            if (auto merged = merge_new(have->as_object(), value.as_object(), here, nested);
                !merged)
                return merged;
            continue;
        }
        return Error(
            Errc::bad_request,
            fmt::format(
                "extra body field '{}': bench already sets it for this API (to {}); extra fields "
                "may add to the request but not change it (set max_tokens, temperature and "
                "stream in the workload)",
                here, json::serialize(*have)));
    }
    return {};
}

}  // namespace

Result<json::object> parse_extra_body(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec) return Error(Errc::bad_request, fmt::format("not valid JSON ({})", ec.message()));
    if (!v.is_object()) {
        return Error(Errc::bad_request,
                     fmt::format("expected a JSON object such as {{\"ignore_eos\": true}}, got {}",
                                 kind_of(v)));
    }
    return std::move(v.as_object());
}

void overlay_extra_body(json::object& into, const json::object& layer) {
    for (const auto& [key, value] : layer) {
        json::value* have = into.if_contains(key);
        if (have != nullptr && have->is_object() && value.is_object()) {
            overlay_extra_body(have->as_object(), value.as_object());
        } else {
            into[key] = value;
        }
    }
}

json::object effective_extra_body(const json::object& workload, const json::object& target) {
    json::object out = workload;
    overlay_extra_body(out, target);
    return out;
}

Result<std::string> merge_extra_body(std::string body, const json::object& extra) {
    if (extra.empty()) return body;
    boost::system::error_code ec;
    json::value parsed = json::parse(body, ec);
    if (ec || !parsed.is_object())
        return Error(Errc::internal, "extra body: the request body is not a JSON object");
    json::object& root = parsed.as_object();
    const bool was_empty = root.empty();
    bool nested = false;
    if (auto merged = merge_new(root, extra, "", nested); !merged) return merged.error();
    if (nested) return json::serialize(root);
    // Only new top-level keys: the dialect's own bytes stay as they were (numbers as it
    // wrote them), the fields go before the closing brace.
    const std::size_t close = body.rfind('}');
    std::string tail;
    for (const auto& [key, value] : extra) {
        if (!tail.empty() || !was_empty) tail.push_back(',');
        tail += json::serialize(json::string_view(key));
        tail.push_back(':');
        tail += json::serialize(value);
    }
    body.insert(close, tail);
    return body;
}

}  // namespace tokenradar::bench
