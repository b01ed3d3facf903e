#pragma once
// Private to the gateway: the state behind Gateway and the chat relay's entry point.

#include "key_book.hpp"
#include "response_cache.hpp"
#include "routing.hpp"

#include <tokenradar/dialect/egress.hpp>
#include <tokenradar/gateway/gateway.hpp>
#include <tokenradar/gateway/static_files.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::gateway {

using net::asio::awaitable;

struct Gateway::Impl {
    Impl(const std::vector<net::asio::any_io_executor>& io_executors, const GatewayConfig& cfg,
         GatewayHooks h, Metrics& m);

    GatewayConfig config;
    GatewayHooks hooks;
    Metrics& metrics;
    // One per I/O thread and provider (its timeouts), thread-major: each thread keeps its own
    // keep-alive pools, so no lock or cross-thread hop sits between a request and its upstream.
    std::vector<std::unique_ptr<net::HttpClient>> clients;
    // In-flight requests per client key; the last slot is the anonymous client (auth none).
    std::unique_ptr<std::atomic<std::size_t>[]> in_flight;
    StaticFiles dashboard;                 // empty when disabled or not built
    std::unique_ptr<ResponseCache> cache;  // when a model caches
    std::unique_ptr<Routing> routing;      // every model's router and the upstreams' estimates
    std::unique_ptr<KeyBook> keys;         // virtual keys, when there is a registry

    // Requests each I/O thread took (tokenradar_io_thread_requests_total: how evenly the
    // connections are spread), a cache line each so the threads never share one.
    struct alignas(64) ThreadRequests {
        std::atomic<std::uint64_t> count{0};
    };
    std::vector<ThreadRequests> thread_requests;

    // The calling I/O thread's index, and its client for `provider` (an index into
    // config.providers).
    [[nodiscard]] std::size_t io_thread() const noexcept;
    [[nodiscard]] net::HttpClient& client(std::size_t provider) const;

    void record(Measurement&& m) {
        metrics.observe_attempt(m);
        if (hooks.sink) hooks.sink(std::move(m));
    }
};

// The gateway's response header names: constants, so that a response's header list does not
// allocate for them (each is longer than std::string's inline buffer).
inline const net::HeaderName kRequestIdHeader =
    net::HeaderName::constant("x-tokenradar-request-id");
inline const net::HeaderName kUpstreamHeader = net::HeaderName::constant("x-tokenradar-upstream");
inline const net::HeaderName kCacheHeader = net::HeaderName::constant("x-tokenradar-cache");
inline const net::HeaderName kRouteHeader = net::HeaderName::constant("x-tokenradar-route");
inline const net::HeaderName kOverheadHeader =
    net::HeaderName::constant("x-tokenradar-overhead-us");
inline const net::HeaderName kUpstreamRequestIdHeader = net::HeaderName::constant("x-request-id");
inline const net::HeaderName kNoSniffHeader = net::HeaderName::constant("x-content-type-options");

// Response headers every answer carries.
net::HeaderList base_headers(const std::string& request_id);
// "provider/model": the x-tokenradar-upstream value (built by hand: once per attempt, where
// fmt::format cost ~500 instructions).
std::string upstream_label(std::string_view provider, std::string_view model);

// The provider's id of the request (OpenAI `x-request-id`, Anthropic `request-id`), passed on
// as `x-request-id` so the client's SDK can quote it to the provider's support; a value over
// 128 bytes or with bytes other than printable ASCII is dropped.
std::optional<std::string_view> upstream_request_id(const boost::beast::http::fields& upstream);

// Who is asking, for the relays: the response cache's scope, and the virtual key (null for a
// key of the configuration file or a keyless listener) with the tokens its attempts used (each
// attempt's record adds its prompt and output tokens; settled after the answer).
struct RequestKey {
    std::string_view tenant;  // "" on a keyless listener
    std::string_view name;    // the records' client_key: the key's name ("" without a key)
    KeyRef key;
    std::int64_t tokens = 0;
};

// Whether the request's Content-Type is application/json.
bool is_json_body(const net::Request& request);

// A virtual key's refusal (403, 429) as an OpenAI-style error with its param and code.
awaitable<void> send_refusal(Gateway::Impl& gw, net::ResponseWriter& writer, Refusal refusal,
                             net::HeaderList headers);

// For a virtual key: the key's verdict on this request for `model` (KeyBook::admit); a
// refusal is sent here. True when the request may go on. Suspends only with shared limits.
awaitable<bool> admit_key(Gateway::Impl& gw, net::ResponseWriter& writer, RequestKey& key,
                          const std::string& model, net::HeaderList& headers);

// The admin API (admin_api.cpp): any request under /admin/.
awaitable<void> handle_admin(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                             net::HeaderList headers, std::string_view path);

// Sends an OpenAI-style error (status from the Errc) and counts it.
awaitable<void> send_error(Gateway::Impl& gw, net::ResponseWriter& writer, Errc code,
                           std::string message, net::HeaderList headers);

// The dialect a chat request came in through (its door), and what Gemini's URL path says of
// it: the model and whether it streams.
struct ClientDoor {
    dialect::ClientApi api = dialect::ClientApi::openai;
    std::string_view model;  // Gemini only
    bool stream = false;     // Gemini only
};

// POST /v1/chat/completions (and the doors of other dialects: `door`, whose writer
// re-encodes the answer, dialect/egress.hpp), after auth and limits. `headers`:
// base_headers(request_id), already built by the caller; each attempt appends its own and
// leaves them for the answer. `key`: who is asking (the cache's scope, a virtual key's limits
// and token count).
awaitable<void> relay_chat(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                           std::string request_id, net::HeaderList& headers, RequestKey& key,
                           ClientDoor door);

// The Gemini door's paths (doors.cpp). "/v1beta/models/{model}:{method}[?alt=sse]": the
// model (percent-decoded) and whether the method streams; bad_request naming what is wrong
// (a method other than generateContent / streamGenerateContent, a stream without alt=sse).
struct GeminiCall {
    std::string model;
    bool stream = false;
};
Result<GeminiCall> gemini_call(std::string_view target);
// POST /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse: the path's
// model and method, then relay_chat as a Gemini door's request.
awaitable<void> relay_gemini(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                             std::string request_id, net::HeaderList& headers, RequestKey& key);
// GET /v1beta/models (`id` empty) and /v1beta/models/{id}: the virtual models as Gemini Model
// resources (its writer's filter is taken off for the answer; a 404 goes through it).
awaitable<void> send_gemini_models(Gateway::Impl& gw, net::ResponseWriter& writer,
                                   std::string_view id, net::HeaderList headers);
// The `key` query parameter (Google's other way to send an API key), percent-decoded.
std::optional<std::string> query_key(std::string_view target);
// "%2F" and the like in a model id of a path (ids may hold '/').
std::string percent_decoded(std::string_view s);

// Answers a cache hit (cache_replay.cpp) and records it.
awaitable<void> replay_hit(Gateway::Impl& gw, net::ResponseWriter& writer,
                           const dialect::ChatRequest& chat, const CacheLookup& lookup,
                           const std::string& request_id, const std::string& task,
                           std::string_view client_key, net::HeaderList& headers);

// One embedding of `text` from an OpenAI-compatible upstream (the semantic cache's
// embedder), recorded as an attempt of task "embeddings".
awaitable<Result<std::vector<float>>> embed_upstream(Gateway::Impl& gw, const UpstreamRef& ref,
                                                     std::string_view text,
                                                     const std::string& request_id);

// POST /v1/messages/count_tokens (count_tokens.cpp), after auth and limits: forwarded to the
// model's first Anthropic upstream, else a 400 naming why. The writer's Anthropic filter
// shapes the gateway's own errors and is taken off for the upstream's answer.
awaitable<void> relay_count_tokens(Gateway::Impl& gw, net::Request& request,
                                   net::ResponseWriter& writer, net::HeaderList& headers,
                                   RequestKey& key);

// POST /v1/embeddings, after auth and limits.
awaitable<void> relay_embeddings(Gateway::Impl& gw, net::Request& request,
                                 net::ResponseWriter& writer, std::string request_id,
                                 RequestKey& key);

// The passthrough routes (embeddings.cpp, text_completions.cpp), which only OpenAI-compatible
// upstreams serve: the virtual model's first OpenAI-dialect upstream (nullptr when none); one
// attempt's record, stamped as sent now (`client_key`: the request's key name, "" for the
// gateway's own calls); the upstream request's headers (its key as Bearer).
const UpstreamRef* first_openai_upstream(const GatewayConfig& config, const VirtualModel& model);
Measurement start_passthrough_record(const std::string& request_id, const ProviderConfig& provider,
                                     const std::string& upstream_model, std::string task,
                                     bool stream, std::string_view client_key);
std::vector<std::pair<std::string, std::string>> passthrough_headers(
    const ProviderConfig& provider);

// POST /v1/completions (text_completions.cpp), after auth and limits: the legacy text
// completions, passed through to the model's first OpenAI-dialect upstream with only `model`
// replaced, streams relayed event by event; one record (task "completions") per request.
awaitable<void> relay_text_completions(Gateway::Impl& gw, net::Request& request,
                                       net::ResponseWriter& writer, std::string request_id,
                                       RequestKey& key);

}  // namespace tokenradar::gateway
