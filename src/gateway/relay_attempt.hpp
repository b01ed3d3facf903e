#pragma once
// Private to the gateway: one attempt of the chat relay (relay.cpp), as the first-token race
// of hedged and deadline-bound streams (race.cpp) shares it.

#include "gateway_impl.hpp"
#include "routing.hpp"

#include <tokenradar/dialect/stream_accumulator.hpp>
#include <tokenradar/dialect/translate.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tokenradar::gateway {

// One attempt: which upstream, why (the route), and its hold on the upstream's estimate.
struct Attempt {
    const ProviderConfig& provider;
    const std::string& model;
    net::HttpClient& client;
    int number;            // 1 = the first attempt of the client request
    std::int64_t t_ready;  // steady ns: the client request read, or when this attempt was due
    const CacheLookup& cache;
    Route route;
    AttemptLease& lease;
    std::string_view client_region;  // the record's client_region ("" = unknown)
    RequestKey* key;  // the record's client_key; its token count grows by the attempt's usage
};

// What the client gets when no upstream succeeded: the last attempt's answer.
struct ClientReply {
    boost::beast::http::status status = boost::beast::http::status::bad_gateway;
    std::string body;
    net::HeaderList headers;
    RequestStatus record_status;  // metrics.md status, for tokenradar_requests_total
};

// Upstream body bytes read before the attempt was chosen (the race reads up to the first
// token), with the time of the read that brought them: relayed and metered as if read now.
struct EarlyPiece {
    std::string bytes;
    std::int64_t read_ns = 0;
};

// The attempt's record, stamped as sent now.
Measurement start_record(const Attempt& a, const std::string& request_id, const std::string& task,
                         bool stream);
// Whether an error before the first byte, or an upstream status, moves on to the next upstream.
bool falls_back(Errc code);
bool falls_back(unsigned http_status);
// Reports the outcome to the upstream's estimate, then records the attempt.
void record_attempt(Gateway::Impl& gw, const Attempt& a, Measurement&& m);
ClientReply reply_for(Errc code, std::string_view message, const Attempt& a);
// An upstream's error status and body as the client's: 401/403 (the gateway's own key) is a
// 502; the rest as translate_error words it, the key redacted.
ClientReply upstream_error_reply(const ProviderConfig& provider, unsigned upstream_status,
                                 std::string_view upstream_body);
awaitable<void> send_reply(Gateway::Impl& gw, net::ResponseWriter& writer, ClientReply& reply);
// Opens the attempt's upstream request; `m` gets its timings (and, on failure, its status
// and end). Suspends; cancelling the awaiting coroutine closes the connection.
awaitable<Result<std::unique_ptr<net::StreamingResponse>>> open_attempt(const Attempt& a,
                                                                        dialect::HttpCall& call,
                                                                        Measurement& m);
// An attempt whose open() failed: recorded; `reply` is what the client would get. Returns
// whether the next upstream may be tried.
bool open_failed(Gateway::Impl& gw, const Attempt& a, Measurement&& m, const Error& error,
                 const net::HeaderList& headers, ClientReply& reply);
// An upstream that answered an error status: reads its body, records the attempt, fills
// `reply`. Returns whether the next upstream may be tried.
awaitable<bool> error_status(Gateway::Impl& gw, const Attempt& a, Measurement&& m,
                             net::StreamingResponse& response, const net::HeaderList& headers,
                             ClientReply& reply);
// The upstream's own headers for the client (x-tokenradar-upstream, -cache, -route,
// x-request-id), appended to `headers`.
void add_upstream_headers(const Attempt& a, const net::StreamingResponse& response,
                          net::HeaderList& headers);

// The record's status once a relayed stream is over (cancelled when the client went away;
// the failure's; the upstream's in-stream error's HTTP status; protocol_error without the
// terminal event), and the stream's last events (an error event when it failed) appended to
// `out`, which holds what is not written yet.
RequestStatus end_of_stream(const ProviderConfig& provider, std::string_view model,
                            const dialect::StreamAccumulator& acc,
                            dialect::StreamTranslator& translator,
                            const std::optional<Error>& failure, bool client_gone,
                            std::string& out);

// The rest of a streamed attempt whose upstream answered 200 (`headers` has the upstream's
// own): sends the head (with the first events, or alone when none are buffered), relays the
// stream, records the attempt. `early`: what the race read before choosing this attempt.
awaitable<void> answer_stream(Gateway::Impl& gw, const dialect::ChatRequest& chat,
                              net::ResponseWriter& writer, const Attempt& a, Measurement&& m,
                              net::StreamingResponse& response, net::HeaderList& headers,
                              std::span<EarlyPiece> early);

// Streams with a hedge or a TTFT deadline (race.cpp): attempts race to the first token, the
// first wins and is relayed, the others are cancelled. Called by relay_chat with the request
// already routed to its first upstream (`first`); returns when the client was answered.
struct RaceRequest {
    const dialect::ChatRequest& chat;
    const VirtualModel& model;
    const route::RouteQuery& query;
    const std::string& request_id;
    const std::string& task;
    const CacheLookup& lookup;
    std::string_view client_body;
    std::span<const std::uint64_t> prefix;
    std::string_view client_region;
    RequestKey* key;
};
awaitable<void> race_first_token(Gateway::Impl& gw, const RaceRequest& request,
                                 net::ResponseWriter& writer, route::Pick first,
                                 net::HeaderList& headers);

}  // namespace tokenradar::gateway
