#include <tokenradar/bench/probe.hpp>

#include <tokenradar/bench/extra_body.hpp>
#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/stream_meter.hpp>
#include <tokenradar/net/response_watchdog.hpp>

#include <boost/asio/this_coro.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace tokenradar::bench {
namespace {

namespace asio = net::asio;
namespace http = boost::beast::http;

constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kMaxResponseBody = 16 * 1024 * 1024;

dialect::ChatRequest chat_request(const Target& target, const PromptSpec& prompt) {
    dialect::ChatRequest r;
    r.model = target.model;
    if (!prompt.system.empty()) {
        r.messages.push_back(
            {dialect::Role::system, {dialect::ContentPart::make_text(prompt.system)}, {}, {}, {}});
    }
    r.messages.push_back(
        {dialect::Role::user, {dialect::ContentPart::make_text(prompt.user)}, {}, {}, {}});
    r.max_tokens = prompt.max_tokens;
    r.temperature = prompt.temperature;
    r.stream = prompt.stream;
    r.include_usage = true;  // stream_options.include_usage where the API has it
    return r;
}

// Stands in for the user prompt while the body is written once; found again by its JSON form.
constexpr std::string_view kUserMarker = "\x01tokenradar-user-prompt\x01";

// Returns the failure's message ("" when the stream was well-formed and complete).
asio::awaitable<std::string> read_stream(net::StreamingResponse& response, dialect::Api api,
                                         Measurement& m,
                                         net::ResponseWatchdog& first_token_watchdog) {
    dialect::StreamMeter meter(api);
    std::optional<Error> failure;
    while (!failure) {
        auto piece = co_await response.read_some();
        const std::int64_t now = steady_now_ns();
        if (!piece) {
            failure = piece.error();
            if (first_token_watchdog.fired())
                failure =
                    Error(Errc::timeout_first_token, "no token before the first-token timeout");
            break;
        }
        if (piece->empty()) {
            if (auto ended = meter.end(now); !ended) failure = ended.error();
            break;
        }
        if (auto fed = meter.feed(*piece, now); !fed) failure = fed.error();
        if (meter.accumulator().times().first_token) first_token_watchdog.disarm();
        if (meter.accumulator().saw_done()) {
            // Drain to the end of the body so the connection can be reused.
            while (true) {
                auto rest = co_await response.read_some();
                if (!rest || rest->empty()) break;
            }
            break;
        }
    }
    if (failure) meter.abandon(steady_now_ns());
    const dialect::StreamAccumulator& acc = meter.accumulator();
    m.response_id = meter.response_id();
    dialect::record_stream(m, acc);
    if (failure) {
        m.status = status_of(failure->code);
        co_return failure->message;
    }
    if (const auto& in_stream = acc.error()) {
        m.status = RequestStatus::http(dialect::error_http_status(api, in_stream->code));
        co_return fmt::format("in-stream error {}: {}", in_stream->type, in_stream->message);
    }
    if (!acc.saw_done()) {
        m.status = RequestStatus::protocol_error;
        co_return "the stream ended without its terminal event";
    }
    co_return std::string();
}

}  // namespace

Result<PreparedCall> PreparedCall::make(
    const Target& target, const PromptSpec& fixed,
    std::vector<std::pair<std::string, std::string>> extra_headers,
    const boost::json::object& workload_extra_body) {
    PromptSpec marked = fixed;
    marked.user = kUserMarker;
    dialect::ChatRequest request = chat_request(target, marked);
    auto call = dialect::make_http_call(target.api, target.base.target, request, target.key);
    if (!call) return call.error();
    boost::json::object extra = effective_extra_body(workload_extra_body, target.extra_body);
    if (!extra.empty()) {
        auto merged = merge_extra_body(std::move(call->body), extra);
        if (!merged) return merged.error();
        call->body = std::move(*merged);
    }
    PreparedCall prepared;
    prepared.api_ = target.api;
    prepared.target_ = std::move(call->target);
    prepared.headers_ = std::move(call->headers);
    for (auto& header : extra_headers) prepared.headers_.push_back(std::move(header));
    const std::string quoted = boost::json::serialize(boost::json::string_view(kUserMarker));
    const std::size_t at = call->body.find(quoted);
    if (at == std::string::npos || call->body.find(quoted, at + 1) != std::string::npos) {
        prepared.whole_ = std::move(request);
        prepared.extra_body_ = std::move(extra);
        return prepared;
    }
    prepared.before_user_ = call->body.substr(0, at);
    prepared.after_user_ = call->body.substr(at + quoted.size());
    return prepared;
}

Result<std::string> PreparedCall::body(std::string_view user) const {
    if (whole_) {
        dialect::ChatRequest request = *whole_;
        for (auto& message : request.messages) {
            if (message.role == dialect::Role::user)
                message.content = {dialect::ContentPart::make_text(std::string(user))};
        }
        auto emitted = dialect::emit_request(api_, request);
        if (!emitted || extra_body_.empty()) return emitted;
        return merge_extra_body(std::move(*emitted), extra_body_);
    }
    const std::string quoted =
        boost::json::serialize(boost::json::string_view(user.data(), user.size()));
    std::string body;
    body.reserve(before_user_.size() + quoted.size() + after_user_.size());
    body.append(before_user_);
    body.append(quoted);
    body.append(after_user_);
    return body;
}

asio::awaitable<ProbeResult> run_probe(net::HttpClient& client, const Target& target,
                                       ProbeRequest request) {
    ProbeResult result;
    Measurement& m = result.record;
    m.request_id = std::move(request.request_id);
    m.labels.provider = target.name;
    m.labels.model = target.model;
    m.labels.endpoint = target.base.host;
    m.labels.api = std::string(dialect::to_string(target.api));
    m.labels.task = request.task;
    m.labels.source = "bench";
    m.labels.stream = request.prompt.stream;

    const std::int64_t t_start = steady_now_ns();
    m.t.sched = request.t_sched != 0 ? request.t_sched : t_start;
    m.t.send = t_start;
    m.ts_us = wall_now_us();

    std::optional<Result<PreparedCall>> own_call;
    if (request.call == nullptr) {
        own_call.emplace(PreparedCall::make(target, request.prompt,
                                            std::move(request.extra_headers), request.extra_body));
    }
    const Result<PreparedCall>& call = request.call != nullptr ? *request.call : *own_call;
    auto request_body = call ? call->body(request.prompt.user) : Result<std::string>(call.error());
    if (!request_body) {
        m.status = RequestStatus::protocol_error;
        m.t.done = steady_now_ns();
        result.error = request_body.error().message;
        co_return result;
    }
    net::Url url = target.base;
    url.target = call->target();

    auto opened =
        co_await client.open(http::verb::post, url, call->headers(), std::move(*request_body));
    if (!opened) {
        m.status = status_of(opened.error().code);
        m.t.done = steady_now_ns();
        result.error = opened.error().message;
        co_return result;
    }
    net::StreamingResponse& response = **opened;
    const auto& timings = response.timings();
    net::record_timings(m, timings, t_start);
    if (request.t_sched == 0) m.t.sched = m.t.send;
    m.http_status = static_cast<int>(response.status());

    if (response.status() != 200) {
        auto body = co_await response.read_all(kMaxErrorBody);
        m.status = RequestStatus::http(static_cast<int>(response.status()));
        m.t.done = steady_now_ns();
        const auto parsed =
            dialect::parse_error_body(target.api, static_cast<int>(response.status()),
                                      body ? std::string_view(*body) : std::string_view{});
        result.error = fmt::format("HTTP {}: {}", response.status(), parsed.message);
        co_return result;
    }

    if (!request.prompt.stream) {
        auto body = co_await response.read_all(kMaxResponseBody);
        m.t.done = steady_now_ns();
        if (!body) {
            m.status = status_of(body.error().code);
            result.error = body.error().message;
            co_return result;
        }
        // A whole response has no first token of its own: only TTFB and E2E are measured.
        if (auto metered = dialect::meter_response(m, target.api, *body); !metered) {
            m.status = RequestStatus::protocol_error;
            result.error = metered.error().message;
        }
        co_return result;
    }

    auto executor = co_await asio::this_coro::executor;
    net::ResponseWatchdog first_token_watchdog(
        executor, response, SteadyClock::time_point(Nanos(m.t.send)) + request.first_token_timeout);
    result.error = co_await read_stream(response, target.api, m, first_token_watchdog);
    co_return result;
}

}  // namespace tokenradar::bench
