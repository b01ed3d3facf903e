#include <tokenradar/gateway/gateway.hpp>

#include "gateway_impl.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/csv.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/dialect/egress.hpp>
#include <tokenradar/net/api_keys.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <memory>
#include <optional>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

constexpr std::size_t kNoKey = static_cast<std::size_t>(-1);
// Bodies up to this size are read with their head and checked by handle(); larger ones only
// after check_head() knows who is asking.
constexpr std::uint64_t kSmallBody = 64 * 1024;
constexpr std::string_view kModelsPrefix = "/v1/models/";

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// The gateway's routes, looked up once per request (route()). What each takes:
// health/ready and the gateway's own JSON (the response cache's counts, the provider-cache
// TTFT split) GET or HEAD without a key (405 "use GET"); api (/api/ and /badge/): any method,
// answered by the api_routes hook (what it leaves goes on as an unrouted path);
// metrics/models/model GET or HEAD, chat, completions and embeddings POST (405 "PATH takes
// GET|POST"). An unrouted GET or HEAD may be a dashboard file; anything else unrouted is 404.
enum class RouteId {
    chat,
    messages,
    count_tokens,
    responses,
    gemini_generate,
    gemini_models,
    gemini_model,
    embeddings,
    completions,
    models,
    model,
    metrics,
    healthz,
    readyz,
    response_cache,
    provider_cache,
    upstreams,
    api,
    admin
};
enum class Match {
    exact,
    prefix,  // the path starts with it ("/api/" itself included)
    under,   // the path starts with it and goes on ("/v1/models/{id}")
    method,  // under, and the rest holds a ':' (Gemini's "/v1beta/models/{model}:{method}")
};
struct Route {
    std::string_view path;
    Match match;
    RouteId id;
    bool post;  // POST with a JSON body; else GET or HEAD
};
// The chat route first: it is the one that is busy.
constexpr std::string_view kResponseCachePath = "/api/v1/gateway/cache";
constexpr std::string_view kProviderCachePath = "/api/v1/gateway/provider-cache";
constexpr std::string_view kUpstreamsPath = "/api/v1/upstreams";
constexpr std::string_view kGeminiModelsPrefix = "/v1beta/models/";
constexpr std::array<Route, 20> kRoutes{{
    {"/v1/chat/completions", Match::exact, RouteId::chat, true},
    {"/v1/messages", Match::exact, RouteId::messages, true},
    {"/v1/messages/count_tokens", Match::exact, RouteId::count_tokens, true},
    {"/v1/responses", Match::exact, RouteId::responses, true},
    {kGeminiModelsPrefix, Match::method, RouteId::gemini_generate, true},
    {"/v1beta/models", Match::exact, RouteId::gemini_models, false},
    {kGeminiModelsPrefix, Match::under, RouteId::gemini_model, false},
    {"/v1/embeddings", Match::exact, RouteId::embeddings, true},
    {"/v1/completions", Match::exact, RouteId::completions, true},
    {"/v1/models", Match::exact, RouteId::models, false},
    {kModelsPrefix, Match::under, RouteId::model, false},
    {"/metrics", Match::exact, RouteId::metrics, false},
    {"/healthz", Match::exact, RouteId::healthz, false},
    {"/readyz", Match::exact, RouteId::readyz, false},
    // The gateway's own, before the observatory's /api/.
    {kResponseCachePath, Match::exact, RouteId::response_cache, false},
    {kProviderCachePath, Match::exact, RouteId::provider_cache, false},
    {kUpstreamsPath, Match::exact, RouteId::upstreams, false},
    {"/api/", Match::prefix, RouteId::api, false},
    // The observatory's SVG badges: public like its read API, through the same hook.
    {"/badge/", Match::prefix, RouteId::api, false},
    {"/admin/", Match::prefix, RouteId::admin, false},
}};
// The gateway's live endpoints as CSV (format=csv, core/csv.hpp): their rows, and the
// columns naming a row when there are none. /upstreams leaves its per-model `models` out.
struct LiveEndpoint {
    CsvShape csv;
    std::string_view csv_file;
};
const LiveEndpoint& live_endpoint(RouteId id) {
    static const LiveEndpoint upstreams{{{{"upstreams", ""}}, {}, {"provider", "model"}},
                                        "tokenradar-upstreams.csv"};
    static const LiveEndpoint provider_cache{{{{"rows", ""}}, {}, {"provider", "model"}},
                                             "tokenradar-provider-cache.csv"};
    static const LiveEndpoint response_cache{{{{"models", ""}}, {}, {"model"}},
                                             "tokenradar-gateway-cache.csv"};
    if (id == RouteId::upstreams) return upstreams;
    if (id == RouteId::provider_cache) return provider_cache;
    return response_cache;
}

// The `format` parameter of a live endpoint (json when absent). Other parameters are ignored,
// as they always were here.
enum class LiveFormat { json, csv, unknown };
LiveFormat live_format(std::string_view target) {
    const std::size_t q = target.find('?');
    if (q == std::string_view::npos) return LiveFormat::json;
    std::string_view query = target.substr(q + 1);
    LiveFormat format = LiveFormat::json;
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view param = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (!param.starts_with("format=")) continue;
        const std::string_view value = param.substr(7);
        format = value == "csv"    ? LiveFormat::csv
                 : value == "json" ? LiveFormat::json
                                   : LiveFormat::unknown;
    }
    return format;
}

// Admin bodies are a key's settings: small.
constexpr std::size_t kAdminMaxBody = 16 * 1024;

const Route* route(std::string_view path) {
    for (const Route& r : kRoutes) {
        bool hit = r.match == Match::exact ? path == r.path
                   : r.match == Match::prefix
                       ? path.starts_with(r.path)
                       : path.size() > r.path.size() && path.starts_with(r.path);
        if (hit && r.match == Match::method)
            hit = path.find(':', r.path.size()) != std::string_view::npos;
        if (hit) return &r;
    }
    return nullptr;
}

// The dialect of a door's clients: what its answers, errors included, are re-encoded in.
std::optional<dialect::ClientApi> door_api(const Route* r) {
    if (r == nullptr) return std::nullopt;
    switch (r->id) {
        case RouteId::messages:
        case RouteId::count_tokens:
            return dialect::ClientApi::anthropic;
        case RouteId::responses:
            return dialect::ClientApi::openai_responses;
        case RouteId::gemini_generate:
        case RouteId::gemini_models:
        case RouteId::gemini_model:
            return dialect::ClientApi::gemini;
        default:
            return std::nullopt;
    }
}

// A route that takes a body (the head check's question before a large body is read).
bool takes_body(const Route* r) { return r != nullptr && r->post; }

// The Host header's name without its port ("[::1]:8080" -> "[::1]", "localhost:80" -> "localhost").
std::string_view host_name(std::string_view host) {
    if (!host.empty() && host.front() == '[') return host.substr(0, host.find(']') + 1);
    return host.substr(0, host.find(':'));
}

// A keyless listener answers only its own names: a web page that a browser loads from another
// name can reach a loopback port (DNS rebinding), and would be served and billed.
std::optional<Error> foreign_host(const GatewayConfig& config, const net::Request& request) {
    if (config.auth_required) return std::nullopt;
    const auto it = request.find(http::field::host);
    if (it == request.end()) return std::nullopt;  // not a browser: browsers always send Host
    const std::string_view name = host_name(it->value());
    const auto same = [&](std::string_view allowed) {
        return name.size() == allowed.size() && boost::beast::iequals(name, allowed);
    };
    if (same("localhost") || same("127.0.0.1") || same("[::1]") || same(config.host) ||
        std::any_of(config.allowed_hosts.begin(), config.allowed_hosts.end(), same)) {
        return std::nullopt;
    }
    return Error(
        Errc::forbidden,
        fmt::format("Host '{}' is not a name of this keyless listener: add it to [listener] "
                    "allowed_hosts, or use localhost",
                    name.substr(0, 128)));
}

// The API endpoints take JSON only: a browser may send a cross-origin text/plain or form POST
// without asking first (a CORS "simple request"), never an application/json one.
bool json_body(const net::Request& request) {
    const auto it = request.find(http::field::content_type);
    if (it == request.end()) return false;
    std::string_view type = it->value();
    type = type.substr(0, type.find(';'));
    while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
    constexpr std::string_view kJson = "application/json";
    return type == kJson || (type.size() == kJson.size() && boost::beast::iequals(type, kJson));
}

// The request's Origin when it is one of [listener] cors_origins.
std::optional<std::string_view> cors_origin(const GatewayConfig& config,
                                            const net::Request& request) {
    if (config.cors_origins.empty()) return std::nullopt;
    const auto it = request.find(http::field::origin);
    if (it == request.end()) return std::nullopt;
    const std::string_view origin = it->value();
    for (const auto& allowed : config.cors_origins) {
        if (origin == allowed) return origin;
    }
    return std::nullopt;
}

// The client key presented as `Authorization: Bearer KEY`, `x-api-key: KEY` (the Anthropic
// SDK's way), `x-goog-api-key: KEY` or `?key=KEY` (Google's): one of the configuration's
// (compared by SHA-256 in constant time), else a virtual key (its digest looked up in the
// book's table); neither when absent or unknown.
struct Caller {
    std::size_t config_key = kNoKey;
    KeyRef key;
    [[nodiscard]] bool known() const noexcept { return config_key != kNoKey || key != nullptr; }
};

Caller find_caller(const Gateway::Impl& gw, const net::Request& request) {
    Caller caller;
    std::optional<std::string> digest;
    if (const auto it = request.find(http::field::authorization); it != request.end()) {
        digest = net::bearer_digest(it->value());
    } else if (const auto key = request.find("x-api-key");
               key != request.end() && !key->value().empty()) {
        digest = net::hash_api_key(key->value());
    } else if (const auto goog = request.find("x-goog-api-key");
               goog != request.end() && !goog->value().empty()) {
        digest = net::hash_api_key(goog->value());
    } else if (const auto in_url = query_key(request.target()); in_url && !in_url->empty()) {
        digest = net::hash_api_key(*in_url);
    }
    if (!digest) return caller;
    caller.config_key = net::find_digest(*digest, gw.config.client_keys).value_or(kNoKey);
    if (caller.config_key == kNoKey && gw.keys) caller.key = gw.keys->find(*digest, gw.io_thread());
    return caller;
}

constexpr std::string_view kMissingKey =
    "missing or unknown key: send Authorization: Bearer <your TokenRadar key> (or x-api-key, "
    "x-goog-api-key)";

// What the client of a door of another dialect gets: the relay's OpenAI answers re-encoded.
class DialectFilter final : public net::BodyFilter {
  public:
    // `created`: now, for a Responses stream's created_at.
    DialectFilter(dialect::ClientApi api, std::int64_t created) : egress_(api, created) {}
    void whole(http::status& status, std::string& content_type, std::string& body) override {
        int code = static_cast<int>(status);
        egress_.whole(code, content_type, body);
        status = static_cast<http::status>(code);
    }
    void stream(std::string_view bytes, std::string& out) override { egress_.stream(bytes, out); }
    void end(std::string& out) override { egress_.end(out); }

  private:
    dialect::Egress egress_;
};

// Holds one in-flight slot of a client key for the life of a request.
class InFlightSlot {
  public:
    InFlightSlot(std::atomic<std::size_t>& counter, std::size_t limit) : counter_(&counter) {
        if (counter_->fetch_add(1, std::memory_order_relaxed) >= limit) {
            counter_->fetch_sub(1, std::memory_order_relaxed);
            counter_ = nullptr;
        }
    }
    ~InFlightSlot() {
        if (counter_ != nullptr) counter_->fetch_sub(1, std::memory_order_relaxed);
    }
    InFlightSlot(const InFlightSlot&) = delete;
    InFlightSlot& operator=(const InFlightSlot&) = delete;
    [[nodiscard]] bool acquired() const noexcept { return counter_ != nullptr; }

  private:
    std::atomic<std::size_t>* counter_;
};

awaitable<void> send_static(net::ResponseWriter& writer, const net::Request& request,
                            const StaticFile& file) {
    net::HeaderList headers{{"cache-control", file.cache_control},
                            {"etag", file.etag},
                            {"x-content-type-options", "nosniff"}};
    if (const auto inm = request.find(http::field::if_none_match);
        inm != request.end() && inm->value() == file.etag) {
        co_await writer.send(http::status::not_modified, file.content_type, {}, headers);
        co_return;
    }
    if (file.content_type.rfind("text/html", 0) == 0) {
        // The dashboard loads nothing from elsewhere and renders labels as text.
        headers.emplace_back(
            "content-security-policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
    }
    co_await writer.send(http::status::ok, file.content_type, file.body, headers);
}

json::object model_object(const VirtualModel& m) {
    return json::object{
        {"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "tokenradar"}};
}

std::string models_body(const GatewayConfig& config) {
    json::array data;
    for (const auto& m : config.models) data.push_back(model_object(m));
    return json::serialize(json::object{{"object", "list"}, {"data", std::move(data)}});
}

json::value side_json(const ProviderCacheTtft::Side& side) {
    const auto ms = [](const std::optional<double>& v) { return v ? json::value(*v) : nullptr; };
    return json::object{{"samples", side.samples},
                        {"mean_ms", ms(side.mean_ms)},
                        {"p50_ms", ms(side.p50_ms)},
                        {"p95_ms", ms(side.p95_ms)}};
}

// GET /api/v1/gateway/provider-cache: TTFT with and without a provider prompt-cache hit per
// (provider, model), from the live metrics (since start; docs/observatory-api.md). Public like
// the dashboard's other reads: provider and model names and latencies, nothing per client.
std::string provider_cache_body(const Metrics& metrics) {
    json::array rows;
    for (const ProviderCacheTtft& row : metrics.provider_cache_ttft()) {
        rows.push_back(json::object{{"provider", row.provider},
                                    {"model", row.model},
                                    {"hit", side_json(row.hit)},
                                    {"miss", side_json(row.miss)}});
    }
    return json::serialize(json::object{{"scope", "since_start"}, {"rows", std::move(rows)}});
}

}  // namespace

bool is_json_body(const net::Request& request) { return json_body(request); }

awaitable<void> send_refusal(Gateway::Impl& gw, net::ResponseWriter& writer, Refusal refusal,
                             net::HeaderList headers) {
    gw.metrics.observe_request(status_of(make_error_code(refusal.code)));
    for (auto& h : refusal.headers) headers.push_back(std::move(h));
    const auto status = static_cast<http::status>(http_status(refusal.code));
    std::string body =
        openai_error_body(refusal.code, refusal.message, refusal.param, refusal.type_code);
    co_await writer.send(status, "application/json", std::move(body), headers);
}

awaitable<bool> admit_key(Gateway::Impl& gw, net::ResponseWriter& writer, RequestKey& key,
                          const std::string& model, net::HeaderList& headers) {
    KeyRef ref = key.key;
    std::string model_name = model;
    auto op = gw.keys->admit(std::move(ref), std::move(model_name), headers);
    std::optional<Refusal> refusal = co_await std::move(op);
    if (!refusal) co_return true;
    co_await send_refusal(gw, writer, std::move(*refusal), headers);
    co_return false;
}

net::HeaderList base_headers(const std::string& request_id) {
    net::HeaderList headers;
    // The relay adds up to 7, a virtual key with a rate 6 x-ratelimit-*: one allocation.
    headers.reserve(15);
    headers.emplace_back(kRequestIdHeader, request_id);
    headers.emplace_back(kNoSniffHeader, "nosniff");
    return headers;
}

std::string upstream_label(std::string_view provider, std::string_view model) {
    std::string label;
    label.reserve(provider.size() + 1 + model.size());
    label.append(provider).append(1, '/').append(model);
    return label;
}

awaitable<void> send_error(Gateway::Impl& gw, net::ResponseWriter& writer, Errc code,
                           std::string message, net::HeaderList headers) {
    gw.metrics.observe_request(status_of(make_error_code(code)));
    if (code == Errc::unauthorized) headers.emplace_back("www-authenticate", net::kBearerChallenge);
    const auto status = static_cast<http::status>(http_status(code));
    std::string body = openai_error_body(code, message);
    co_await writer.send(status, "application/json", std::move(body), headers);
}

namespace {
thread_local std::size_t t_io_thread = 0;  // Gateway::set_io_thread
}  // namespace

void Gateway::set_io_thread(std::size_t index) noexcept { t_io_thread = index; }

Gateway::Impl::Impl(const std::vector<net::asio::any_io_executor>& io_executors,
                    const GatewayConfig& cfg, GatewayHooks h, Metrics& m)
    : config(cfg),
      hooks(std::move(h)),
      metrics(m),
      in_flight(std::make_unique<std::atomic<std::size_t>[]>(cfg.client_keys.size() + 1)),
      thread_requests(io_executors.size()) {
    assert(!io_executors.empty());
    for (const auto& ex : io_executors) {
        for (const auto& p : config.providers) {
            net::ClientOptions options;
            options.connect_timeout = p.connect_timeout;
            // Providers may hold the head until the first token: headers and first byte get
            // the first-token budget; the relay enforces the first token itself.
            options.headers_timeout = p.first_token_timeout;
            options.first_byte_timeout = p.first_token_timeout;
            options.idle_timeout = p.idle_timeout;
            options.total_timeout = p.total_timeout;
            options.ca_file = hooks.ca_file;
            clients.push_back(std::make_unique<net::HttpClient>(ex, options));
        }
    }
    routing = std::make_unique<Routing>(config);
    if (hooks.key_registry) {
        keys = std::make_unique<KeyBook>(std::move(hooks.key_registry), config, io_executors);
    }
    if (ResponseCache::wanted(config)) {
        cache = std::make_unique<ResponseCache>(config, io_executors.front(), hooks.cache_tier);
    }
    // The cache alone holds it: closed and released with it at shutdown (close_background).
    hooks.cache_tier.reset();
    if (config.dashboard) {
        const auto dir =
            config.dashboard_dir.empty() ? find_resource_dir("web/dist") : config.dashboard_dir;
        if (auto files = StaticFiles::load(dir)) {
            dashboard = std::move(*files);
        } else {
            spdlog::warn("dashboard off: {}", files.error().message);
        }
    }
}

std::size_t Gateway::Impl::io_thread() const noexcept {
    return t_io_thread % thread_requests.size();
}

net::HttpClient& Gateway::Impl::client(std::size_t provider) const {
    return *clients[io_thread() * config.providers.size() + provider];
}

namespace {

void render_thread_requests(const Gateway::Impl& gw, PrometheusText& out) {
    constexpr std::string_view kName = "tokenradar_io_thread_requests_total";
    out.family(kName, MetricType::counter,
               "Requests each I/O thread took ([listener] threads; connections are dealt "
               "round-robin and stay on their thread).");
    for (std::size_t i = 0; i < gw.thread_requests.size(); ++i) {
        out.sample(kName, {{"thread", std::to_string(i)}},
                   gw.thread_requests[i].count.load(std::memory_order_relaxed));
    }
}

}  // namespace

Gateway::Gateway(const std::vector<net::asio::any_io_executor>& io_executors,
                 const GatewayConfig& config, GatewayHooks hooks)
    : impl_(std::make_unique<Impl>(io_executors, config, std::move(hooks), metrics_)) {}

Gateway::~Gateway() = default;

void Gateway::close_background() {
    if (impl_->cache) impl_->cache->close();
    if (impl_->keys) impl_->keys->close();
}

net::HeadVerdict Gateway::check_head(const net::Request& head,
                                     std::optional<std::uint64_t> content_length) const {
    const Impl& gw = *impl_;
    const std::string_view path = path_of(head.target());
    const Route* r = route(path);
    if (gw.hooks.api_head_check && r != nullptr && r->id == RouteId::api) {
        if (auto verdict = gw.hooks.api_head_check(head, gw.config.max_body_bytes))
            return std::move(*verdict);
    }
    if (r != nullptr && r->id == RouteId::admin) return {kAdminMaxBody, {}, {}};
    net::HeadVerdict verdict{gw.config.max_body_bytes, {}, {}};
    const bool large = !content_length || *content_length > kSmallBody;  // chunked: any size
    if (!large) return verdict;  // read with its head; handle() checks who is asking
    if (auto refused = foreign_host(gw.config, head)) return {0, std::move(refused), {}};
    if (!takes_body(r)) {
        verdict.reject = Error(
            Errc::not_found, fmt::format("no route for {} that takes a body", path.substr(0, 256)));
    } else if (gw.config.auth_required && !find_caller(gw, head).known()) {
        verdict.reject = Error(Errc::unauthorized, std::string(kMissingKey));
        verdict.reject_headers.emplace_back("www-authenticate", net::kBearerChallenge);
    }
    return verdict;
}

awaitable<void> Gateway::handle(net::Request& request, net::ResponseWriter& writer) {
    // A client that goes away cancels this coroutine (terminal): every await then reports
    // operation_aborted as a value instead of throwing, so each attempt is still recorded
    // and the relay's cleanup (heartbeat stop, upstream close) always runs.
    co_await net::asio::this_coro::throw_if_cancelled(false);
    Impl& gw = *impl_;
    gw.thread_requests[gw.io_thread()].count.fetch_add(1, std::memory_order_relaxed);
    const std::string_view path = path_of(request.target());
    const auto method = request.method();
    const std::string request_id = new_request_id();
    net::HeaderList headers = base_headers(request_id);
    const Route* r = route(path);
    // A door of another dialect answers in it from here on, errors included.
    // On the heap: the chat route's coroutine frame stays the size it was without doors.
    std::unique_ptr<DialectFilter> door;
    if (const auto api = door_api(r)) {
        door = std::make_unique<DialectFilter>(*api, wall_now_us() / 1'000'000);
        writer.set_filter(door.get());
    }
    if (auto refused = foreign_host(gw.config, request)) {
        co_await send_error(gw, writer, Errc::forbidden, std::move(refused->message), headers);
        co_return;
    }
    if (const auto origin = cors_origin(gw.config, request)) {
        headers.emplace_back("access-control-allow-origin", *origin);
        headers.emplace_back("vary", "origin");
        if (method == http::verb::options) {  // a preflight from an allowed origin
            headers.emplace_back("access-control-allow-methods", "GET, POST, OPTIONS");
            headers.emplace_back("access-control-allow-headers",
                                 "authorization, x-api-key, anthropic-version, x-goog-api-key, "
                                 "x-goog-api-client, content-type, x-tokenradar-task, "
                                 "cache-control");
            headers.emplace_back("access-control-max-age", "600");
            co_await writer.send(http::status::no_content, {}, {}, headers);
            co_return;
        }
    }

    const bool get_or_head = method == http::verb::get || method == http::verb::head;
    if (r != nullptr && (r->id == RouteId::healthz || r->id == RouteId::readyz)) {
        if (!get_or_head) {
            co_await send_error(gw, writer, Errc::method_not_allowed, "use GET", headers);
            co_return;
        }
        const bool ok = r->id == RouteId::healthz || !gw.hooks.ready || gw.hooks.ready();
        const auto status = ok ? http::status::ok : http::status::service_unavailable;
        co_await writer.send(status, "text/plain", ok ? "ok\n" : "not ready\n", headers);
        co_return;
    }
    if (r != nullptr && (r->id == RouteId::response_cache || r->id == RouteId::provider_cache ||
                         r->id == RouteId::upstreams)) {
        // Public like the observatory's /api/v1/gateway beside them: counts and latencies of
        // providers and models, no answers.
        if (!get_or_head) {
            co_await send_error(gw, writer, Errc::method_not_allowed, "use GET", headers);
            co_return;
        }
        const LiveEndpoint& live = live_endpoint(r->id);
        const LiveFormat format = live_format(request.target());
        if (format == LiveFormat::unknown) {
            co_await send_error(gw, writer, Errc::bad_request, "format: expected json or csv",
                                headers);
            co_return;
        }
        std::string body = r->id == RouteId::provider_cache ? provider_cache_body(metrics_)
                           : r->id == RouteId::upstreams
                               ? gw.routing->upstreams_json(steady_now_ns())
                           : gw.cache ? gw.cache->stats_json()
                                      : std::string(R"({"models":[],"memory":null,"shared":null})");
        const bool csv = format == LiveFormat::csv;
        if (csv) {
            body = csv_from_json(body, live.csv);
            headers.emplace_back("content-disposition",
                                 fmt::format("attachment; filename=\"{}\"", live.csv_file));
        }
        // A strong ETag of the answer: the dashboard polls, and a 304 spares it a re-render.
        std::string etag = fmt::format("\"gw-{:016x}\"", fnv1a64(body));
        const auto inm = request.find(http::field::if_none_match);
        const bool unchanged = inm != request.end() && inm->value() == etag;
        headers.emplace_back("cache-control", "no-cache");
        headers.emplace_back("etag", std::move(etag));
        if (unchanged) body.clear();
        const auto status = unchanged ? http::status::not_modified : http::status::ok;
        co_await writer.send(status, csv ? kCsvContentType : "application/json", std::move(body),
                             headers);
        co_return;
    }
    if (r != nullptr && r->id == RouteId::api) {
        if (gw.hooks.api_routes) {
            if (co_await gw.hooks.api_routes(request, writer)) co_return;
        }
        r = nullptr;  // not the observatory's: a dashboard file or nothing
    }
    if (r != nullptr && r->id == RouteId::admin) {
        co_await handle_admin(gw, request, writer, std::move(headers), path);
        co_return;
    }
    if (r == nullptr) {
        if (get_or_head) {
            if (const StaticFile* file = gw.dashboard.find(path)) {
                co_await send_static(writer, request, *file);
                co_return;
            }
        }
        co_await send_error(gw, writer, Errc::not_found, fmt::format("no route for {}", path),
                            headers);
        co_return;
    }
    if (r->post ? method != http::verb::post : !get_or_head) {
        co_await send_error(gw, writer, Errc::method_not_allowed,
                            fmt::format("{} takes {}", path, r->post ? "POST" : "GET"), headers);
        co_return;
    }
    if (r->post && !json_body(request)) {
        co_await send_error(gw, writer, Errc::unsupported_media_type,
                            "Content-Type: expected application/json", headers);
        co_return;
    }

    std::size_t client = gw.config.client_keys.size();  // the anonymous slot
    RequestKey key;
    if (gw.config.auth_required) {
        Caller caller = find_caller(gw, request);
        if (!caller.known()) {
            co_await send_error(gw, writer, Errc::unauthorized, std::string(kMissingKey), headers);
            co_return;
        }
        client = caller.config_key;
        key.key = std::move(caller.key);
        key.tenant = key.key ? std::string_view(key.key->tenant)
                             : std::string_view(gw.config.client_keys[client].name);
        key.name = key.key ? std::string_view(key.key->key.spec.name)
                           : std::string_view(gw.config.client_keys[client].name);
    }

    if (r->id == RouteId::metrics) {
        std::string body = metrics_.render([&gw](PrometheusText& out) {
            render_thread_requests(gw, out);
            if (gw.keys) gw.keys->render(out);
            gw.routing->render(out, steady_now_ns());
            if (gw.cache) gw.cache->render(out);
            if (gw.hooks.extra_metrics) gw.hooks.extra_metrics(out);
        });
        co_await writer.send(http::status::ok, "text/plain; version=0.0.4", std::move(body),
                             headers);
        co_return;
    }
    if (r->id == RouteId::models) {
        std::string body = models_body(gw.config);
        co_await writer.send(http::status::ok, "application/json", std::move(body), headers);
        co_return;
    }
    if (r->id == RouteId::gemini_models || r->id == RouteId::gemini_model) {
        const std::string_view id = r->id == RouteId::gemini_model
                                        ? path.substr(kGeminiModelsPrefix.size())
                                        : std::string_view();
        co_await send_gemini_models(gw, writer, id, std::move(headers));
        co_return;
    }
    if (r->id == RouteId::model) {
        const std::string id = percent_decoded(path.substr(kModelsPrefix.size()));
        if (const VirtualModel* model = gw.config.find_model(id)) {
            std::string body = json::serialize(model_object(*model));
            co_await writer.send(http::status::ok, "application/json", std::move(body), headers);
        } else {
            gw.metrics.observe_request(status_of(make_error_code(Errc::not_found)));
            std::string body = openai_error_body(
                Errc::not_found,
                fmt::format("model '{}' is not served here; GET /v1/models lists the models", id),
                "model", "model_not_found");
            co_await writer.send(http::status::not_found, "application/json", std::move(body),
                                 headers);
        }
        co_return;
    }

    InFlightSlot slot(key.key ? key.key->state->in_flight : gw.in_flight[client],
                      gw.config.max_concurrent_per_key);
    if (!slot.acquired()) {
        headers.emplace_back("retry-after", "1");
        co_await send_error(gw, writer, Errc::rate_limited,
                            fmt::format("more than {} concurrent requests for this key",
                                        gw.config.max_concurrent_per_key),
                            headers);
        co_return;
    }
    metrics_.request_started();
    try {
        if (r->id == RouteId::chat || r->id == RouteId::messages || r->id == RouteId::responses) {
            ClientDoor from;
            if (const auto api = door_api(r)) from.api = *api;
            co_await relay_chat(gw, request, writer, request_id, headers, key, from);
        } else if (r->id == RouteId::gemini_generate) {
            co_await relay_gemini(gw, request, writer, request_id, headers, key);
        } else if (r->id == RouteId::count_tokens) {
            co_await relay_count_tokens(gw, request, writer, headers, key);
        } else if (r->id == RouteId::completions) {
            co_await relay_text_completions(gw, request, writer, request_id, key);
        } else {
            co_await relay_embeddings(gw, request, writer, request_id, key);
        }
    } catch (...) {
        metrics_.request_finished();
        throw;
    }
    metrics_.request_finished();
    // Tokens are known once the answer is complete: a stream that ended over the key's tokens
    // per minute or budget was not cut, the next requests wait or are refused.
    if (key.key) gw.keys->settle(*key.key, key.tokens);
}

}  // namespace tokenradar::gateway
