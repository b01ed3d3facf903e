#pragma once
// HTTP/1.1 server: keep-alive, chunked streaming, request limits, header/idle timeouts,
// graceful shutdown. One coroutine per connection on its own strand, so the io_context may
// run on several threads; or, given worker io_contexts of one thread each, on one of those.
//
// What suspends: every ResponseWriter function except abort()/client_gone(); the Handler.
// Cancellation: when the peer closes or errors while a handler runs (noticed at once when the
// handler has run 10-20 ms, else when it reaches that age: peer_watches_started()), or when
// stop()'s grace period ends, the handler coroutine receives terminal cancellation (its
// pending awaits, e.g. an HttpClient read, complete with operation_aborted) and the socket is
// closed.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/header_list.hpp>
#include <tokenradar/net/request_reader.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::net {

// ServerLimits and Request are defined in request_reader.hpp (shared with the fuzzer).

class ServerTls;

namespace detail {
class ServerConnection;
struct ServerState;
}  // namespace detail

// Rewrites what a handler writes, for a client that speaks another format than the handler
// does (the gateway's Anthropic door answers in Anthropic Messages what its relay writes as
// OpenAI Chat Completions). Called on the handler's thread, in the order of the writes.
class BodyFilter {
  public:
    virtual ~BodyFilter() = default;
    // A whole response (send()): may rewrite its status, content type and body.
    virtual void whole(beast::http::status& status, std::string& content_type,
                       std::string& body) = 0;
    // A stream's bytes, split anywhere: appends what the client gets instead to `out`.
    virtual void stream(std::string_view bytes, std::string& out) = 0;
    // The stream's end (finish()): appends its last bytes to `out`.
    virtual void end(std::string& out) = 0;
};

// One per request, owned by the server; valid until the handler returns. All functions
// must be called from the handler coroutine (they run on the connection's strand or worker).
class ResponseWriter {
  public:
    ResponseWriter(detail::ServerConnection& conn, bool keep_alive, unsigned version,
                   std::int64_t request_read_ns, bool head_request = false);
    ResponseWriter(const ResponseWriter&) = delete;
    ResponseWriter& operator=(const ResponseWriter&) = delete;

    // Whole response with Content-Length. Suspends until written (write timeout = the
    // server's idle_timeout); what the socket takes at once is written without suspending. No
    // Server/Date headers are added: they cost per response and no client of ours needs them.
    asio::awaitable<boost::system::error_code> send(beast::http::status status,
                                                    std::string_view content_type, std::string body,
                                                    const HeaderList& headers = {});
    // Streaming: status + headers with chunked transfer encoding (HTTP/1.0 peers get an
    // unframed body ended by close), then chunks, then finish(). A non-empty first_chunk
    // leaves in the same write as the head (one packet, one wake-up of the client).
    asio::awaitable<boost::system::error_code> start_stream(beast::http::status status,
                                                            std::string_view content_type,
                                                            const HeaderList& headers = {},
                                                            std::string_view first_chunk = {});
    // Writes one chunk straight to the socket (TCP_NODELAY, no buffering, no copy).
    // An empty view (or any chunk of a HEAD response) writes nothing.
    asio::awaitable<boost::system::error_code> write_chunk(std::string_view bytes);
    // The final 0-size chunk, after `last_bytes` as one more chunk when given: both leave in
    // one write.
    asio::awaitable<boost::system::error_code> finish(std::string_view last_bytes = {});
    // Closes the socket now without finishing (simulates a mid-stream disconnect).
    void abort();
    // Every later write goes through `filter` (nullptr: none), which must outlive them.
    void set_filter(BodyFilter* filter) { filter_ = filter; }

    bool client_gone() const;            // the peer closed or errored
    std::string remote_address() const;  // the peer's IP ("" once the socket is closed)
    std::int64_t request_read_ns() const { return request_read_ns_; }  // steady_now_ns()
    bool started() const { return started_; }                          // status line written
    bool complete() const { return complete_; }                        // whole response written
    bool keep_alive() const { return keep_alive_; }

  private:
    detail::ServerConnection* conn_;
    BodyFilter* filter_ = nullptr;
    std::string filtered_;  // the filter's output for the write in progress
    bool keep_alive_;
    unsigned version_;
    std::int64_t request_read_ns_;
    bool started_ = false;
    bool head_request_;  // answer HEAD with the head only
    bool streaming_ = false;
    bool complete_ = false;
};

// The handler answers through the writer. If it throws before writing, the client gets a
// 500; if it throws or returns mid-stream, the connection is closed. Returning without
// writing anything yields a 500 too.
using Handler = std::function<asio::awaitable<void>(Request&, ResponseWriter&)>;

class HttpServer {
  public:
    // The acceptor runs on `ioc`. Connections run on `ioc` too, each on its own strand, unless
    // `workers` are given: io_contexts that the caller runs on exactly one thread each
    // (`ioc` may be one of them: an io_context run by one thread passes itself, as the gateway
    // does). Connections are then dealt round-robin over the workers and
    // run on a worker's executor without a strand, which is cheaper per completion. Workers
    // must outlive the server's connections.
    HttpServer(asio::io_context& ioc, Handler handler, ServerLimits limits = {},
               std::vector<asio::io_context*> workers = {});
    // Closes the acceptor. Destroy only after stop() and after the io_context stopped
    // running, or connections are left to finish on their own.
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds and listens (port 0 -> ephemeral). Errc::internal with "listen host:port: why".
    Result<asio::ip::tcp::endpoint> listen(std::string_view host, std::uint16_t port);
    // Decides, from the head of each request with a body, whether its body is read and up
    // to what size (request_reader.hpp). Call before start().
    void set_head_check(HeadCheck check);
    // Serves HTTPS: every connection begins with a TLS handshake (within header_timeout)
    // using the context `tls` holds when it is accepted (server_tls.hpp). Call before start().
    void set_tls(std::shared_ptr<ServerTls> tls);
    // Spawns the accept loop on the io_context. Call after listen().
    void start();
    std::uint16_t port() const;
    // Stops accepting, closes idle keep-alive connections, lets in-flight responses finish
    // within `grace` (they are sent with Connection: close), then cancels the rest.
    // Thread-safe; returns at once.
    void stop(std::chrono::milliseconds grace);
    std::size_t active_connections() const;
    // Handlers that ran long enough to have their peer watched (a wait for the client's close
    // that cancels the handler), so far. Shorter handlers go without: the watch costs a
    // syscall. For tests.
    std::uint64_t peer_watches_started() const;

  private:
    std::shared_ptr<detail::ServerState> state_;
};

}  // namespace tokenradar::net
