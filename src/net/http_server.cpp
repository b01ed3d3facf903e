// HttpServer: the accept loop and one coroutine per connection that reads requests, runs the
// handler and answers what the handler could not (errors, timeouts). The handler's response
// goes through ResponseWriter (response_writer.cpp); a client leaving a running handler is
// noticed by the peer watch (peer_watch.cpp).

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/net/log_completion.hpp>

#include "message_head.hpp"
#include "peer_watch.hpp"
#include "server_connection.hpp"
#include "sync_io.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/string.hpp>
#include <fmt/format.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>

namespace tokenradar::net {

namespace http = beast::http;
using asio::ip::tcp;

namespace {

// Bytes read while waiting for the next request on a keep-alive connection. Small: 1,000s of
// connections idle.
constexpr std::size_t kReadChunk = 1024;
// Read room for a body larger than that. read_more (as Beast's read did) reads at most the
// buffer's free capacity (at least 512 bytes) and the body parser empties the buffer after every
// read, so a body read through the 1 KiB buffer took one recvmsg, one timer re-arm and one
// coroutine step per KiB: ~10 us of the I/O thread per KiB, the limit of observatory ingestion
// (bench/observatory). The room is released after the request, so idle connections stay small.
constexpr std::size_t kBodyReadRoom = 64 * 1024;
// After an error response (413/431/400) the peer may still be sending; reading a little
// before closing avoids a RST that would destroy the response in flight.
constexpr std::chrono::milliseconds kLingerTime{500};
constexpr std::size_t kLingerBytes = 256 * 1024;

}  // namespace

using detail::DrainingBuffer;
using detail::ServerConnection;
using detail::ServerState;
using detail::SweptHandler;
using detail::write_buffers;

namespace {

// Reads and parses what the request still needs (sync_io.hpp), through the TLS stream when
// there is one. Not a coroutine: it hands over read_until's, without a frame of its own.
asio::awaitable<boost::system::error_code> read_request(ServerConnection& conn,
                                                        RequestParser& parser,
                                                        detail::ParseUntil until) {
    if (conn.tls) {
        return detail::read_until(*conn.tls, conn.buffer, parser, until, detail::ShortRead::drains);
    }
    return detail::read_until(conn.socket, conn.buffer, parser, until, detail::ShortRead::drains);
}

// The TLS handshake of a new connection, within the header timeout: false when it failed
// (a plain-HTTP client, a client that refused the certificate, a timeout).
asio::awaitable<bool> handshake(ServerConnection& conn) {
    conn.tls_context = conn.state->tls->context();
    conn.tls = std::make_unique<asio::ssl::stream<tcp::socket&>>(conn.socket, *conn.tls_context);
    conn.expires_after(conn.state->limits.header_timeout);
    auto [ec] = co_await conn.tls->async_handshake(asio::ssl::stream_base::server, use_nothrow);
    conn.expires_never();
    if (ec) spdlog::debug("net: TLS handshake: {}", ec.message());
    co_return !ec;
}

asio::awaitable<void> linger_close(std::shared_ptr<ServerConnection> conn) {
    boost::system::error_code ignored;
    if (!conn->tls) conn->socket.shutdown(tcp::socket::shutdown_send, ignored);
    conn->expires_after(kLingerTime);
    std::size_t total = 0;
    char sink[1024];
    while (total < kLingerBytes) {
        auto [ec, n] = conn->tls
                           ? co_await conn->tls->async_read_some(asio::buffer(sink), use_nothrow)
                           : co_await conn->socket.async_read_some(asio::buffer(sink), use_nothrow);
        if (ec) break;
        total += n;
    }
    conn->close();
}

asio::awaitable<void> send_error(std::shared_ptr<ServerConnection> conn, Errc errc,
                                 std::string message, unsigned version, HeaderList headers = {}) {
    const std::string body = openai_error_body(errc, message);
    headers.emplace_back(HeaderName::constant("x-content-type-options"), "nosniff");
    const auto head =
        response_head(static_cast<http::status>(http_status(errc)), version, false,
                      "application/json", headers, ResponseBody::content_length, body.size());
    if (!head) co_return;  // a handler's bad header: logged by response_head's caller
    const std::array<asio::const_buffer, 2> buffers{asio::buffer(*head), asio::buffer(body)};
    co_await write_buffers(*conn, buffers);
}

// Request body bytes held by one request, against the server's budget, from its head until
// its handler returns.
class BodyReservation {
  public:
    BodyReservation() = default;
    BodyReservation(const BodyReservation&) = delete;
    BodyReservation& operator=(const BodyReservation&) = delete;
    ~BodyReservation() { release(); }

    // False (nothing reserved) when `bytes` more would pass the budget.
    bool reserve(ServerState& state, std::size_t bytes) {
        release();
        const std::size_t budget = state.limits.max_body_bytes_in_flight;
        const std::size_t before =
            state.body_bytes_in_flight.fetch_add(bytes, std::memory_order_relaxed);
        if (budget != 0 && before + bytes > budget) {
            state.body_bytes_in_flight.fetch_sub(bytes, std::memory_order_relaxed);
            return false;
        }
        state_ = &state;
        bytes_ = bytes;
        return true;
    }
    void release() {
        if (state_ != nullptr)
            state_->body_bytes_in_flight.fetch_sub(bytes_, std::memory_order_relaxed);
        state_ = nullptr;
    }

  private:
    ServerState* state_ = nullptr;
    std::size_t bytes_ = 0;
};

// A request with a body, its head read: what stops it before a byte of the body is read
// (an unknown transfer coding, the HeadCheck's verdict, the body budget), else a verdict
// without `reject`, with the body limit set and the body's bytes reserved.
HeadVerdict admit_body(ServerState& state, RequestParser& parser, BodyReservation& reservation) {
    const Request& head = parser.get();
    // Beast takes a Transfer-Encoding only when chunked comes last: a Content-Length body has none.
    if (parser.chunked()) {
        if (auto coding = unsupported_transfer_coding(head)) return {0, std::move(coding), {}};
    }
    const boost::optional<std::uint64_t> length = parser.content_length();
    const std::optional<std::uint64_t> announced =
        length ? std::optional<std::uint64_t>(*length) : std::nullopt;
    HeadVerdict verdict{state.limits.max_body_bytes, {}, {}};
    if (state.head_check) {
        verdict = state.head_check(head, announced);
        if (verdict.reject) return verdict;
        verdict.max_body_bytes = std::min(verdict.max_body_bytes, state.limits.max_body_bytes);
    }
    const std::size_t limit = verdict.max_body_bytes;
    if (announced && *announced > limit) {
        verdict.reject =
            Error(Errc::payload_too_large, fmt::format("body: expected at most {} bytes", limit));
        return verdict;
    }
    parser.body_limit(limit);
    const std::size_t held = announced ? static_cast<std::size_t>(*announced) : limit;
    if (!reservation.reserve(state, held)) {
        verdict.reject =
            Error(Errc::overloaded,
                  "too many request body bytes in flight on this server; retry shortly");
        verdict.reject_headers.emplace_back("retry-after", "1");
    }
    return verdict;
}

asio::awaitable<void> run_connection(std::shared_ptr<ServerConnection> conn) {
    // The loop handles its errors as values; the handler gets Asio's default back below.
    co_await asio::this_coro::throw_if_cancelled(false);
    ServerState& state = *conn->state;
    const ServerLimits& limits = state.limits;
    if (state.tls && !co_await handshake(*conn)) {
        conn->close();
        co_return;
    }
    bool first = true;
    for (;;) {
        if (conn->stopping || conn->gone) break;
        // Wait for the first bytes of the next request: the idle timeout applies between
        // keep-alive requests, the header timeout to a fresh connection.
        if (conn->buffer.size() == 0) {
            conn->expires_after(first ? limits.header_timeout : limits.idle_timeout);
            const asio::mutable_buffer into = conn->buffer.prepare(kReadChunk);
            auto [ec, n] = conn->tls ? co_await conn->tls->async_read_some(into, use_nothrow)
                                     : co_await conn->socket.async_read_some(DrainingBuffer(into),
                                                                             use_nothrow);
            if (ec) break;  // eof, idle timeout, closed by stop()
            conn->buffer.commit(n);
        }
        first = false;
        // Head and body must arrive within header_timeout of the first byte: a client
        // trickling bytes cannot hold the connection, and is told so with a 408.
        conn->reading_request = true;
        conn->expires_after(limits.header_timeout);
        RequestParser parser;
        configure_request_parser(parser, limits);
        BodyReservation body_reservation;
        // What is buffered is parsed inline: read_until, a coroutine, would cost a frame even
        // when it needed no bytes.
        boost::system::error_code ec;
        if (!detail::parse_buffered(parser, conn->buffer, detail::ParseUntil::header, ec)) {
            ec = co_await read_request(*conn, parser, detail::ParseUntil::header);
        }
        if (!ec && !parser.is_done()) {
            if (HeadVerdict verdict = admit_body(state, parser, body_reservation); verdict.reject) {
                conn->reading_request = false;
                conn->expires_never();
                co_await send_error(conn, errc_of(*verdict.reject, Errc::bad_request),
                                    verdict.reject->message, parser.get().version(),
                                    std::move(verdict.reject_headers));
                co_await linger_close(conn);
                break;
            }
            if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
                static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
                const std::array<asio::const_buffer, 1> cont{asio::buffer(kContinue)};
                if (co_await write_buffers(*conn, cont)) break;
            }
            // Room for the whole body when it is smaller than kBodyReadRoom (a chat request
            // of a few KiB), so a gateway request does not allocate 64 KiB for it.
            const std::uint64_t announced = parser.content_length().value_or(kBodyReadRoom);
            if (parser.chunked() || announced > kReadChunk) {
                conn->buffer.reserve(static_cast<std::size_t>(
                    std::min<std::uint64_t>(conn->buffer.size() + announced, kBodyReadRoom)));
            }
            if (!detail::parse_buffered(parser, conn->buffer, detail::ParseUntil::message, ec)) {
                ec = co_await read_request(*conn, parser, detail::ParseUntil::message);
            }
        }
        conn->reading_request = false;
        if (ec && conn->request_timed_out) {
            conn->expires_never();
            co_await send_error(conn, Errc::request_timeout,
                                fmt::format("the request did not arrive within {} ms",
                                            limits.header_timeout.count()),
                                parser.is_header_done() ? parser.get().version() : 11);
            break;
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
        conn->expires_never();
        const std::int64_t read_ns = steady_now_ns();
        Request req = parser.release();
        ResponseWriter writer(*conn, req.keep_alive() && !conn->stopping, req.version(), read_ns,
                              req.method() == http::verb::head);

        conn->in_handler = true;
        ++conn->handlers;
        std::exception_ptr failure;
        {
            const SweptHandler swept(conn);  // in the peer watch sweep while the handler runs
            // The handler runs in this coroutine (a co_spawn per request cost a frame, a post
            // and a completion): this connection's coroutine was spawned with handler_cancel's
            // slot, so close() cancels whatever the handler awaits. A fresh cancellation state
            // and Asio's default throw_if_cancelled(true) per request, as a spawned handler had.
            co_await asio::this_coro::reset_cancellation_state();
            co_await asio::this_coro::throw_if_cancelled(true);
            try {
                co_await state.handler(req, writer);
            } catch (...) {
                failure = std::current_exception();
            }
            co_await asio::this_coro::throw_if_cancelled(false);
        }
        conn->in_handler = false;
        if (conn->buffer.capacity() > kReadChunk * 4) conn->buffer.shrink_to_fit();  // body room
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
                            std::string_view(req.target())
                                .substr(0, std::string_view(req.target()).find('?')),
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

asio::awaitable<void> accept_loop(std::shared_ptr<ServerState> state, std::size_t index) {
    tcp::acceptor& acceptor = state->acceptors[index];
    while (!state->stopping.load()) {
        auto [executor, sweep] = state->next_connection_place(index);
        auto [ec, socket] = co_await acceptor.async_accept(executor, use_nothrow);
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
        socket.non_blocking(true, ignored);  // writes are tried inline first (sync_io.hpp)
        auto conn = std::make_shared<ServerConnection>(state, std::move(socket), std::move(sweep));
        {
            std::lock_guard lock(state->mu);
            conn->id = ++state->next_id;
            state->connections.emplace(conn->id, conn);
            state->active.fetch_add(1);
        }
        if (state->stopping.load()) conn->stopping = true;
        // Taken before conn is moved into the coroutine (argument order). The completion
        // handler keeps the signal: the spawned coroutine's last step clears its slot after
        // the connection is destroyed (a heap-use-after-free under ASan otherwise).
        std::shared_ptr<asio::cancellation_signal> cancel = conn->handler_cancel;
        const asio::cancellation_slot slot = cancel->slot();
        asio::co_spawn(
            executor, run_connection_tracked(std::move(conn)),
            asio::bind_cancellation_slot(slot, [cancel, log = LogCompletion{"net: connection"}](
                                                   const std::exception_ptr& ex) { log(ex); }));
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

// After the grace period, whatever is still running is cut: close() cancels the handler.
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
        auto ex = conn->socket.get_executor();
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
    for (const auto& sweep : state_->peer_watches) sweep->stop();
    for (auto& acceptor : state_->acceptors) acceptor.close(ignored);
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
    const bool shared_port = state_->acceptors.size() > 1;
    tcp::endpoint bound;
    for (auto& acceptor : state_->acceptors) {
        acceptor.open(endpoint.protocol(), ec);
        if (ec) return fail(ec.message());
        acceptor.set_option(asio::socket_base::reuse_address(true), ec);
        if (shared_port) {
            // Every worker's socket on one port: the kernel spreads new connections over them
            // (only sockets of this user may join the group).
            const int on = 1;
            if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) !=
                0) {
                return fail("SO_REUSEPORT: " +
                            std::error_code(errno, std::generic_category()).message());
            }
        }
        acceptor.bind(endpoint, ec);
        if (ec) return fail(ec.message());
        acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) return fail(ec.message());
        bound = acceptor.local_endpoint(ec);
        if (ec) return fail(ec.message());
        endpoint.port(bound.port());  // port 0: the others join the port the first one got
    }
    state_->port = bound.port();
    return bound;
}

void HttpServer::set_head_check(HeadCheck check) { state_->head_check = std::move(check); }

void HttpServer::set_tls(std::shared_ptr<ServerTls> tls) { state_->tls = std::move(tls); }

void HttpServer::start() {
    for (std::size_t i = 0; i < state_->acceptors.size(); ++i) {
        asio::co_spawn(state_->acceptors[i].get_executor(), accept_loop(state_, i),
                       LogCompletion{"net: accept loop"});
    }
}

std::uint16_t HttpServer::port() const { return state_->port; }

std::size_t HttpServer::active_connections() const { return state_->active.load(); }

std::uint64_t HttpServer::peer_watches_started() const {
    std::uint64_t started = 0;
    for (const auto& sweep : state_->peer_watches) started += sweep->watches_started();
    return started;
}

void HttpServer::stop(std::chrono::milliseconds grace) {
    if (state_->stopping.exchange(true)) return;
    for (const auto& sweep : state_->peer_watches) sweep->stop();
    for (std::size_t i = 0; i < state_->acceptors.size(); ++i) {
        asio::post(state_->acceptors[i].get_executor(), [s = state_, i] {
            boost::system::error_code ignored;
            s->acceptors[i].close(ignored);
        });
    }
    for (auto& conn : snapshot(*state_)) {
        auto ex = conn->socket.get_executor();
        asio::post(ex, [c = std::move(conn)] { c->begin_stop(); });
    }
    asio::co_spawn(state_->ioc, cancel_after_grace(state_, grace), LogCompletion{"net: shutdown"});
}

}  // namespace tokenradar::net
