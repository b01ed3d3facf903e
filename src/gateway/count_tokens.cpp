// POST /v1/messages/count_tokens (the Anthropic door's token counting): forwarded to the
// virtual model's first Anthropic upstream with only `model` rewritten, and its answer (or
// Anthropic error) passed back as is. Other upstreams have no equivalent endpoint and the
// gateway keeps no tokenizer: a model without an Anthropic upstream is a 400 saying so, not
// an estimate that would look like a count. Not a generation: no record, no TTFT.

#include "gateway_impl.hpp"

#include <tokenradar/dialect/http_call.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

namespace tokenradar::gateway {
namespace {
namespace http = boost::beast::http;
namespace json = boost::json;
constexpr std::size_t kMaxCountTokensAnswer = 64 * 1024;  // {"input_tokens": N}
constexpr std::string_view kCountTokensSuffix = "/count_tokens";

// The virtual model's first Anthropic upstream, or nullptr.
const UpstreamRef* anthropic_upstream(const GatewayConfig& config, const VirtualModel& model) {
    for (const auto& u : model.upstreams) {
        if (config.providers[u.provider].api == dialect::Api::anthropic) return &u;
    }
    return nullptr;
}

}  // namespace

awaitable<void> relay_count_tokens(Gateway::Impl& gw, net::Request& request,
                                   net::ResponseWriter& writer, net::HeaderList& headers,
                                   RequestKey& key) {
    boost::system::error_code ec;
    json::value body = json::parse(request.body(), ec);
    json::object* o = ec ? nullptr : body.if_object();
    const json::value* model_value = o != nullptr ? o->if_contains("model") : nullptr;
    if (model_value == nullptr || !model_value->is_string()) {
        std::string message = "expected a JSON object with a string \"model\" and \"messages\"";
        co_await send_error(gw, writer, Errc::bad_request, std::move(message), headers);
        co_return;
    }
    const std::string model_name(model_value->get_string());
    const VirtualModel* model = gw.config.find_model(model_name);
    if (model == nullptr) {
        std::string message = fmt::format(
            "model '{}' is not served here; GET /v1/models lists the models", model_name);
        co_await send_error(gw, writer, Errc::not_found, std::move(message), headers);
        co_return;
    }
    if (key.key) {
        const bool admitted = co_await admit_key(gw, writer, key, model_name, headers);
        if (!admitted) co_return;
    }
    const UpstreamRef* ref = anthropic_upstream(gw.config, *model);
    if (ref == nullptr) {
        std::string message = fmt::format(
            "count_tokens: model '{}' has no Anthropic upstream; token counts come from "
            "Anthropic's own count_tokens, and this gateway keeps no tokenizer to estimate them",
            model_name);
        co_await send_error(gw, writer, Errc::unsupported, std::move(message), headers);
        co_return;
    }
    const ProviderConfig& provider = gw.config.providers[ref->provider];
    (*o)["model"] = ref->model;
    // The Messages call's path and auth headers, then its count_tokens sibling.
    dialect::HttpCall call =
        dialect::make_http_call(dialect::Api::anthropic, provider.base.target, ref->model, false,
                                json::serialize(*o), provider.key);
    net::Url url = provider.base;
    url.target = call.target + std::string(kCountTokensSuffix);
    auto result = co_await gw.client(ref->provider)
                      .request(http::verb::post, url, call.headers, std::move(call.body),
                               kMaxCountTokensAnswer);
    if (!result) {
        const Errc code = errc_of(result.error(), Errc::connection_error);
        if (code == Errc::cancelled) co_return;
        std::string message = fmt::format("upstream {}: {}", provider.name, result.error().message);
        co_await send_error(gw, writer, code, std::move(message), headers);
        co_return;
    }
    headers.emplace_back(kUpstreamHeader, upstream_label(provider.name, ref->model));
    if (auto id = upstream_request_id(result->headers))
        headers.emplace_back(kUpstreamRequestIdHeader, *id);
    if (result->status != 200) provider.key.redact_in(result->body);  // an error may echo the key
    gw.metrics.observe_request(result->status == 200
                                   ? RequestStatus::ok
                                   : RequestStatus::http(static_cast<int>(result->status)));
    writer.set_filter(nullptr);  // the upstream answered in the door's dialect already
    const auto status = static_cast<http::status>(result->status);
    co_await writer.send(status, "application/json", std::move(result->body), headers);
}

}  // namespace tokenradar::gateway
