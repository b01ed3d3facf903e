#include <sys/socket.h>
#include <sys/uio.h>

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/net/http_server.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <unordered_map>

namespace tokenradar::net {

namespace http = beast::http;
using asio::ip::tcp;

namespace {

// Bytes read while waiting for the next request on a keep-alive connection, and while
// watching for the peer going away during a handler. Small: 1,000s of connections idle.
constexpr std::size_t kReadChunk = 1024;
// Read room for a body larger than that. Beast reads at most the buffer's free capacity (at
// least 512 bytes) and the body parser empties the buffer after every read, so a body read
// through the 1 KiB buffer took one recvmsg, one timer re-arm and one coroutine step per KiB:
// ~10 us of the I/O thread per KiB, the limit of observatory ingestion (bench/observatory).
// The room is released after the request, so idle connections stay small.
constexpr std::size_t kBodyReadRoom = 64 * 1024;
// After an error response (413/431/400) the peer may still be sending; reading a little
// before closing avoids a RST that would destroy the response in flight.
constexpr std::chrono::milliseconds kLingerTime{500};
constexpr std::size_t kLingerBytes = 256 * 1024;

// co_spawn completion: every spawned coroutine's exception is logged, never dropped.
struct LogCompletion {
    const char* what;
    void operator()(const std::exception_ptr& ex) const {
        if (!ex) return;
        try {
            std::rethrow_exception(ex);
        } catch (const std::exception& e) {
            spdlog::error("net: {} failed: {}", what, e.what());
        } catch (...) {
            spdlog::error("net: {} failed with an unknown exception", what);
        }
    }
};

}  // namespace

namespace detail {

struct ServerState {
    ServerState(asio::io_context& io, Handler h, ServerLimits l, std::vector<asio::io_context*> w)
        : ioc(io),
          handler(std::move(h)),
          limits(l),
          workers(std::move(w)),
          acceptor(asio::make_strand(io)) {}

    // A new connection's executor: its own strand on ioc, or the next worker io_context's
    // executor itself. A worker runs on one thread, so nothing of a connection can run
    // concurrently there, and a strand would cost a second pass through a shared scheduler
    // (and a cross-thread wake-up) for every completion, e.g. each paced sim chunk.
    asio::any_io_executor connection_executor() {
        if (workers.empty()) return asio::make_strand(ioc);
        return workers[next_worker++ % workers.size()]->get_executor();
    }

    asio::io_context& ioc;
    Handler handler;
    ServerLimits limits;
    std::vector<asio::io_context*> workers;
    // Only the accept loop (on the acceptor's strand) uses it.
    std::size_t next_worker = 0;
    tcp::acceptor acceptor;  // on its own strand: accept loop and close() never race
    std::uint16_t port = 0;
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> active{0};

    std::mutex mu;  // guards connections and next_id
    std::unordered_map<std::uint64_t, std::weak_ptr<ServerConnection>> connections;
    std::uint64_t next_id = 0;
};

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
  public:
    ServerConnection(std::shared_ptr<ServerState> s, tcp::socket socket)
        : state(std::move(s)), stream(std::move(socket)) {}

    std::shared_ptr<ServerState> state;
    beast::tcp_stream stream;  // executor: this connection's strand, or its worker io_context
    beast::flat_buffer buffer;
    std::uint64_t id = 0;
    bool gone = false;                         // peer closed/errored, or we closed the socket
    bool stopping = false;                     // server is shutting down: no keep-alive
    bool in_handler = false;                   // a response is in flight
    std::uint64_t watch_generation = 0;        // which handler run the peer watcher belongs to
    asio::cancellation_signal handler_cancel;  // terminal cancellation of the running handler

    // Both run on the strand.
    void begin_stop() {
        stopping = true;
        if (!in_handler) close();
    }
    // Closing while a handler runs cancels it: its pending awaits complete with
    // operation_aborted (and the next one throws), so it cannot outlive the socket.
    void close() {
        const bool was_gone = gone;
        gone = true;
        if (in_handler && !was_gone) handler_cancel.emit(asio::cancellation_type::terminal);
        boost::system::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
        stream.socket().close(ignored);
    }
    void set_write_deadline() { stream.expires_after(state->limits.idle_timeout); }
};

}  // namespace detail

using detail::ServerConnection;
using detail::ServerState;

// ---------------------------------------------------------------------------------------
// ResponseWriter

ResponseWriter::ResponseWriter(detail::ServerConnection& conn, bool keep_alive, unsigned version,
                               std::int64_t request_read_ns, bool head_request)
    : conn_(&conn),
      keep_alive_(keep_alive),
      version_(version),
      request_read_ns_(request_read_ns),
      head_request_(head_request) {}

bool ResponseWriter::client_gone() const { return conn_->gone; }

std::string ResponseWriter::remote_address() const {
    boost::system::error_code ec;
    const auto endpoint = conn_->stream.socket().remote_endpoint(ec);
    return ec ? std::string() : endpoint.address().to_string();
}

void ResponseWriter::abort() {
    keep_alive_ = false;
    conn_->close();
}

namespace {

template <class Body>
void apply_headers(http::response<Body>& res, std::string_view content_type,
                   const HeaderList& headers) {
    if (!content_type.empty()) res.set(http::field::content_type, content_type);
    for (const auto& [name, value] : headers) res.insert(name, value);
}

boost::system::error_code gone_error() {
    return asio::error::make_error_code(asio::error::not_connected);
}

// One response chunk as at most three buffers (chunk size line, data, CRLF), written with a
// non-blocking sendmsg first and, for what the socket did not take, an async write.
class ChunkFrame {
  public:
    ChunkFrame(std::string_view data, bool chunked) {
        if (chunked) {
            const auto head =
                fmt::format_to_n(size_line_, sizeof(size_line_) - 2, "{:x}", data.size());
            size_line_[head.size] = '\r';
            size_line_[head.size + 1] = '\n';
            add(size_line_, head.size + 2);
            add(data.data(), data.size());
            add("\r\n", 2);
        } else {
            add(data.data(), data.size());
        }
    }
    ChunkFrame(const ChunkFrame&) = delete;  // iov_ points into size_line_
    ChunkFrame& operator=(const ChunkFrame&) = delete;
    std::size_t size() const { return total_; }

    // Bytes the kernel took now (maybe fewer than size(), maybe 0); ec = the socket's error.
    std::size_t send_now(int fd, boost::system::error_code& ec) {
        msghdr msg{};
        msg.msg_iov = iov_.data();
        msg.msg_iovlen = count_;
        for (;;) {
            const ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n >= 0) return static_cast<std::size_t>(n);
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                ec.assign(errno, boost::system::system_category());
            }
            return 0;
        }
    }
    // Drops the first n bytes (what send_now() wrote).
    void consume(std::size_t n) {
        total_ -= n;
        while (n > 0) {
            const std::size_t take = std::min(n, iov_[first_].iov_len);
            iov_[first_].iov_base = static_cast<char*>(iov_[first_].iov_base) + take;
            iov_[first_].iov_len -= take;
            n -= take;
            if (iov_[first_].iov_len == 0) ++first_;
        }
    }
    // What is left, as an Asio buffer sequence (valid while this frame and the data live).
    std::array<asio::const_buffer, 3> buffers() const {
        std::array<asio::const_buffer, 3> out;
        for (std::size_t i = first_; i < count_; ++i) {
            out[i - first_] = asio::buffer(iov_[i].iov_base, iov_[i].iov_len);
        }
        return out;
    }

  private:
    void add(const void* data, std::size_t size) {
        iov_[count_].iov_base = const_cast<void*>(data);  // sendmsg's iovec is not const
        iov_[count_].iov_len = size;
        ++count_;
        total_ += size;
    }

    char size_line_[20];
    std::array<iovec, 3> iov_{};
    std::size_t count_ = 0;
    std::size_t first_ = 0;
    std::size_t total_ = 0;
};

}  // namespace

asio::awaitable<boost::system::error_code> ResponseWriter::send(http::status status,
                                                                std::string_view content_type,
                                                                std::string body,
                                                                const HeaderList& headers) {
    if (started_ || conn_->gone) co_return gone_error();
    started_ = true;
    if (conn_->stopping) keep_alive_ = false;
    conn_->set_write_deadline();
    boost::system::error_code ec;
    if (head_request_) {
        http::response<http::empty_body> res{status, version_};
        apply_headers(res, content_type, headers);
        res.content_length(body.size());
        res.keep_alive(keep_alive_);
        auto [e, n] = co_await http::async_write(conn_->stream, res, use_nothrow);
        ec = e;
    } else {
        http::response<http::string_body> res{status, version_};
        apply_headers(res, content_type, headers);
        res.body() = std::move(body);
        res.keep_alive(keep_alive_);
        res.prepare_payload();
        auto [e, n] = co_await http::async_write(conn_->stream, res, use_nothrow);
        ec = e;
    }
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    complete_ = true;
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::start_stream(
    http::status status, std::string_view content_type, const HeaderList& headers) {
    if (started_ || conn_->gone) co_return gone_error();
    started_ = true;
    streaming_ = true;
    if (conn_->stopping || version_ < 11) keep_alive_ = false;
    http::response<http::empty_body> res{status, version_};
    apply_headers(res, content_type, headers);
    res.keep_alive(keep_alive_);
    if (version_ >= 11) res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    conn_->set_write_deadline();
    auto [ec, n] = co_await http::async_write_header(conn_->stream, sr, use_nothrow);
    if (ec) conn_->gone = true;
    if (head_request_) complete_ = !ec;  // the head is the whole answer to HEAD
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::write_chunk(std::string_view bytes) {
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    if (bytes.empty()) co_return boost::system::error_code{};
    // The framed chunk: size line, data, CRLF (HTTP/1.0: the data alone).
    ChunkFrame frame(bytes, version_ >= 11);
    // Fast path: the socket usually has room, so one non-blocking sendmsg writes the whole
    // chunk without suspending. The async write below costs a coroutine round trip through
    // the executor and Beast's expiry timer (armed and cancelled) on top of the same sendmsg;
    // skipping it cut the sim's CPU per paced chunk by about 15% (docs/NOTES.md, issue 2).
    boost::system::error_code ec;
    const std::size_t sent = frame.send_now(conn_->stream.socket().native_handle(), ec);
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    if (sent == frame.size()) co_return ec;
    frame.consume(sent);
    conn_->set_write_deadline();
    auto [write_ec, n] = co_await asio::async_write(conn_->stream, frame.buffers(), use_nothrow);
    if (write_ec) conn_->gone = true;
    co_return write_ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::finish() {
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    boost::system::error_code ec;
    if (version_ >= 11) {
        conn_->set_write_deadline();
        auto [e, n] =
            co_await asio::async_write(conn_->stream, http::make_chunk_last(), use_nothrow);
        ec = e;
    }
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    complete_ = true;
    co_return ec;
}

// ---------------------------------------------------------------------------------------
// Connection coroutines

namespace {

asio::awaitable<void> call_handler(ServerState* state, Request* req, ResponseWriter* writer) {
    co_await state->handler(*req, *writer);
}

// Runs beside the handler and notices the peer closing or erroring while the handler
// waits (e.g. for an upstream's first token): that closes the socket, which cancels the
// handler. It waits for readability instead of reading, so it never consumes or races for
// the bytes of a pipelined next request.
asio::awaitable<void> watch_peer(std::shared_ptr<ServerConnection> conn, std::uint64_t generation) {
    auto still_mine = [&] { return conn->in_handler && conn->watch_generation == generation; };
    while (still_mine() && !conn->gone) {
        auto [ec] = co_await conn->stream.socket().async_wait(tcp::socket::wait_read, use_nothrow);
        if (!still_mine()) co_return;  // the handler finished; the wait was cancelled
        if (ec) {
            if (ec != asio::error::operation_aborted) conn->close();
            co_return;
        }
        char byte = 0;
        const ssize_t n =
            ::recv(conn->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) co_return;  // a pipelined request: the peer is there
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
        conn->close();  // orderly close (n == 0) or a socket error
        co_return;
    }
}

asio::awaitable<void> linger_close(std::shared_ptr<ServerConnection> conn) {
    boost::system::error_code ignored;
    conn->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    conn->stream.expires_after(kLingerTime);
    std::size_t total = 0;
    char sink[1024];
    while (total < kLingerBytes) {
        auto [ec, n] = co_await conn->stream.async_read_some(asio::buffer(sink), use_nothrow);
        if (ec) break;
        total += n;
    }
    conn->close();
}

asio::awaitable<void> send_error(std::shared_ptr<ServerConnection> conn, Errc errc,
                                 std::string message, unsigned version) {
    http::response<http::string_body> res{static_cast<http::status>(http_status(errc)), version};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(false);
    res.body() = openai_error_body(errc, message);
    res.prepare_payload();
    conn->set_write_deadline();
    co_await http::async_write(conn->stream, res, use_nothrow);
}

asio::awaitable<void> run_connection(std::shared_ptr<ServerConnection> conn) {
    ServerState& state = *conn->state;
    const ServerLimits& limits = state.limits;
    bool first = true;
    for (;;) {
        if (conn->stopping || conn->gone) break;
        // Wait for the first bytes of the next request: the idle timeout applies between
        // keep-alive requests, the header timeout to a fresh connection.
        if (conn->buffer.size() == 0) {
            conn->stream.expires_after(first ? limits.header_timeout : limits.idle_timeout);
            auto [ec, n] = co_await conn->stream.async_read_some(conn->buffer.prepare(kReadChunk),
                                                                 use_nothrow);
            if (ec) break;  // eof, idle timeout, closed by stop()
            conn->buffer.commit(n);
        }
        first = false;
        // Head and body must arrive within header_timeout of the first byte: a client
        // trickling bytes cannot hold the connection.
        conn->stream.expires_after(limits.header_timeout);
        RequestParser parser;
        configure_request_parser(parser, limits);
        auto [hec, hn] =
            co_await http::async_read_header(conn->stream, conn->buffer, parser, use_nothrow);
        boost::system::error_code ec = hec;
        if (!ec && !parser.is_done()) {
            if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
                http::response<http::empty_body> cont{http::status::continue_, 11};
                auto [cec, cn] = co_await http::async_write(conn->stream, cont, use_nothrow);
                if (cec) break;
            }
            // Room for the whole body when it is smaller than kBodyReadRoom (a chat request
            // of a few KiB), so a gateway request does not allocate 64 KiB for it.
            const std::uint64_t announced = parser.content_length().value_or(kBodyReadRoom);
            if (parser.chunked() || announced > kReadChunk) {
                conn->buffer.reserve(static_cast<std::size_t>(
                    std::min<std::uint64_t>(conn->buffer.size() + announced, kBodyReadRoom)));
            }
            auto [bec, bn] =
                co_await http::async_read(conn->stream, conn->buffer, parser, use_nothrow);
            ec = bec;
        }
        if (ec) {
            if (auto errc = classify_request_error(ec)) {
                unsigned version = parser.is_header_done() ? parser.get().version() : 11;
                co_await send_error(conn, *errc, fmt::format("request rejected: {}", ec.message()),
                                    version);
                co_await linger_close(conn);
            }
            break;
        }
        conn->stream.expires_never();
        const std::int64_t read_ns = steady_now_ns();
        Request req = parser.release();
        ResponseWriter writer(*conn, req.keep_alive() && !conn->stopping, req.version(), read_ns,
                              req.method() == http::verb::head);

        conn->in_handler = true;
        const std::uint64_t generation = ++conn->watch_generation;
        asio::co_spawn(conn->stream.get_executor(), watch_peer(conn, generation),
                       LogCompletion{"peer watch"});
        std::exception_ptr failure;
        try {
            co_await asio::co_spawn(
                conn->stream.get_executor(), call_handler(&state, &req, &writer),
                asio::bind_cancellation_slot(conn->handler_cancel.slot(), asio::use_awaitable));
        } catch (...) {
            failure = std::current_exception();
        }
        conn->in_handler = false;
        if (conn->buffer.capacity() > kReadChunk * 4) conn->buffer.shrink_to_fit();  // body room
        if (!conn->gone) {
            boost::system::error_code ignored;
            conn->stream.socket().cancel(ignored);  // ends the watcher's wait
        }
        if (failure) {
            try {
                std::rethrow_exception(failure);
            } catch (const std::exception& e) {
                // After the client left, the handler's cancellation surfacing as an
                // exception is expected, not an error.
                spdlog::log(conn->gone ? spdlog::level::debug : spdlog::level::err,
                            "net: handler for {} {} threw: {}",
                            std::string_view(req.method_string()),
                            // The path only: a query may carry a key (Gemini's ?key=).
                            std::string_view(req.target()).substr(0, std::string_view(req.target()).find('?')),
                            e.what());
            } catch (...) {
                spdlog::error("net: handler threw a non-exception");
            }
        }
        if (!writer.started() && !conn->gone) {
            // Nothing sent: the client still deserves an answer.
            co_await send_error(conn, Errc::internal,
                                failure ? "internal error" : "handler sent no response",
                                req.version());
            break;
        }
        if (!writer.complete() || !writer.keep_alive() || conn->gone) break;
    }
    conn->close();
}

asio::awaitable<void> run_connection_tracked(std::shared_ptr<ServerConnection> conn) {
    std::shared_ptr<ServerState> state = conn->state;
    try {
        co_await run_connection(conn);
    } catch (...) {
        conn->close();
        std::lock_guard lock(state->mu);
        state->connections.erase(conn->id);
        state->active.fetch_sub(1);
        throw;
    }
    std::lock_guard lock(state->mu);
    state->connections.erase(conn->id);
    state->active.fetch_sub(1);
}

asio::awaitable<void> accept_loop(std::shared_ptr<ServerState> state) {
    while (!state->stopping.load()) {
        auto executor = state->connection_executor();
        auto [ec, socket] = co_await state->acceptor.async_accept(executor, use_nothrow);
        if (ec) {
            if (state->stopping.load() || ec == asio::error::operation_aborted ||
                ec == asio::error::bad_descriptor) {
                co_return;
            }
            // Out of descriptors and similar: back off instead of spinning.
            spdlog::warn("net: accept on port {}: {}", state->port, ec.message());
            asio::steady_timer backoff(co_await asio::this_coro::executor,
                                       std::chrono::milliseconds(50));
            co_await backoff.async_wait(use_nothrow);
            continue;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // stream chunks leave at once
        auto conn = std::make_shared<ServerConnection>(state, std::move(socket));
        {
            std::lock_guard lock(state->mu);
            conn->id = ++state->next_id;
            state->connections.emplace(conn->id, conn);
            state->active.fetch_add(1);
        }
        if (state->stopping.load()) conn->stopping = true;
        asio::co_spawn(executor, run_connection_tracked(std::move(conn)),
                       LogCompletion{"connection"});
    }
}

std::vector<std::shared_ptr<ServerConnection>> snapshot(ServerState& state) {
    std::vector<std::shared_ptr<ServerConnection>> out;
    std::lock_guard lock(state.mu);
    out.reserve(state.connections.size());
    for (auto& [id, weak] : state.connections) {
        if (auto c = weak.lock()) out.push_back(std::move(c));
    }
    return out;
}

// After the grace period, whatever is still running is cut: closing the socket completes
// the watcher, which cancels the handler.
asio::awaitable<void> cancel_after_grace(std::shared_ptr<ServerState> state,
                                         std::chrono::milliseconds grace) {
    // Polls so that io_context::run() can return as soon as the last stream finished,
    // instead of sitting out the whole grace period.
    constexpr std::chrono::milliseconds kPoll{20};
    const auto deadline = std::chrono::steady_clock::now() + grace;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (state->active.load() > 0 && std::chrono::steady_clock::now() < deadline) {
        timer.expires_after(std::min<std::chrono::steady_clock::duration>(
            kPoll, deadline - std::chrono::steady_clock::now()));
        co_await timer.async_wait(use_nothrow);
    }
    for (auto& conn : snapshot(*state)) {
        auto ex = conn->stream.get_executor();
        asio::post(ex, [c = std::move(conn)] { c->close(); });
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// HttpServer

HttpServer::HttpServer(asio::io_context& ioc, Handler handler, ServerLimits limits,
                       std::vector<asio::io_context*> workers)
    : state_(std::make_shared<ServerState>(ioc, std::move(handler), limits, std::move(workers))) {}

HttpServer::~HttpServer() {
    boost::system::error_code ignored;
    state_->stopping.store(true);
    state_->acceptor.close(ignored);
}

Result<tcp::endpoint> HttpServer::listen(std::string_view host, std::uint16_t port) {
    auto fail = [&](std::string_view why) {
        return Error(Errc::internal, fmt::format("listen {}:{}: {}", host, port, why));
    };
    boost::system::error_code ec;
    asio::ip::address address;
    if (host == "localhost") {
        address = asio::ip::address_v4::loopback();
    } else {
        address = asio::ip::make_address(std::string(host), ec);
        if (ec) return fail("host must be an IP address or localhost");
    }
    tcp::endpoint endpoint(address, port);
    auto& acceptor = state_->acceptor;
    acceptor.open(endpoint.protocol(), ec);
    if (ec) return fail(ec.message());
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    acceptor.bind(endpoint, ec);
    if (ec) return fail(ec.message());
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail(ec.message());
    tcp::endpoint bound = acceptor.local_endpoint(ec);
    if (ec) return fail(ec.message());
    state_->port = bound.port();
    return bound;
}

void HttpServer::start() {
    asio::co_spawn(state_->acceptor.get_executor(), accept_loop(state_),
                   LogCompletion{"accept loop"});
}

std::uint16_t HttpServer::port() const { return state_->port; }

std::size_t HttpServer::active_connections() const { return state_->active.load(); }

void HttpServer::stop(std::chrono::milliseconds grace) {
    if (state_->stopping.exchange(true)) return;
    asio::post(state_->acceptor.get_executor(), [s = state_] {
        boost::system::error_code ignored;
        s->acceptor.close(ignored);
    });
    for (auto& conn : snapshot(*state_)) {
        auto ex = conn->stream.get_executor();
        asio::post(ex, [c = std::move(conn)] { c->begin_stop(); });
    }
    asio::co_spawn(state_->ioc, cancel_after_grace(state_, grace), LogCompletion{"shutdown"});
}

}  // namespace tokenradar::net
