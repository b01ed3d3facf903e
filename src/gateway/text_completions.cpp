// POST /v1/completions: OpenAI's legacy text completions (`prompt`, answers of object
// "text_completion"), which OpenAI keeps for older models and self-hosted engines (llama.cpp,
// vLLM, SGLang) still serve. Passed through to the virtual model's first OpenAI-dialect
// upstream with only `model` replaced: no translation, no routing, fallback or cache (those
// are the chat relay's). Measured as one attempt of task "completions" (metrics.md: TTFB, E2E,
// and for streams TTFT at the first chunk with non-empty `text`); the answer's usage (else the
// documented estimate) is charged to the client's virtual key.

#include "gateway_impl.hpp"

#include "client_stream.hpp"
#include "relay_attempt.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/stream_meter.hpp>
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/dialect/translate.hpp>
#include <tokenradar/net/response_watchdog.hpp>

#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
constexpr std::size_t kMaxAnswerBody = 16 * 1024 * 1024;
constexpr std::size_t kMaxErrorBody = 64 * 1024;

// Relays a 200 stream whose response head is out: each read's events go to the client as the
// read brings them (written again as `data: ...` events, so a failure can still end the stream
// with a well-formed error event). Returns the record's status; `m` gets the stream's times
// and usage.
awaitable<RequestStatus> relay_completion_stream(Gateway::Impl& gw,
                                                 net::StreamingResponse& response,
                                                 net::ResponseWriter& writer,
                                                 const ProviderConfig& provider,
                                                 const std::string& model, bool client_wants_usage,
                                                 Measurement& m) {
    auto executor = co_await net::asio::this_coro::executor;
    auto stream = std::make_shared<ClientStream>(executor, writer);
    start_heartbeat(stream, gw.config.heartbeat_interval);
    const HeartbeatGuard heartbeat_guard(*stream);
    net::ResponseWatchdog first_token_watchdog(
        executor, response,
        SteadyClock::time_point(Nanos(m.t.send)) + provider.first_token_timeout);
    dialect::StreamMeter meter(std::make_unique<dialect::TextCompletionStreamDecoder>());
    const dialect::StreamAccumulator& acc = meter.accumulator();
    // The client's events as they came; the usage chunk only for a client that asked (the
    // upstream was always asked: with_model).
    dialect::StreamTranslator relay(dialect::Api::openai, client_wants_usage,
                                    dialect::StreamMeta{});
    std::string out;
    std::optional<Error> failure;
    bool client_gone = false;
    while (true) {
        auto piece = co_await response.read_some();
        const std::int64_t now = steady_now_ns();
        if (!piece) {
            failure =
                first_token_watchdog.fired()
                    ? Error(Errc::timeout_first_token, "no token before the first-token timeout")
                    : piece.error();
            break;
        }
        if (piece->empty()) {
            if (auto ended = meter.end(now); !ended) failure = ended.error();
            break;
        }
        auto fed = meter.feed(
            *piece, now,
            [&](const sse::SseEvent& event, std::span<const dialect::StreamDelta> deltas) {
                relay.on_event(event, deltas, out);
            });
        if (!fed) {
            failure = fed.error();  // the events before the bad one leave with the error event
            break;
        }
        if (acc.times().first_token) first_token_watchdog.disarm();
        if (acc.error()) provider.key.redact_in(out);  // an error event may echo the key
        if (acc.saw_done()) break;                     // `out` leaves with the end of the stream
        if (out.empty()) continue;
        if (auto ec = co_await write_client(*stream, out)) {
            client_gone = true;
            break;
        }
        out.clear();
    }
    first_token_watchdog.disarm();
    if (failure) meter.abandon(steady_now_ns());
    client_gone = client_gone || writer.client_gone();
    const RequestStatus status =
        end_of_stream(provider, model, acc, relay, failure, client_gone, out);
    co_await stop_heartbeat(*stream);  // after it nothing else writes
    if (!client_gone) co_await writer.finish(out);
    // Read the upstream to its end so its connection returns to the pool.
    while (status.is_ok() && !response.done()) {
        auto rest = co_await response.read_some();
        if (!rest || rest->empty()) break;
    }
    dialect::record_stream(m, acc);
    m.response_id = meter.response_id();
    co_return status;
}

// Reads a 200 answer and sends it on as it came; `m` gets its usage (else the estimate).
// Returns the record's status; an answer that is not a text_completion is a 502.
awaitable<RequestStatus> relay_completion(Gateway::Impl& gw, net::StreamingResponse& response,
                                          net::ResponseWriter& writer,
                                          const ProviderConfig& provider, Measurement& m,
                                          net::HeaderList& headers) {
    auto body = co_await response.read_all(kMaxAnswerBody);
    const std::int64_t t_body = steady_now_ns();
    m.t.done = t_body;
    if (!body) {
        const Errc code = errc_of(body.error(), Errc::connection_error);
        if (code != Errc::cancelled) {
            co_await send_error(gw, writer, code,
                                fmt::format("upstream {}: {}", provider.name, body.error().message),
                                headers);
        }
        co_return status_of(body.error().code);
    }
    auto answer = dialect::parse_text_completion(*body);
    if (!answer) {
        std::string message = fmt::format("upstream {}: {}", provider.name, answer.error().message);
        provider.key.redact_in(message);  // a parse error may quote the upstream's bytes
        co_await send_error(gw, writer, Errc::protocol_error, std::move(message), headers);
        co_return RequestStatus::protocol_error;
    }
    dialect::record_response(m, *answer);
    // Response-side overhead: upstream body read -> our response's first byte.
    m.overhead_ns = m.overhead_ns.value_or(0) + (steady_now_ns() - t_body);
    headers.emplace_back(kOverheadHeader, std::to_string(*m.overhead_ns / 1000));
    auto ec = co_await writer.send(http::status::ok, "application/json", std::move(*body), headers);
    const RequestStatus status = ec ? RequestStatus::cancelled : RequestStatus::ok;
    gw.metrics.observe_request(status);
    co_return status;
}

}  // namespace

awaitable<void> relay_text_completions(Gateway::Impl& gw, net::Request& request,
                                       net::ResponseWriter& writer, std::string request_id,
                                       RequestKey& key) {
    net::HeaderList headers = base_headers(request_id);
    auto parsed = dialect::parse_text_completion_request(request.body());
    if (!parsed) {
        co_await send_error(gw, writer, Errc::bad_request, parsed.error().message, headers);
        co_return;
    }
    const dialect::ChatRequest& completion = *parsed;
    const VirtualModel* model = gw.config.find_model(completion.model);
    if (model == nullptr) {
        co_await send_error(
            gw, writer, Errc::not_found,
            fmt::format("model '{}' is not served here; GET /v1/models lists the models",
                        completion.model),
            headers);
        co_return;
    }
    if (key.key) {
        const bool admitted = co_await admit_key(gw, writer, key, completion.model, headers);
        if (!admitted) co_return;
    }
    const UpstreamRef* ref = first_openai_upstream(gw.config, *model);
    if (ref == nullptr) {
        co_await send_error(gw, writer, Errc::unsupported,
                            fmt::format("model '{}' has no OpenAI-compatible upstream: "
                                        "/v1/completions is passed through, not translated; use "
                                        "/v1/chat/completions",
                                        completion.model),
                            headers);
        co_return;
    }
    const ProviderConfig& provider = gw.config.providers[ref->provider];
    Measurement m = start_passthrough_record(request_id, provider, ref->model, "completions",
                                             completion.stream, key.name);
    const std::int64_t t_start = m.t.send;
    net::Url url = provider.base;
    url.target += "/completions";
    auto upstream_headers = passthrough_headers(provider);
    if (completion.stream) upstream_headers.emplace_back("accept", "text/event-stream");
    std::string body =
        dialect::with_model(completion.original, request.body(), ref->model, completion.stream);
    auto opened = co_await gw.client(ref->provider)
                      .open(http::verb::post, url, upstream_headers, std::move(body));
    if (!opened) {
        m.t.sched = m.t.send;
        m.t.done = steady_now_ns();
        m.status = status_of(opened.error().code);
        gw.record(std::move(m));
        const Errc code = errc_of(opened.error(), Errc::connection_error);
        if (code == Errc::cancelled) co_return;
        co_await send_error(gw, writer, code,
                            fmt::format("upstream {}: {}", provider.name, opened.error().message),
                            headers);
        co_return;
    }
    net::StreamingResponse& response = **opened;
    net::record_timings(m, response.timings(), t_start);
    m.t.sched = m.t.send;
    m.http_status = static_cast<int>(response.status());
    // metrics.md overhead_ns, request side: the client request read -> the upstream request sent.
    m.overhead_ns = std::max<std::int64_t>(0, m.t.send - writer.request_read_ns());
    headers.emplace_back(kUpstreamHeader, upstream_label(provider.name, ref->model));
    if (auto id = upstream_request_id(response.headers()))
        headers.emplace_back(kUpstreamRequestIdHeader, *id);

    if (response.status() != 200) {
        auto error_body = co_await response.read_all(kMaxErrorBody);
        m.t.done = steady_now_ns();
        m.status = RequestStatus::http(static_cast<int>(response.status()));
        ClientReply reply =
            upstream_error_reply(provider, response.status(),
                                 error_body ? std::string_view(*error_body) : std::string_view());
        reply.headers = std::move(headers);
        reply.record_status = m.status;
        if (auto ra = response.headers().find(http::field::retry_after);
            ra != response.headers().end()) {
            reply.headers.emplace_back("retry-after", std::string(ra->value()));
        }
        gw.record(std::move(m));
        co_await send_reply(gw, writer, reply);
        co_return;
    }
    if (completion.stream) {
        headers.emplace_back(kOverheadHeader, std::to_string(m.overhead_ns.value_or(0) / 1000));
        headers.emplace_back("cache-control", "no-cache");
        // The head goes out now, so the client has it while the upstream thinks.
        if (auto ec =
                co_await writer.start_stream(http::status::ok, "text/event-stream", headers)) {
            m.status = RequestStatus::cancelled;
            m.t.done = steady_now_ns();
        } else {
            m.status = co_await relay_completion_stream(gw, response, writer, provider, ref->model,
                                                        completion.include_usage, m);
        }
        gw.metrics.observe_request(m.status);
    } else {
        m.status = co_await relay_completion(gw, response, writer, provider, m, headers);
    }
    key.tokens += m.prompt_tokens.value_or(0) + m.output_tokens.value_or(0);  // settled after
    gw.record(std::move(m));
}

}  // namespace tokenradar::gateway
