// What the doors of other dialects need besides the chat relay (gateway.cpp routes them): the
// Gemini door's URL paths, its model list, and the API key Google's clients may put in the URL.
#include "gateway_impl.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <fmt/format.h>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

constexpr std::string_view kGeminiModels = "/v1beta/models/";

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// A Gemini Model resource: what models.list and models.get of the Google GenAI SDK read.
json::object gemini_model(const VirtualModel& m) {
    return json::object{
        {"name", "models/" + m.name},
        {"baseModelId", m.name},
        {"version", "tokenradar"},
        {"displayName", m.name},
        {"supportedGenerationMethods", json::array{"generateContent", "streamGenerateContent"}}};
}

// The value of query parameter `name` (decoded); nullopt when absent or the query is malformed.
std::optional<std::string> query_param(std::string_view target, std::string_view name) {
    if (target.find('?') == std::string_view::npos) return std::nullopt;
    auto parsed = boost::urls::parse_origin_form(target);
    if (!parsed) return std::nullopt;
    for (const auto& p : parsed->params()) {
        if (p.key == name) return std::string(p.value);
    }
    return std::nullopt;
}

}  // namespace

std::string percent_decoded(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const int hi = s[i] == '%' && i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
        const int lo = hi >= 0 ? hex_digit(s[i + 2]) : -1;
        if (lo >= 0) {
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::optional<std::string> query_key(std::string_view target) { return query_param(target, "key"); }

Result<GeminiCall> gemini_call(std::string_view target) {
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view rest = path.substr(kGeminiModels.size());
    const std::size_t colon = rest.rfind(':');
    const std::string_view method = rest.substr(colon + 1);
    GeminiCall call;
    call.model = percent_decoded(rest.substr(0, colon));
    if (call.model.empty()) return Error(Errc::bad_request, "model: expected a model in the path");
    if (method == "streamGenerateContent") {
        call.stream = true;
        if (query_param(target, "alt") != "sse") {
            return Error(Errc::bad_request,
                         "alt: streamGenerateContent is served as server-sent events only: add "
                         "?alt=sse (the Google GenAI SDK does)");
        }
    } else if (method != "generateContent") {
        return Error(Errc::not_found,
                     fmt::format("models/{}:{} is not served here: only generateContent and "
                                 "streamGenerateContent (?alt=sse)",
                                 call.model, method.substr(0, 64)));
    }
    return call;
}

awaitable<void> relay_gemini(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                             std::string request_id, net::HeaderList& headers, RequestKey& key) {
    auto call = gemini_call(request.target());
    if (!call) {
        const Error error = call.error();
        const Errc code = errc_of(error, Errc::bad_request);
        std::string message = error.message;
        co_await send_error(gw, writer, code, std::move(message), headers);
        co_return;
    }
    ClientDoor door;
    door.api = dialect::ClientApi::gemini;
    door.model = call->model;
    door.stream = call->stream;
    co_await relay_chat(gw, request, writer, std::move(request_id), headers, key, door);
}

awaitable<void> send_gemini_models(Gateway::Impl& gw, net::ResponseWriter& writer,
                                   std::string_view id, net::HeaderList headers) {
    std::string body;
    if (id.empty()) {
        json::array models;
        for (const auto& m : gw.config.models) models.push_back(gemini_model(m));
        body = json::serialize(json::object{{"models", std::move(models)}});
    } else {
        std::string name = percent_decoded(id);
        const VirtualModel* model = gw.config.find_model(name);
        if (model == nullptr) {
            std::string message = fmt::format(
                "model '{}' is not served here; GET /v1beta/models lists the models", name);
            co_await send_error(gw, writer, Errc::not_found, std::move(message),
                                std::move(headers));
            co_return;
        }
        body = json::serialize(gemini_model(*model));
    }
    writer.set_filter(nullptr);  // already in Gemini's shape
    co_await writer.send(http::status::ok, "application/json", std::move(body), headers);
}

}  // namespace tokenradar::gateway
