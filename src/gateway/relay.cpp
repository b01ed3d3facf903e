// POST /v1/chat/completions: routing over the virtual model's upstreams, translation, the
// relay, and one metrics.md record per attempt.
//
// Fallback happens only while the client has received nothing: a connect error, a timeout
// before the response head, or an upstream 5xx/429 moves the request to the next upstream.
// Once the stream has started, an upstream failure ends it with a well-formed error event.

#include "gateway_impl.hpp"

#include "client_stream.hpp"
#include "relay_attempt.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/labels.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/egress.hpp>
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/dialect/stream_meter.hpp>
#include <tokenradar/dialect/translate.hpp>
#include <tokenradar/net/response_watchdog.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/string.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
using dialect::Api;

constexpr std::size_t kMaxUpstreamBody = 16 * 1024 * 1024;
constexpr std::size_t kMaxErrorBody = 64 * 1024;

// Who answered, for a stored answer's hits.
cache::Origin origin_of(const Attempt& a) {
    return {a.provider.name, a.model, a.provider.base.host, a.provider.region,
            std::string(dialect::to_string(a.provider.api))};
}

}  // namespace

Measurement start_record(const Attempt& a, const std::string& request_id, const std::string& task,
                         bool stream) {
    Measurement m;
    m.request_id = request_id;
    m.attempt = a.number;
    m.labels.provider = a.provider.name;
    m.labels.model = a.model;
    m.labels.endpoint = a.provider.base.host;
    m.labels.upstream_region = a.provider.region;
    m.labels.client_region = a.client_region;
    m.labels.task = task;
    m.labels.source = "gateway";
    m.labels.cache = a.cache.label;
    m.labels.route = a.route;
    m.labels.api = std::string(dialect::to_string(a.provider.api));
    m.labels.stream = stream;
    m.labels.client_key = a.key->name;
    m.t.send = steady_now_ns();
    m.ts_us = wall_now_us();
    return m;
}

bool falls_back(Errc code) {
    switch (code) {
        case Errc::connect_failed:
        case Errc::tls_failed:
        case Errc::timeout_connect:
        case Errc::timeout_headers:
        case Errc::connection_error:
        case Errc::protocol_error:
            return true;
        default:
            return false;
    }
}

bool falls_back(unsigned http_status) { return http_status == 429 || http_status >= 500; }

void record_attempt(Gateway::Impl& gw, const Attempt& a, Measurement&& m) {
    a.lease.end(m);
    a.key->tokens += m.prompt_tokens.value_or(0) + m.output_tokens.value_or(0);
    gw.record(std::move(m));
}

ClientReply reply_for(Errc code, std::string_view message, const Attempt& a) {
    ClientReply r;
    r.status = static_cast<http::status>(http_status(code));
    r.body = openai_error_body(code, fmt::format("upstream {}: {}", a.provider.name, message));
    a.provider.key.redact_in(r.body);  // a parse error may quote the upstream's bytes
    r.record_status = status_of(make_error_code(code));
    return r;
}

awaitable<void> send_reply(Gateway::Impl& gw, net::ResponseWriter& writer, ClientReply& reply) {
    gw.metrics.observe_request(reply.record_status);
    std::string body = std::move(reply.body);
    co_await writer.send(reply.status, "application/json", std::move(body), reply.headers);
}

namespace {

std::int64_t micros(std::int64_t ns) { return ns / 1000; }

// metrics.md overhead_ns, request side: from ready (the client request read, or the
// previous attempt's end) to the upstream request's first byte written. A fresh upstream
// connection's connect and TLS time is part of it (and is recorded on its own as connect_ns
// and tls_ns): a pooled connection would not have cost it.
std::int64_t request_overhead_ns(const Measurement& m, std::int64_t t_ready) {
    return std::max<std::int64_t>(0, m.t.send - t_ready);
}

struct RelayFigures {
    std::vector<std::int64_t> relay_ns;  // per upstream piece: read -> written to the client
    void into(Measurement& m) {
        if (relay_ns.empty()) return;
        auto mid = relay_ns.begin() + static_cast<std::ptrdiff_t>(relay_ns.size() / 2);
        std::nth_element(relay_ns.begin(), mid, relay_ns.end());
        m.relay_p50_ns = *mid;
        m.relay_max_ns = *std::max_element(relay_ns.begin(), relay_ns.end());
    }
};

// Counts one write's relay delay: from the upstream read at `read_ns` to now (written).
void observe_relay(Gateway::Impl& gw, RelayFigures& figures, std::int64_t read_ns) {
    const std::int64_t relay_ns = steady_now_ns() - read_ns;
    figures.relay_ns.push_back(relay_ns);
    gw.metrics.observe_relay_ns(relay_ns);
}

// Writes `out` to the client, with the response head when it is still pending (`head` is
// then cleared; with an empty `out` the head goes alone), and empties `out`. Counts the
// relay delay from the upstream read at `read_ns`. False when the client is gone.
awaitable<bool> flush_to_client(Gateway::Impl& gw, ClientStream& stream,
                                const net::HeaderList*& head, std::string& out,
                                std::int64_t read_ns, RelayFigures& figures) {
    if (head != nullptr) {
        const net::HeaderList& headers = *std::exchange(head, nullptr);
        if (auto ec = co_await start_client(stream, headers, out)) co_return false;
    } else if (out.empty()) {
        co_return true;
    } else if (auto ec = co_await write_client(stream, out)) {
        co_return false;
    }
    if (!out.empty()) observe_relay(gw, figures, read_ns);
    out.clear();
    co_return true;
}

// Until the first token is out, a piece is decoded an event at a time ("\n\n"-framed; the
// parser is incremental, so any split is safe) and written as soon as the first token is
// decoded: decoding the rest of the piece (up to ~70 events of the sim's) would hold the
// client's first token back. After it, the whole rest at once.
std::string_view next_part(std::string_view rest, bool first_token_out) {
    if (first_token_out) return rest;
    const auto end = rest.find("\n\n");
    return end == std::string_view::npos ? rest : rest.substr(0, end + 2);
}

// Relays an upstream stream to the client. Returns the record's status. With `head` set the
// client's response head has not been sent yet: it leaves with the first piece's events in
// one write (the upstream's first bytes came with its head, so that read does not wait).
// `early` pieces (read by the race) go first, with the times they were read.
//
// Writes: one per upstream read (a read is up to 16 KiB: ~70 of the sim's events), plus one
// as soon as the first token is decoded. A write costs far more than decoding an event (a
// syscall that wakes the client: ~10 us here, against 0.1-0.5 us), so splitting a read's events
// over several writes would delay its last events by the extra writes and cost CPU. The read
// that brings the terminal event leaves with the end of the stream, in one write.
awaitable<RequestStatus> relay_stream(Gateway::Impl& gw, net::StreamingResponse& response,
                                      net::ResponseWriter& writer, const Attempt& a, Measurement& m,
                                      bool client_wants_usage, const net::HeaderList* head,
                                      std::span<EarlyPiece> early) {
    // The answer for the cache, piece by piece with its times; dropped when it grows too large.
    std::optional<cache::AnswerBuilder> answer;
    if (a.cache.stores()) answer.emplace();
    auto executor = co_await net::asio::this_coro::executor;
    auto stream = std::make_shared<ClientStream>(executor, writer);
    start_heartbeat(stream, gw.config.heartbeat_interval);
    const HeartbeatGuard heartbeat_guard(*stream);

    net::ResponseWatchdog first_token_watchdog(
        executor, response,
        SteadyClock::time_point(Nanos(m.t.send)) + a.provider.first_token_timeout);
    dialect::StreamMeter meter(a.provider.api);
    dialect::StreamMeta meta;
    meta.created = wall_now_us() / 1'000'000;
    meta.include_usage = client_wants_usage;
    dialect::StreamTranslator translator(a.provider.api, client_wants_usage, std::move(meta));
    const dialect::StreamAccumulator& acc = meter.accumulator();
    RelayFigures figures;
    std::string out;               // translated bytes not yet written
    std::int64_t out_read_ns = 0;  // the upstream read that brought them
    std::optional<Error> failure;
    bool client_gone = false;
    bool first_token_out = false;

    std::size_t next_early = 0;
    while (!failure) {
        Result<std::string_view> piece = std::string_view();
        std::int64_t now = 0;
        if (next_early < early.size()) {
            piece = std::string_view(early[next_early].bytes);
            now = early[next_early].read_ns;
            ++next_early;
        } else {
            piece = co_await response.read_some();
            now = steady_now_ns();
        }
        if (!piece) {
            failure = piece.error();
            if (first_token_watchdog.fired()) {
                failure =
                    Error(Errc::timeout_first_token, "no token before the first-token timeout");
            }
            break;
        }
        if (piece->empty()) {
            if (auto ended = meter.end(now); !ended) failure = ended.error();
            break;
        }
        out_read_ns = now;
        out.reserve(piece->size() + piece->size() / 4);  // about what the events re-encode to
        std::string_view rest = *piece;
        while (!rest.empty()) {
            const std::string_view part = next_part(rest, first_token_out);
            rest.remove_prefix(part.size());
            auto fed = meter.feed(
                part, now,
                [&](const sse::SseEvent& event, std::span<const dialect::StreamDelta> deltas) {
                    translator.on_event(event, deltas, out);
                    if (answer) answer->add(deltas, now - m.t.send);
                });
            if (answer && answer->bytes_so_far() > a.cache.model->cache.max_entry_bytes) {
                answer.reset();
            }
            if (!fed) {
                failure = fed.error();
                break;
            }
            if (!first_token_out && acc.times().first_token) {
                first_token_out = true;
                first_token_watchdog.disarm();
                a.lease.first_token(now, now - m.t.send);
                if (!rest.empty() &&
                    !co_await flush_to_client(gw, *stream, head, out, now, figures)) {
                    client_gone = true;
                    break;
                }
            }
        }
        if (client_gone) break;
        // An upstream's in-stream error event is relayed, its message included: one that
        // echoes the key the gateway sent must not hand it to the client.
        if (acc.error()) a.provider.key.redact_in(out);
        if (acc.saw_done() && !failure) break;  // `out` leaves with the end of the stream
        if (!co_await flush_to_client(gw, *stream, head, out, now, figures)) {
            client_gone = true;
            break;
        }
    }
    first_token_watchdog.disarm();
    if (failure) meter.abandon(steady_now_ns());
    client_gone = client_gone || writer.client_gone();

    // `out` holds what is not written yet: the last read's events when the terminal event came.
    const RequestStatus status =
        end_of_stream(a.provider, a.model, acc, translator, failure, client_gone, out);
    // The heartbeat stops first: after it nothing else writes, so the last bytes and the
    // stream's end go out together.
    co_await stop_heartbeat(*stream);
    if (!client_gone) {
        const bool upstream_bytes = acc.saw_done() && !out.empty();
        boost::system::error_code ec;
        if (head != nullptr) {
            ec = co_await start_client(*stream, *head, out);
            if (!ec) ec = co_await writer.finish();
        } else {
            ec = co_await writer.finish(out);
        }
        if (!ec && upstream_bytes) observe_relay(gw, figures, out_read_ns);
    }
    // Read the upstream to its end so its connection returns to the pool (the client is done).
    while (status.is_ok() && !response.done()) {
        auto rest = co_await response.read_some();
        if (!rest || rest->empty()) break;
    }
    dialect::record_stream(m, acc);
    m.response_id = meter.response_id();
    figures.into(m);
    if (answer && status.is_ok()) {
        if (auto whole = answer->take(origin_of(a), wall_now_us(), true)) {
            gw.cache->store(a.cache, std::move(*whole));
        }
    }
    co_return status;
}

}  // namespace

RequestStatus end_of_stream(const ProviderConfig& provider, std::string_view model,
                            const dialect::StreamAccumulator& acc,
                            dialect::StreamTranslator& translator,
                            const std::optional<Error>& failure, bool client_gone,
                            std::string& out) {
    RequestStatus status = RequestStatus::ok;
    if (client_gone) {
        status = RequestStatus::cancelled;
    } else if (failure) {
        status = status_of(failure->code);
        spdlog::info("upstream {} stream failed: {}", upstream_label(provider.name, model),
                     failure->message);
        translator.fail(errc_of(*failure, Errc::connection_error),
                        fmt::format("upstream {}: {}", provider.name, failure->message), out);
    } else if (const auto& in_stream = acc.error()) {
        status = RequestStatus::http(dialect::error_http_status(provider.api, in_stream->code));
        translator.finish(out);
    } else if (!acc.saw_done()) {
        status = RequestStatus::protocol_error;
        translator.fail(
            Errc::protocol_error,
            fmt::format("upstream {}: the stream ended without its terminal event", provider.name),
            out);
    } else {
        translator.finish(out);
    }
    if (failure || acc.error()) provider.key.redact_in(out);  // messages may quote upstream bytes
    return status;
}

// What the client is told when the upstream answered an error status.
ClientReply upstream_error_reply(const ProviderConfig& provider, unsigned upstream_status,
                                 std::string_view upstream_body) {
    ClientReply reply;
    if (upstream_status == 401 || upstream_status == 403) {
        // The upstream refused the gateway's own key: not something the client can fix.
        reply.status = http::status::bad_gateway;
        reply.body =
            openai_error_body(Errc::upstream_http_error,
                              fmt::format("upstream {} refused the gateway's credentials (HTTP {})",
                                          provider.name, upstream_status));
    } else {
        auto translated = dialect::translate_error(provider.api, static_cast<int>(upstream_status),
                                                   upstream_body);
        reply.status = static_cast<http::status>(translated.http_status);
        reply.body = std::move(translated.body);
        provider.key.redact_in(reply.body);  // an upstream may echo the key it received
    }
    return reply;
}

namespace {

// A whole (non-streamed) upstream answer in the client's dialect, with the record's usage and
// status filled in; nullopt (and `reply` set, `m.status` not ok) when it could not be read or
// relayed.
std::optional<std::string> relayed_body(const Attempt& a, Result<std::string> body, Measurement& m,
                                        ClientReply& reply) {
    if (!body) {
        m.status = status_of(body.error().code);
        reply = reply_for(errc_of(body.error(), Errc::connection_error), body.error().message, a);
        return std::nullopt;
    }
    auto relayed =
        dialect::relay_response(a.provider.api, std::move(*body), wall_now_us() / 1'000'000, m);
    if (!relayed) {
        m.status = RequestStatus::protocol_error;
        reply = reply_for(Errc::protocol_error, relayed.error().message, a);
        return std::nullopt;
    }
    return std::move(*relayed);
}

// A whole answer (the client's chat.completion) into the cache, as arrived `e2e_ns` after the
// upstream request was sent.
void store_response(Gateway::Impl& gw, const Attempt& a, std::string_view client_body,
                    std::int64_t e2e_ns) {
    auto response = dialect::parse_openai_response(client_body);
    if (!response) return;  // relayed as it came; not an answer the cache can hold
    gw.cache->store(a.cache,
                    cache::answer_from_response(*response, origin_of(a), e2e_ns, wall_now_us()));
}

}  // namespace

awaitable<Result<std::unique_ptr<net::StreamingResponse>>> open_attempt(const Attempt& a,
                                                                        dialect::HttpCall& call,
                                                                        Measurement& m) {
    const std::int64_t t_start = m.t.send;
    net::Url url = a.provider.base;
    url.target = std::move(call.target);
    auto opened = co_await a.client.open(http::verb::post, url, call.headers, std::move(call.body));
    m.t.sched = m.t.send;
    if (!opened) {
        m.status = status_of(opened.error().code);
        m.t.done = steady_now_ns();
        co_return opened.error();
    }
    net::record_timings(m, (*opened)->timings(), t_start);
    m.t.sched = m.t.send;
    m.http_status = static_cast<int>((*opened)->status());
    m.overhead_ns = request_overhead_ns(m, a.t_ready);
    co_return std::move(*opened);
}

bool open_failed(Gateway::Impl& gw, const Attempt& a, Measurement&& m, const Error& error,
                 const net::HeaderList& headers, ClientReply& reply) {
    const Errc code = errc_of(error, Errc::connection_error);
    record_attempt(gw, a, std::move(m));
    reply = reply_for(code, error.message, a);
    reply.headers = headers;
    return falls_back(code);
}

awaitable<bool> error_status(Gateway::Impl& gw, const Attempt& a, Measurement&& m,
                             net::StreamingResponse& response, const net::HeaderList& headers,
                             ClientReply& reply) {
    auto body = co_await response.read_all(kMaxErrorBody);
    m.t.done = steady_now_ns();
    m.status = RequestStatus::http(static_cast<int>(response.status()));
    const std::string_view upstream_body = body ? std::string_view(*body) : std::string_view{};
    reply = upstream_error_reply(a.provider, response.status(), upstream_body);
    reply.headers = headers;
    reply.record_status = m.status;
    if (auto ra = response.headers().find(http::field::retry_after);
        ra != response.headers().end()) {
        reply.headers.emplace_back("retry-after", std::string(ra->value()));
    }
    record_attempt(gw, a, std::move(m));
    co_return falls_back(response.status());
}

void add_upstream_headers(const Attempt& a, const net::StreamingResponse& response,
                          net::HeaderList& headers) {
    headers.emplace_back(kUpstreamHeader, upstream_label(a.provider.name, a.model));
    headers.emplace_back(kCacheHeader, a.cache.header);
    headers.emplace_back(kRouteHeader, to_string(a.route));
    if (auto id = upstream_request_id(response.headers()))
        headers.emplace_back(kUpstreamRequestIdHeader, *id);
}

awaitable<void> answer_stream(Gateway::Impl& gw, const dialect::ChatRequest& chat,
                              net::ResponseWriter& writer, const Attempt& a, Measurement&& m,
                              net::StreamingResponse& response, net::HeaderList& headers,
                              std::span<EarlyPiece> early) {
    headers.emplace_back(kOverheadHeader, std::to_string(micros(m.overhead_ns.value_or(0))));
    headers.emplace_back("cache-control", "no-cache");
    // The head goes out now, so the client has it while the upstream thinks; unless the first
    // events came with the upstream's head (or the race read them): then both leave in one
    // write (one wake-up of the client less on the way to its first token).
    const bool head_with_first_piece = response.body_buffered() || !early.empty();
    if (!head_with_first_piece) {
        if (auto ec =
                co_await writer.start_stream(http::status::ok, "text/event-stream", headers)) {
            m.status = RequestStatus::cancelled;
            m.t.done = steady_now_ns();
            gw.metrics.observe_request(m.status);
            record_attempt(gw, a, std::move(m));
            co_return;
        }
    }
    const net::HeaderList* pending_head = head_with_first_piece ? &headers : nullptr;
    m.status =
        co_await relay_stream(gw, response, writer, a, m, chat.include_usage, pending_head, early);
    gw.metrics.observe_request(m.status);
    record_attempt(gw, a, std::move(m));
}

namespace {

// One attempt against one upstream. Returns true when the client has been answered (or is
// gone); false when the attempt failed before any byte reached the client and `reply` holds
// what to tell the client if no other upstream does better.
//
// `headers` holds the client's base headers (x-tokenradar-request-id); the attempt appends its
// own, and the caller drops them again before the next attempt.
awaitable<bool> try_upstream(Gateway::Impl& gw, const dialect::ChatRequest& chat,
                             net::ResponseWriter& writer, const Attempt& a, dialect::HttpCall& call,
                             const std::string& request_id, const std::string& task,
                             net::HeaderList& headers, ClientReply& reply) {
    Measurement m = start_record(a, request_id, task, chat.stream);
    auto opened = co_await open_attempt(a, call, m);
    if (!opened) {
        const Error error = opened.error();
        if (open_failed(gw, a, std::move(m), error, headers, reply)) {
            co_return writer.client_gone() || error.code == Errc::cancelled;
        }
        if (error.code == Errc::cancelled || writer.client_gone()) co_return true;
        co_await send_reply(gw, writer, reply);
        co_return true;
    }
    net::StreamingResponse& response = **opened;
    add_upstream_headers(a, response, headers);
    if (response.status() != 200) {
        if (co_await error_status(gw, a, std::move(m), response, headers, reply)) co_return false;
        co_await send_reply(gw, writer, reply);
        co_return true;
    }
    if (chat.stream) {
        const std::span<EarlyPiece> none;
        co_await answer_stream(gw, chat, writer, a, std::move(m), response, headers, none);
        co_return true;
    }
    auto body = co_await response.read_all(kMaxUpstreamBody);
    const std::int64_t t_body = steady_now_ns();
    m.t.done = t_body;
    std::optional<std::string> client_body = relayed_body(a, std::move(body), m, reply);
    if (!client_body) {
        reply.headers = headers;
        record_attempt(gw, a, std::move(m));
        co_return writer.client_gone();
    }
    if (a.cache.stores()) store_response(gw, a, *client_body, m.t.done.value() - m.t.send);
    // Response-side overhead: upstream body read -> our response's first byte.
    const std::int64_t total_overhead = m.overhead_ns.value_or(0) + (steady_now_ns() - t_body);
    m.overhead_ns = total_overhead;
    headers.emplace_back(kOverheadHeader, std::to_string(micros(total_overhead)));
    auto ec = co_await writer.send(http::status::ok, "application/json", std::move(*client_body),
                                   headers);
    if (ec) m.status = RequestStatus::cancelled;
    gw.metrics.observe_request(m.status);
    record_attempt(gw, a, std::move(m));
    co_return true;
}

// The client's region: for a nearest-region model x-tokenradar-client-region when it names
// one, else what the hook finds (GeoIP, when configured); "" when unknown or malformed. The
// header is looked for only where it matters: a lookup by name costs ~400 instructions.
std::string client_region_of(const Gateway::Impl& gw, const VirtualModel& model,
                             const net::Request& request, const net::ResponseWriter& writer) {
    if (model.routing.nearest_region) {
        if (const auto it = request.find("x-tokenradar-client-region"); it != request.end()) {
            const std::string_view value = it->value();
            return is_simple_name(value) ? std::string(value) : std::string();
        }
    }
    return gw.hooks.client_region ? gw.hooks.client_region(request, writer) : std::string();
}

// RouteQuery::elsewhere for nearest-region routing: every member outside the region whose
// upstream is measured fastest from `client_region`; 0 when nothing is measured.
std::uint64_t outside_nearest_region(const Gateway::Impl& gw, const VirtualModel& model,
                                     std::string_view client_region) {
    if (client_region.empty() || !gw.hooks.region_ttft) return 0;
    std::optional<double> best;
    const std::string* nearest = nullptr;
    for (const UpstreamRef& ref : model.upstreams) {
        const ProviderConfig& p = gw.config.providers[ref.provider];
        const auto ttft = gw.hooks.region_ttft(client_region, p.name, ref.model);
        if (ttft && (!best || *ttft < *best)) {
            best = ttft;
            nearest = &p.region;
        }
    }
    if (nearest == nullptr) return 0;
    std::uint64_t elsewhere = 0;
    for (std::size_t i = 0; i < model.upstreams.size(); ++i) {
        if (gw.config.providers[model.upstreams[i].provider].region != *nearest) {
            elsewhere |= std::uint64_t{1} << i;
        }
    }
    return elsewhere;
}

// A task label from the client (x-tokenradar-task), held to the configuration's name rule.
std::optional<std::string> task_from(const net::Request& request, const VirtualModel& model) {
    const auto it = request.find("x-tokenradar-task");
    if (it == request.end()) return model.task;
    const std::string_view value = it->value();
    if (!is_simple_name(value)) return std::nullopt;
    return std::string(value);
}

}  // namespace

awaitable<void> relay_chat(Gateway::Impl& gw, net::Request& request, net::ResponseWriter& writer,
                           std::string request_id, net::HeaderList& headers, RequestKey& key,
                           ClientDoor door) {
    const dialect::ClientApi client_api = door.api;
    auto chat = dialect::parse_client_request(client_api, request.body(), door.model, door.stream);
    // An OpenAI upstream gets an OpenAI client's own bytes; any other client's request is
    // serialized from its OpenAI equivalent (chat->original).
    const std::string_view client_text =
        client_api == dialect::ClientApi::openai ? request.body() : std::string_view();
    if (!chat) {
        co_await send_error(gw, writer, Errc::bad_request, chat.error().message, headers);
        co_return;
    }
    const VirtualModel* model = gw.config.find_model(chat->model);
    if (model == nullptr) {
        co_await send_error(
            gw, writer, Errc::not_found,
            fmt::format("model '{}' is not served here; GET /v1/models lists the models",
                        chat->model),
            headers);
        co_return;
    }
    const auto task = task_from(request, *model);
    if (!task) {
        co_await send_error(gw, writer, Errc::bad_request,
                            fmt::format("x-tokenradar-task: expected {}", kSimpleNameRule),
                            headers);
        co_return;
    }

    if (key.key) {
        const bool admitted = co_await admit_key(gw, writer, key, chat->model, headers);
        if (!admitted) co_return;
    }

    CacheLookup lookup;
    if (gw.cache) {
        const ResponseCache::Embed embed = [&gw, &request_id](const UpstreamRef& ref,
                                                              std::string_view text) {
            return embed_upstream(gw, ref, text, request_id);
        };
        lookup = co_await gw.cache->look_up(*model, key.tenant, *chat, request, embed);
        if (lookup.hit) {
            co_await replay_hit(gw, writer, *chat, lookup, request_id, *task, key.name, headers);
            co_return;
        }
        if (lookup.only_if_cached) {
            headers.emplace_back(kCacheHeader, lookup.header);
            co_await send_error(gw, writer, Errc::timeout_total,
                                "Cache-Control: only-if-cached, and no cached answer",
                                std::move(headers));
            co_return;
        }
    }

    route::Router& router = gw.routing->router(*model);
    const route::RoutingPolicy& policy = router.policy();
    std::vector<std::uint64_t> prefix;
    if (policy.strategy == route::Strategy::affinity) {
        prefix =
            route::prefix_blocks(*chat, policy.affinity.block_bytes, policy.affinity.max_blocks);
    }
    const std::int64_t t_read = writer.request_read_ns();
    route::RouteQuery query;
    query.now_ns = t_read;
    query.prompt_tokens = static_cast<std::int64_t>(request.body().size() / 4);
    query.max_tokens = chat->max_tokens;
    query.task = *task;
    query.prefix = prefix;
    const std::string client_region = client_region_of(gw, *model, request, writer);
    if (policy.nearest_region) query.elsewhere = outside_nearest_region(gw, *model, client_region);
    router.count_request();
    std::optional<route::Pick> pick = router.pick(query);
    // The race keeps the client silent until a first token: only worth it when a hedge can
    // go (a delay known for this upstream and request) or a deadline is set.
    const bool hedges =
        pick && policy.hedge.enabled &&
        router.hedge_delay(pick->member, query.prompt_tokens, !chat->tools.empty()).has_value();
    if (pick && chat->stream && (hedges || policy.ttft_deadline_ns > 0)) {
        const RaceRequest race{*chat,  *model,      query,  request_id,    *task,
                               lookup, client_text, prefix, client_region, &key};
        co_await race_first_token(gw, race, writer, *pick, headers);
        co_return;
    }

    ClientReply reply;
    const std::size_t base_count = headers.size();
    std::int64_t t_ready = t_read;
    for (int number = 1; pick; ++number) {
        const UpstreamRef& ref = Routing::member(*model, pick->member);
        const ProviderConfig& provider = gw.config.providers[ref.provider];
        auto call =
            dialect::make_upstream_call(*chat, provider.api, provider.base.target, ref.model,
                                        provider.key, client_text, model->prompt_cache);
        if (!call) {
            // The first upstream cannot take this request: say why. A fallback that cannot
            // take it leaves the previous upstream's answer standing.
            if (number == 1) {
                co_await send_error(gw, writer, Errc::unsupported,
                                    dialect::client_field_message(client_api, call.error().message),
                                    headers);
                co_return;
            }
            break;
        }
        AttemptLease lease(router.member(pick->member), query.prompt_tokens, t_ready);
        gw.routing->picked(*model, pick->member, t_ready);
        const Attempt attempt{
            provider,    ref.model, gw.client(ref.provider), number, t_ready, lookup,
            pick->route, lease,     client_region,           &key};
        const bool answered = co_await try_upstream(gw, *chat, writer, attempt, *call, request_id,
                                                    *task, headers, reply);
        if (answered) {
            router.served(prefix, pick->member);
            co_return;
        }
        headers.resize(base_count);  // the next attempt adds its own
        t_ready = steady_now_ns();
        query.tried |= std::uint64_t{1} << pick->member;
        query.now_ns = t_ready;
        pick = router.pick(query);
    }
    if (reply.headers.empty()) reply.headers = headers;
    co_await send_reply(gw, writer, reply);
}

std::optional<std::string_view> upstream_request_id(const boost::beast::http::fields& upstream) {
    // One pass over the few fields, names compared by length first: two find()s by name cost
    // ~800 instructions per request.
    constexpr std::string_view kOpenAi = "x-request-id";
    constexpr std::string_view kAnthropic = "request-id";
    for (const auto& field : upstream) {
        const std::string_view name = field.name_string();
        const bool match =
            (name.size() == kOpenAi.size() && boost::beast::iequals(name, kOpenAi)) ||
            (name.size() == kAnthropic.size() && boost::beast::iequals(name, kAnthropic));
        if (!match) continue;
        const std::string_view value = field.value();
        const bool printable =
            std::all_of(value.begin(), value.end(), [](char c) { return c > ' ' && c < 127; });
        if (value.empty() || value.size() > 128 || !printable) return std::nullopt;
        return value;
    }
    return std::nullopt;
}

}  // namespace tokenradar::gateway
