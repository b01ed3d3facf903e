// POST /v1/embeddings: passed through to the first OpenAI-dialect upstream of the virtual
// model, with only `model` rewritten. Measured as one non-streaming attempt (task
// "embeddings": TTFB and E2E, no tokens out); the answer's `usage.prompt_tokens` is the
// record's prompt tokens and what the client's virtual key is charged.

#include "gateway_impl.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/embeddings.hpp>
#include <tokenradar/dialect/http_call.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

namespace tokenradar::gateway {
namespace {
namespace http = boost::beast::http;
namespace json = boost::json;
constexpr std::size_t kMaxEmbeddingsBody = 64 * 1024 * 1024;
}  // namespace

const UpstreamRef* first_openai_upstream(const GatewayConfig& config, const VirtualModel& model) {
    for (const auto& u : model.upstreams) {
        if (config.providers[u.provider].api == dialect::Api::openai) return &u;
    }
    return nullptr;
}

Measurement start_passthrough_record(const std::string& request_id, const ProviderConfig& provider,
                                     const std::string& upstream_model, std::string task,
                                     bool stream, std::string_view client_key) {
    Measurement m;
    m.request_id = request_id;
    m.labels.provider = provider.name;
    m.labels.model = upstream_model;
    m.labels.endpoint = provider.base.host;
    m.labels.upstream_region = provider.region;
    m.labels.task = std::move(task);
    m.labels.source = "gateway";
    m.labels.api = "openai";
    m.labels.stream = stream;
    m.labels.client_key = client_key;
    m.t.send = steady_now_ns();
    m.ts_us = wall_now_us();
    return m;
}

std::vector<std::pair<std::string, std::string>> passthrough_headers(
    const ProviderConfig& provider) {
    std::vector<std::pair<std::string, std::string>> headers{{"content-type", "application/json"}};
    if (!provider.key.empty())
        headers.emplace_back("authorization", "Bearer " + provider.key.reveal());
    return headers;
}

awaitable<Result<std::vector<float>>> embed_upstream(Gateway::Impl& gw, const UpstreamRef& ref,
                                                     std::string_view text,
                                                     const std::string& request_id) {
    const ProviderConfig& provider = gw.config.providers[ref.provider];
    Measurement m =
        start_passthrough_record(request_id, provider, ref.model, "embeddings", false, "");
    const std::int64_t t_start = m.t.send;
    net::Url url = provider.base;
    url.target += "/embeddings";
    auto headers = passthrough_headers(provider);
    std::string body = json::serialize(json::object{{"model", ref.model}, {"input", text}});
    auto result = co_await gw.client(ref.provider)
                      .request(http::verb::post, url, headers, std::move(body), kMaxEmbeddingsBody);
    m.t.done = steady_now_ns();
    m.t.sched = m.t.send;
    if (!result) {
        m.status = status_of(result.error().code);
        Error error = result.error();
        gw.record(std::move(m));
        co_return error;
    }
    net::record_timings(m, result->timings, t_start);
    m.t.sched = m.t.send;
    m.http_status = static_cast<int>(result->status);
    std::optional<std::vector<float>> vector;
    if (result->status != 200) {
        m.status = RequestStatus::http(static_cast<int>(result->status));
    } else {
        vector = dialect::first_embedding(result->body);
        if (!vector) m.status = RequestStatus::protocol_error;
        m.prompt_tokens = dialect::embeddings_prompt_tokens(result->body);
    }
    gw.record(std::move(m));
    if (!vector) {
        co_return Error(Errc::protocol_error,
                        fmt::format("embedder {}/{}: HTTP {}, no data[0].embedding", provider.name,
                                    ref.model, result->status));
    }
    co_return std::move(*vector);
}

awaitable<void> relay_embeddings(Gateway::Impl& gw, net::Request& request,
                                 net::ResponseWriter& writer, std::string request_id,
                                 RequestKey& key) {
    net::HeaderList headers = base_headers(request_id);
    boost::system::error_code ec;
    json::value body = json::parse(request.body(), ec);
    if (ec || !body.is_object() || !body.as_object().contains("model") ||
        !body.as_object().at("model").is_string()) {
        co_await send_error(gw, writer, Errc::bad_request,
                            "expected a JSON object with a string \"model\" and \"input\"",
                            headers);
        co_return;
    }
    json::object& o = body.as_object();
    const std::string model_name(o.at("model").as_string());
    const VirtualModel* model = gw.config.find_model(model_name);
    if (model == nullptr) {
        co_await send_error(
            gw, writer, Errc::not_found,
            fmt::format("model '{}' is not served here; GET /v1/models lists the models",
                        model_name),
            headers);
        co_return;
    }
    if (key.key) {
        const bool admitted = co_await admit_key(gw, writer, key, model_name, headers);
        if (!admitted) co_return;
    }
    const UpstreamRef* ref = first_openai_upstream(gw.config, *model);
    if (ref == nullptr) {
        co_await send_error(
            gw, writer, Errc::unsupported,
            fmt::format("model '{}' has no OpenAI-compatible upstream for embeddings", model_name),
            headers);
        co_return;
    }
    const ProviderConfig& provider = gw.config.providers[ref->provider];
    o["model"] = ref->model;

    Measurement m =
        start_passthrough_record(request_id, provider, ref->model, "embeddings", false, key.name);
    const std::int64_t t_start = m.t.send;

    net::Url url = provider.base;
    url.target += "/embeddings";
    std::vector<std::pair<std::string, std::string>> upstream_headers =
        passthrough_headers(provider);
    std::string upstream_body = json::serialize(o);
    auto result = co_await gw.client(ref->provider)
                      .request(http::verb::post, url, upstream_headers, std::move(upstream_body),
                               kMaxEmbeddingsBody);
    m.t.done = steady_now_ns();
    if (!result) {
        m.t.sched = m.t.send;
        m.status = status_of(result.error().code);
        gw.record(std::move(m));
        const Errc code = errc_of(result.error(), Errc::connection_error);
        if (code == Errc::cancelled) co_return;
        co_await send_error(gw, writer, code,
                            fmt::format("upstream {}: {}", provider.name, result.error().message),
                            headers);
        co_return;
    }
    net::record_timings(m, result->timings, t_start);
    m.t.sched = m.t.send;
    m.http_status = static_cast<int>(result->status);
    if (result->status != 200) {
        m.status = RequestStatus::http(static_cast<int>(result->status));
    } else {
        m.prompt_tokens = dialect::embeddings_prompt_tokens(result->body);
        key.tokens += m.prompt_tokens.value_or(0);  // settled once the answer is sent
    }
    headers.emplace_back(kUpstreamHeader, upstream_label(provider.name, ref->model));
    if (auto id = upstream_request_id(result->headers))
        headers.emplace_back(kUpstreamRequestIdHeader, *id);
    if (result->status != 200) provider.key.redact_in(result->body);  // an error may echo the key
    gw.metrics.observe_request(m.status);
    const auto status = static_cast<http::status>(result->status);
    gw.record(std::move(m));
    co_await writer.send(status, "application/json", std::move(result->body), headers);
}

}  // namespace tokenradar::gateway
