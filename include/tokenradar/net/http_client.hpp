#pragma once
// HTTP/1.1 client with a keep-alive pool, TLS (system CA store, SNI, hostname
// verification), per-phase timeouts and prompt cancellation.
//
// Executor: connections live on the executor given to HttpClient; HttpClient,
// StreamingResponse and their coroutines must be used from that executor (one thread, or
// one strand). What suspends: open(), request(), read_some(), read_all().
// Cancellation: StreamingResponse::cancel(), or terminal cancellation of the awaiting
// coroutine (e.g. a server handler whose client went away), closes the socket; the pending
// operation completes with Errc::cancelled and the connection is not pooled.
// Never logs header values (they carry API keys).

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/url.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::net {

// A request's headers (open/request): owned name/value pairs, written in this order.
using RequestHeaders = std::vector<std::pair<std::string, std::string>>;

struct ClientOptions {
    std::chrono::milliseconds connect_timeout{10'000};     // TCP connect + TLS handshake
    std::chrono::milliseconds headers_timeout{60'000};     // request written -> response head
    std::chrono::milliseconds first_byte_timeout{60'000};  // head -> first body bytes
    std::chrono::milliseconds idle_timeout{60'000};        // between body pieces
    std::chrono::milliseconds total_timeout{600'000};      // open() start -> end of body
    bool verify_tls = true;  // only an explicit option turns verification off
    std::string ca_file;     // extra CA bundle (tests); the system store is always loaded
    std::size_t max_idle_per_host = 64;
};

// steady_now_ns() stamps of metrics.md; connect_ns/tls_ns are durations (0 when reused).
struct RequestTimings {
    std::int64_t connect_ns = 0;
    std::int64_t tls_ns = 0;
    std::int64_t t_send = 0;     // the request write started (connect/TLS already done)
    std::int64_t t_headers = 0;  // status line and headers fully received
    bool reused_connection = false;
};

// Copies a response's stamps into a record (metrics.md): t_send, t_headers, connect and TLS
// time, and moves the wall-clock stamp, taken at `t_start` (steady), forward to t_send.
void record_timings(Measurement& m, const RequestTimings& timings, std::int64_t t_start);

namespace detail {
struct ClientPool;
struct ResponseState;
}  // namespace detail

// The body reader of one response whose head has been read. Returns its connection to
// the pool when the body was read to the end and keep-alive holds; destroying it earlier
// closes the connection.
class StreamingResponse {
  public:
    explicit StreamingResponse(std::unique_ptr<detail::ResponseState> state);
    ~StreamingResponse();
    StreamingResponse(const StreamingResponse&) = delete;
    StreamingResponse& operator=(const StreamingResponse&) = delete;

    unsigned status() const;
    const beast::http::fields& headers() const;
    const RequestTimings& timings() const;
    bool done() const;  // the body was read to the end
    // Body bytes are already buffered (they came with the head): the next read_some()
    // returns without waiting for the network.
    bool body_buffered() const;

    // Suspends until the next piece of body arrives (chunked, content-length or
    // until-close framing removed) and returns a view of it, valid until the next call; an
    // empty view at the end of the body. first_byte_timeout applies to the first piece,
    // idle_timeout between pieces, total_timeout overall (Errc::timeout_first_byte,
    // timeout_idle, timeout_total). A piece is at most 16 KiB (what one socket read
    // brings). Bytes already buffered are parsed without suspending.
    asio::awaitable<Result<std::string_view>> read_some();
    // The rest of the body; Errc::payload_too_large past max_bytes.
    asio::awaitable<Result<std::string>> read_all(std::size_t max_bytes);
    // Closes the socket now; a pending read_some completes with Errc::cancelled.
    void cancel();

  private:
    std::unique_ptr<detail::ResponseState> state_;
};

class HttpClient {
  public:
    explicit HttpClient(asio::any_io_executor ex, ClientOptions options = {});
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Connects (or reuses a pooled keep-alive connection), writes the request, reads the
    // response head. Host, Content-Length and Connection are set here. A reused connection
    // that turns out stale (the write fails, or it closes before any response byte) is
    // retried once on a fresh connection, whatever the method: the server never answered.
    // Its host's pooled connections are checked before every later reuse. Errors: connect_failed,
    // tls_failed, timeout_connect, timeout_headers, timeout_total, connection_error,
    // protocol_error, cancelled; messages name host:port.
    asio::awaitable<Result<std::unique_ptr<StreamingResponse>>> open(beast::http::verb method,
                                                                     const Url& url,
                                                                     const RequestHeaders& headers,
                                                                     std::string body);

    struct Response {
        unsigned status = 0;
        beast::http::fields headers;
        std::string body;
        RequestTimings timings;
    };
    // open() + read_all(max_body).
    asio::awaitable<Result<Response>> request(beast::http::verb method, const Url& url,
                                              const RequestHeaders& headers, std::string body,
                                              std::size_t max_body = 16 << 20);

    std::size_t idle_connections() const;  // pooled, all hosts

  private:
    asio::any_io_executor ex_;
    std::shared_ptr<detail::ClientPool> pool_;
};

}  // namespace tokenradar::net
