#pragma once
// The server's request reader as sans-IO pieces: how a parser is configured from the
// server limits and how its errors map to responses. HttpServer uses these over a socket;
// the fuzzer and unit tests use parse_request() over bytes in memory.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/header_list.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace tokenradar::net {

struct ServerLimits {
    std::size_t max_header_bytes = 16 * 1024;      // over -> 431
    std::size_t max_body_bytes = 4 * 1024 * 1024;  // over -> 413 (a HeadCheck may lower it)
    // Request body bytes all connections may hold at once (announced Content-Length, or the
    // body limit for a chunked body) from the head until the handler returns; a request
    // over it gets 503 before its body is read. 0: no budget.
    std::size_t max_body_bytes_in_flight = 256 * 1024 * 1024;
    std::chrono::milliseconds header_timeout{
        10'000};  // whole request head + body must arrive in this
    std::chrono::milliseconds idle_timeout{60'000};  // keep-alive idle between requests
    std::chrono::milliseconds shutdown_grace{10'000};
    // With worker io_contexts: each worker accepts for itself on a socket of its own bound to
    // the same port with SO_REUSEPORT (the kernel spreads new connections by their address
    // hash), instead of one acceptor on the server's io_context dealing connections
    // round-robin. Saves a hop between threads per new connection; the spread is the
    // kernel's, uneven for few connections.
    bool accept_per_worker = false;
};

using Request = beast::http::request<beast::http::string_body>;
using RequestParser = beast::http::request_parser<beast::http::string_body>;

// What to do with a request whose head has arrived and whose body has not been read: read it
// up to `max_body_bytes` (at most ServerLimits::max_body_bytes), or answer `reject` at once
// and close (who is asking and how much they send are known before a byte of the body is
// held, and before `Expect: 100-continue` is answered).
struct HeadVerdict {
    std::size_t max_body_bytes = 0;
    std::optional<Error> reject;
    HeaderList reject_headers;  // sent with `reject` (a 401's WWW-Authenticate challenge)
};
// Called with the request's head (its body still empty) and its announced Content-Length
// (nullopt: chunked) on the connection's thread; must not suspend or block. Only requests
// with a body are checked.
using HeadCheck =
    std::function<HeadVerdict(const Request& head, std::optional<std::uint64_t> content_length)>;

// A request whose Transfer-Encoding names a coding other than chunked: Errc::not_implemented
// (501, RFC 9112 section 6.1) naming it. Beast would decode the chunks and ignore the rest.
std::optional<Error> unsupported_transfer_coding(const Request& head);

// Applies the header and body limits to a fresh parser.
void configure_request_parser(RequestParser& parser, const ServerLimits& limits);

// The response a parse error deserves: Errc::headers_too_large (431),
// Errc::payload_too_large (413) or Errc::bad_request (400). nullopt for errors that are not
// the client's request (eof, timeouts, resets): those close the connection silently.
std::optional<Errc> classify_request_error(const boost::system::error_code& ec);

// Parses one request from `bytes` exactly as the server would. Returns the request, or the
// Errc the server would answer with (Errc::bad_request also for truncated input).
Result<Request> parse_request(std::string_view bytes, const ServerLimits& limits);

}  // namespace tokenradar::net
