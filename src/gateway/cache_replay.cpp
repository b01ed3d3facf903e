// A cache hit answered: the cached answer as the client asked for it (a chat.completion body, or
// the original stream's chunks, at once or with their original gaps), and its record.

#include "gateway_impl.hpp"
#include "response_cache.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;

// The record of a hit: the original upstream's labels with the hit's kind, the hit's own
// (tiny) times, and the original's usage.
Measurement hit_record(const CacheLookup& lookup, const std::string& request_id,
                       const std::string& task, std::string_view client_key, bool stream,
                       std::int64_t t_read) {
    const cache::CachedAnswer& answer = *lookup.hit;
    Measurement m;
    m.request_id = request_id;
    m.labels.provider = answer.origin.provider;
    m.labels.model = answer.origin.model;
    m.labels.endpoint = answer.origin.endpoint;
    m.labels.upstream_region = answer.origin.region;
    m.labels.api = answer.origin.api;
    m.labels.task = task;
    m.labels.source = "gateway";
    m.labels.cache = lookup.label;
    m.labels.route = Route::primary;
    m.labels.stream = stream;
    m.labels.client_key = client_key;
    m.t.sched = t_read;
    m.t.send = t_read;
    m.ts_us = wall_now_us();
    m.http_status = 200;
    m.response_id = answer.response_id;
    dialect::record_usage(m, answer.usage);
    return m;
}

// Deltas that carry output, for the record's output_events.
std::int64_t output_events(const std::vector<cache::TimedDelta>& deltas) {
    std::int64_t n = 0;
    for (const auto& d : deltas) n += d.delta.carries_output() ? 1 : 0;
    return n;
}

awaitable<boost::system::error_code> pause_ns(std::int64_t ns) {
    net::asio::steady_timer timer(co_await net::asio::this_coro::executor);
    timer.expires_after(std::chrono::nanoseconds(ns));
    auto [ec] = co_await timer.async_wait(net::asio::as_tuple(net::asio::use_awaitable));
    co_return ec;
}

// The stream replay: every delta group (the pieces one upstream read brought) encoded as the
// OpenAI chunks they were, at once or, paced, each group after the original gap since the one
// before. The first group goes with the response head. Returns false when the client left.
awaitable<bool> replay_stream(net::ResponseWriter& writer, const dialect::ChatRequest& chat,
                              const cache::CachedAnswer& answer, const std::string& request_id,
                              bool paced, const net::HeaderList& headers, Measurement& m) {
    const auto deltas = cache::replay_deltas(answer);
    dialect::StreamMeta meta;
    meta.id = "chatcmpl-" + request_id;
    meta.model = answer.model;
    meta.created = wall_now_us() / 1'000'000;
    meta.include_usage = chat.include_usage;
    dialect::OpenAiStreamEncoder encoder(std::move(meta));
    m.output_events = output_events(deltas);
    std::string out;
    bool started = false;
    bool first_token_stamped = false;
    std::size_t i = 0;
    while (i < deltas.size()) {
        // One group: the deltas that arrived together (all of them when not paced).
        const std::int64_t group_at = deltas[i].at_ns;
        bool carries_output = false;
        for (; i < deltas.size() && (!paced || deltas[i].at_ns == group_at); ++i) {
            encoder.encode(deltas[i].delta, out);
            carries_output = carries_output || deltas[i].delta.carries_output();
        }
        const bool last = i == deltas.size();
        if (last) encoder.finish(out);
        boost::system::error_code ec;
        if (!started) {
            ec = co_await writer.start_stream(http::status::ok, "text/event-stream", headers,
                                              last ? std::string_view{} : std::string_view(out));
            started = true;
            m.t.headers = steady_now_ns();
            m.t.first_chunk = m.t.headers;
            if (!last) out.clear();
        }
        if (!ec && last) {
            ec = co_await writer.finish(out);
        } else if (!ec && !out.empty()) {
            ec = co_await writer.write_chunk(out);
        }
        out.clear();
        if (ec) co_return false;
        const std::int64_t written = steady_now_ns();
        if (carries_output) {
            if (!first_token_stamped) m.t.first_token = written;
            first_token_stamped = true;
            m.t.last_token = written;
        }
        if (!last) {
            const std::int64_t gap = deltas[i].at_ns - group_at;
            if (gap > 0) {
                const auto paused = co_await pause_ns(gap);
                if (paused) co_return false;
            }
        }
    }
    co_return true;
}

}  // namespace

awaitable<void> replay_hit(Gateway::Impl& gw, net::ResponseWriter& writer,
                           const dialect::ChatRequest& chat, const CacheLookup& lookup,
                           const std::string& request_id, const std::string& task,
                           std::string_view client_key, net::HeaderList& headers) {
    const cache::CachedAnswer& answer = *lookup.hit;
    const std::int64_t t_read = writer.request_read_ns();
    Measurement m = hit_record(lookup, request_id, task, client_key, chat.stream, t_read);
    headers.emplace_back(kUpstreamHeader,
                         upstream_label(answer.origin.provider, answer.origin.model));
    headers.emplace_back(kCacheHeader, lookup.header);
    if (lookup.similarity) {
        headers.emplace_back("x-tokenradar-cache-similarity",
                             fmt::format("{:.4f}", *lookup.similarity));
    }
    headers.emplace_back("age", std::to_string(std::max<std::int64_t>(
                                    0, (wall_now_us() - answer.stored_at_us) / 1'000'000)));
    bool delivered = false;
    if (chat.stream) {
        headers.emplace_back("cache-control", "no-cache");
        const bool paced = lookup.model->cache.replay == ModelCache::Replay::paced;
        delivered = co_await replay_stream(writer, chat, answer, request_id, paced, headers, m);
    } else {
        dialect::ChatResponse response = answer.response();
        response.id = "chatcmpl-" + request_id;
        response.created = wall_now_us() / 1'000'000;
        std::string body = dialect::emit_openai_response(response);
        const auto ec =
            co_await writer.send(http::status::ok, "application/json", std::move(body), headers);
        delivered = !ec;
        m.t.headers = steady_now_ns();
        m.t.first_chunk = m.t.headers;
    }
    m.t.done = steady_now_ns();
    m.status = delivered ? RequestStatus::ok : RequestStatus::cancelled;
    if (delivered) gw.cache->observe_hit(lookup, answer.e2e_ns - (*m.t.done - t_read));
    gw.metrics.observe_request(m.status);
    // Stored, but not an upstream attempt: the gen_ai_* series time the providers.
    if (gw.hooks.sink) gw.hooks.sink(std::move(m));
}

}  // namespace tokenradar::gateway
