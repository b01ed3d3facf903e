#include <sys/socket.h>

#include <tokenradar/core/clock.hpp>
#include <tokenradar/net/http_client.hpp>

#include "lazy_deadline.hpp"
#include "message_head.hpp"
#include "sync_io.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <array>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace tokenradar::net {

namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

namespace {

// Initial capacity of a connection's read buffer: the most one read takes from the socket.
constexpr std::size_t kReadCapacity = 16 * 1024;
// The most body one read_some() returns: what one read can bring, so a relay writes once per
// read (a 4 KiB piece made a 16 KiB read four client writes, each a syscall and a wake-up).
constexpr std::size_t kBodyPiece = kReadCapacity;
constexpr std::uint32_t kMaxResponseHeader = 64 * 1024;
// A pooled connection idle for less than this is reused without the liveness recv(MSG_PEEK)
// while its host has never closed a pooled connection under us (nor let a reuse time out
// without a byte: HttpClient::open): the peek was a syscall per small request. Older ones, and
// every one of a host that closes early (llama-server closes after each stream, uvicorn and Node
// after 5 s idle), are checked first.
constexpr std::chrono::seconds kTrustedIdle{1};

// The io_context of `ex` when it was made for one thread (concurrency hint 1), as each of the
// gateway's I/O threads makes its own: while that thread runs the client, no other thread
// polls its reactor. Null otherwise.
asio::io_context* one_thread_context(const asio::any_io_executor& ex) {
    const auto* io = ex.target<asio::io_context::executor_type>();
    if (io == nullptr) return nullptr;
    asio::io_context& context = io->context();
    const bool one = asio::use_service<asio::detail::scheduler>(context).concurrency_hint() == 1;
    return one ? &context : nullptr;
}

}  // namespace

namespace detail {

struct ClientConnection {
    explicit ClientConnection(asio::any_io_executor ex)
        : plain(std::in_place, ex),
          deadline(std::make_shared<LazyDeadline>(ex, [this] { close(); })) {
        // Reads take max(512, capacity - size) bytes (read_more, as Beast's): without capacity
        // a relayed stream took ~47 reads and writes per 22 KB (docs/NOTES.md). Pages are
        // touched only when data arrives, so idle pooled connections cost little.
        buffer.reserve(kReadCapacity);
    }
    ClientConnection(const ClientConnection&) = delete;
    ClientConnection& operator=(const ClientConnection&) = delete;

    // The deadline of the connection's current phase (request + head, first body piece, each
    // later piece): one lazily re-armed timer wait per connection, where Beast's per-stream
    // expiry armed and cancelled one around every socket operation (3 timerfd_settime per
    // small request on an idle gateway). Clock::time_point::max() ends the phase: unless the
    // next one starts first (open() followed by read_some(), read_some() by the next one in
    // read_all), the pending wait is cancelled from a posted check, so an io_context with
    // nothing else to do can return from run() while a response is held between reads.
    void set_deadline(Clock::time_point at) {
        deadline->set(at);
        if (at == LazyDeadline::kNone) deadline->release_soon();
    }
    bool timed_out() const { return deadline->fired(); }
    // Idle in the pool: no wait may stay pending.
    void clear_deadline() { deadline->clear(); }

    std::string key;                         // pool key: scheme://host:port
    std::optional<beast::tcp_stream> plain;  // set until TLS wraps it
    std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer{1 << 20};
    Clock::time_point idle_since{};
    // Body pieces are copied here (Beast's buffer_body). Left uninitialised, and one per
    // connection rather than per response: a zero-filled array per request was a large
    // malloc (and malloc_consolidate) on every small request.
    std::array<char, kBodyPiece> piece;
    std::shared_ptr<LazyDeadline> deadline;  // shared with its pending wait's handler

    beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }

    void close() {
        ErrorCode ignored;
        lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        lowest().socket().close(ignored);
    }

    // A pooled connection the server closed (EOF) or that has unexpected bytes waiting is
    // stale: checked without blocking before the request is written.
    bool looks_alive() {
        auto& sock = lowest().socket();
        if (!sock.is_open() || buffer.size() != 0) return false;
        char byte = 0;
        ssize_t n = ::recv(sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return false;  // orderly close
        if (n > 0) return false;   // unsolicited bytes (or TLS alert)
        return errno == EAGAIN || errno == EWOULDBLOCK;
    }
};

struct ClientPool {
    ClientPool(asio::any_io_executor e, ClientOptions o)
        : ex(std::move(e)),
          one_thread(one_thread_context(ex)),
          options(std::move(o)),
          ssl_ctx(ssl::context::tls_client) {
        ErrorCode ec;
        ssl_ctx.set_default_verify_paths(ec);
        if (ec) ssl_error = fmt::format("system CA store: {}", ec.message());
        if (!options.ca_file.empty()) {
            ssl_ctx.load_verify_file(options.ca_file, ec);
            if (ec) ssl_error = fmt::format("ca_file '{}': {}", options.ca_file, ec.message());
        }
        ssl_ctx.set_verify_mode(options.verify_tls ? ssl::verify_peer : ssl::verify_none);
    }

    std::unique_ptr<ClientConnection> take(const std::string& key) {
        std::lock_guard lock(mu);
        auto it = hosts.find(key);
        if (it == hosts.end()) return nullptr;
        auto& [stack, closes_early] = it->second;
        const auto now = Clock::now();
        while (!stack.empty()) {
            auto conn = std::move(stack.back());  // most recently used: least likely stale
            stack.pop_back();
            if (!closes_early && now - conn->idle_since < kTrustedIdle) {
                if (conn->lowest().socket().is_open() && conn->buffer.size() == 0) return conn;
                continue;
            }
            if (conn->looks_alive()) return conn;
        }
        return nullptr;
    }

    void put(std::unique_ptr<ClientConnection> conn) {
        conn->clear_deadline();
        std::lock_guard lock(mu);
        auto& stack = hosts[conn->key].idle;
        if (stack.size() >= options.max_idle_per_host) stack.erase(stack.begin());
        conn->idle_since = Clock::now();
        stack.push_back(std::move(conn));
    }

    // A reused connection of this host was closed before it answered: from now on each of its
    // pooled connections is checked before reuse, however briefly it was idle.
    void mark_closes_early(const std::string& key) {
        std::lock_guard lock(mu);
        hosts[key].closes_early = true;
    }

    std::size_t idle_count() {
        std::lock_guard lock(mu);
        std::size_t n = 0;
        for (auto& [k, host] : hosts) n += host.idle.size();
        return n;
    }

    asio::any_io_executor ex;
    asio::io_context* const one_thread;  // ex's io_context when made for one thread, or null

    // Whether nothing but the calling thread polls the reactor of ex.
    bool polled_only_here() const {
        return one_thread != nullptr && one_thread->get_executor().running_in_this_thread();
    }
    ClientOptions options;
    ssl::context ssl_ctx;
    std::string ssl_error;  // set when the CA store could not be loaded

    struct Host {
        std::vector<std::unique_ptr<ClientConnection>> idle;
        bool closes_early = false;
    };
    std::mutex mu;
    std::unordered_map<std::string, Host> hosts;  // by scheme://host:port
};

// A phase deadline capped by the total deadline; says which one a timeout belongs to.
struct Deadline {
    Clock::time_point phase;
    Clock::time_point total;
    Errc phase_errc;

    Deadline(std::chrono::milliseconds phase_timeout, Clock::time_point total_deadline, Errc e)
        : phase(Clock::now() + phase_timeout), total(total_deadline), phase_errc(e) {}
    Clock::time_point at() const { return std::min(phase, total); }
    Errc timeout_errc() const { return total <= phase ? Errc::timeout_total : phase_errc; }
};

struct ResponseState {
    ResponseState() = default;
    ResponseState(const ResponseState&) = delete;
    ResponseState& operator=(const ResponseState&) = delete;
    // A body read to its end leaves its connection here until the response is read again or
    // destroyed, so the last piece (a view into conn->piece) stays valid as read_some says.
    ~ResponseState() {
        if (done && reusable && !cancelled && conn) pool->put(std::move(conn));
    }

    std::shared_ptr<ClientPool> pool;
    std::unique_ptr<ClientConnection> conn;
    http::response_parser<http::buffer_body> parser;
    RequestTimings timings;
    Clock::time_point total_deadline;
    std::string authority;
    bool first_piece = true;
    bool done = false;
    bool reusable = false;  // done, and the exchange left the connection clean for the pool
    bool cancelled = false;
};

}  // namespace detail

using detail::ClientConnection;
using detail::ClientPool;
using detail::Deadline;
using detail::ResponseState;

namespace {

std::string ssl_detail(const ErrorCode& ec) {
    if (ec.category() == asio::error::get_ssl_category()) {
        char buf[256];
        ::ERR_error_string_n(static_cast<unsigned long>(ec.value()), buf, sizeof buf);
        return buf;
    }
    return ec.message();
}

// Maps an I/O error of one phase to our error enum with a message naming host:port.
Error io_error(const ErrorCode& ec, const Deadline& deadline, std::string_view authority,
               std::string_view what, bool handshake = false) {
    if (ec == beast::error::timeout) {
        Errc e = deadline.timeout_errc();
        return Error(e, fmt::format("{}: {}: {}", authority, what, make_error_code(e).message()));
    }
    if (ec == asio::error::operation_aborted) {
        return Error(Errc::cancelled, fmt::format("{}: {}: cancelled", authority, what));
    }
    if (handshake) {
        return Error(Errc::tls_failed,
                     fmt::format("{}: TLS handshake: {}", authority, ssl_detail(ec)));
    }
    if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
        return Error(Errc::protocol_error,
                     fmt::format("{}: {}: malformed HTTP: {}", authority, what, ec.message()));
    }
    return Error(Errc::connection_error,
                 fmt::format("{}: {}: {}", authority, what, ssl_detail(ec)));
}

using RequestBuffers = std::array<asio::const_buffer, 2>;  // head, body: one gather write

template <class Stream>
asio::awaitable<ErrorCode> write_request(Stream& stream, const std::string& head,
                                         const std::string& body) {
    const RequestBuffers buffers{asio::buffer(head), asio::buffer(body)};
    auto [ec, n] = co_await asio::async_write(stream, buffers, use_nothrow);
    co_return ec;
}

// Plain connections: what the socket takes at once is written inline, without a posted
// completion; the rest asynchronously from where that stopped. `inline_write` says whether
// all of it went inline.
asio::awaitable<ErrorCode> write_request(beast::tcp_stream& stream, const std::string& head,
                                         const std::string& body, bool& inline_write) {
    beast::buffers_suffix<RequestBuffers> rest(
        RequestBuffers{asio::buffer(head), asio::buffer(body)});
    ErrorCode ec;
    inline_write = detail::write_now(stream.socket(), rest, ec);
    if (inline_write) co_return ec;
    auto [e, n] = co_await asio::async_write(stream.socket(), rest, use_nothrow);
    co_return e;
}

// TLS connections read through Beast; plain ones straight from the socket (sync_io.hpp).
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

asio::awaitable<ErrorCode> read_head(TlsStream& stream, beast::flat_buffer& buffer,
                                     http::response_parser<http::buffer_body>& parser) {
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_nothrow);
    co_return ec;
}

asio::awaitable<ErrorCode> read_body_some(TlsStream& stream, beast::flat_buffer& buffer,
                                          http::response_parser<http::buffer_body>& parser) {
    auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, use_nothrow);
    co_return ec;
}

asio::awaitable<Result<std::unique_ptr<ClientConnection>>> connect(
    std::shared_ptr<ClientPool> pool, Url url, std::string key, RequestTimings* timings,
    Clock::time_point total_deadline) {
    const std::string authority = url.authority();
    const ClientOptions& options = pool->options;
    auto conn = std::make_unique<ClientConnection>(pool->ex);
    conn->key = std::move(key);
    Deadline deadline(options.connect_timeout, total_deadline, Errc::timeout_connect);

    // IP literals skip the resolver (its getaddrinfo thread cannot be timed out).
    std::vector<tcp::endpoint> endpoints;
    ErrorCode ec;
    auto address = asio::ip::make_address(url.host, ec);
    if (!ec) {
        endpoints.emplace_back(address, url.port);
    } else {
        tcp::resolver resolver(pool->ex);
        auto [rec, results] =
            co_await resolver.async_resolve(url.host, std::to_string(url.port), use_nothrow);
        if (rec) {
            if (rec == asio::error::operation_aborted) {
                co_return Error(Errc::cancelled, fmt::format("{}: resolve: cancelled", authority));
            }
            co_return Error(Errc::connect_failed,
                            fmt::format("{}: resolve: {}", authority, rec.message()));
        }
        for (const auto& r : results) endpoints.push_back(r.endpoint());
    }

    const std::int64_t t0 = steady_now_ns();
    auto& tcp_stream = *conn->plain;
    tcp_stream.expires_at(deadline.at());
    auto [cec, endpoint] = co_await tcp_stream.async_connect(endpoints, use_nothrow);
    if (cec) {
        if (cec == beast::error::timeout || cec == asio::error::operation_aborted) {
            co_return io_error(cec, deadline, authority, "connect");
        }
        co_return Error(Errc::connect_failed,
                        fmt::format("{}: connect: {}", authority, cec.message()));
    }
    tcp_stream.socket().set_option(tcp::no_delay(true), ec);
    tcp_stream.socket().non_blocking(true, ec);  // plain writes are tried inline (sync_io.hpp)
    timings->connect_ns = steady_now_ns() - t0;

    if (url.tls()) {
        if (!pool->ssl_error.empty()) {
            co_return Error(Errc::tls_failed, fmt::format("{}: {}", authority, pool->ssl_error));
        }
        const std::int64_t t1 = steady_now_ns();
        conn->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(*conn->plain),
                                                                           pool->ssl_ctx);
        conn->plain.reset();
        auto& tls = *conn->tls;
        asio::ip::make_address(url.host, ec);
        const bool is_ip = !ec;  // SNI carries names only
        if (!is_ip &&
            // SSL_set_tlsext_host_name without its C-style cast.
            ::SSL_ctrl(tls.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                       const_cast<char*>(url.host.c_str())) != 1) {
            co_return Error(Errc::tls_failed, fmt::format("{}: cannot set SNI", authority));
        }
        if (options.verify_tls) {
            tls.set_verify_callback(ssl::host_name_verification(url.host));
        }
        beast::get_lowest_layer(tls).expires_at(deadline.at());
        auto [hec] = co_await tls.async_handshake(ssl::stream_base::client, use_nothrow);
        if (hec) {
            co_return io_error(
                hec, deadline, authority, "TLS handshake",
                hec != beast::error::timeout && hec != asio::error::operation_aborted);
        }
        timings->tls_ns = steady_now_ns() - t1;
    }
    conn->lowest().expires_never();  // later phases use the connection's LazyDeadline
    co_return conn;
}

enum class Attempt { ok, retry, fail };

// Terminal cancellation of the awaiting coroutine (a server handler whose client hung up)
// cancels the operation pending at that moment. Emitted while none is pending (between two
// reads, or before the first), it is only recorded in the coroutine's cancellation state,
// and with throw_if_cancelled(false) (Gateway::handle) nothing would ever look at it: checked
// before each operation, so a relay cannot read an upstream body to its end for nobody.
bool cancellation_requested(const asio::cancellation_state& state) {
    return state.cancelled() != asio::cancellation_type::none;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// StreamingResponse

StreamingResponse::StreamingResponse(std::unique_ptr<ResponseState> state)
    : state_(std::move(state)) {}
StreamingResponse::~StreamingResponse() = default;

unsigned StreamingResponse::status() const { return state_->parser.get().result_int(); }
const http::fields& StreamingResponse::headers() const { return state_->parser.get().base(); }
const RequestTimings& StreamingResponse::timings() const { return state_->timings; }
bool StreamingResponse::done() const { return state_->done; }
bool StreamingResponse::body_buffered() const {
    return !state_->done && state_->conn && state_->conn->buffer.size() > 0;
}

void StreamingResponse::cancel() {
    state_->cancelled = true;
    if (state_->conn) state_->conn->close();
}

namespace {

// The body was read to the end: the connection waits for the pool (release_connection,
// ~ResponseState) if the exchange left it clean, else it is closed (the object stays until
// then: the last piece points into it).
void finish_response(ResponseState& s) {
    s.done = true;
    if (!s.conn) return;
    s.reusable = s.parser.keep_alive() && !s.parser.need_eof() && s.conn->buffer.size() == 0;
    if (!s.reusable) s.conn->close();
}

// Read again after the end of the body: the connection goes back to the pool.
void release_connection(ResponseState& s) {
    if (s.conn && s.reusable && !s.cancelled) s.pool->put(std::move(s.conn));
    s.conn.reset();
}

}  // namespace

asio::awaitable<Result<std::string_view>> StreamingResponse::read_some() {
    ResponseState& s = *state_;
    if (s.done) {
        release_connection(s);
        co_return std::string_view{};
    }
    const asio::cancellation_state cancel_state = co_await asio::this_coro::cancellation_state;
    if (!s.cancelled && s.conn && cancellation_requested(cancel_state)) {
        cancel();  // the awaiting coroutine was cancelled while no read was pending
    }
    if (s.cancelled || !s.conn) {
        co_return Error(Errc::cancelled, fmt::format("{}: read: cancelled", s.authority));
    }
    const auto& options = s.pool->options;
    Deadline deadline(s.first_piece ? options.first_byte_timeout : options.idle_timeout,
                      s.total_deadline,
                      s.first_piece ? Errc::timeout_first_byte : Errc::timeout_idle);
    ClientConnection& conn = *s.conn;
    conn.set_deadline(deadline.at());
    for (;;) {
        auto& body = s.parser.get().body();
        body.data = conn.piece.data();
        body.size = conn.piece.size();
        // Bytes already buffered (the head's read usually brings the start of the body) are
        // parsed inline; Beast's read would post its completion even when it read nothing.
        ErrorCode ec;
        std::size_t used = 0;
        if (conn.buffer.size() > 0) {
            used = s.parser.put(conn.buffer.data(), ec);
            conn.buffer.consume(used);
            if (ec == http::error::need_more || ec == http::error::need_buffer) ec = {};
        }
        if (!ec && used == 0 && !s.parser.is_done()) {
            if (conn.tls) {
                ec = co_await read_body_some(*conn.tls, conn.buffer, s.parser);
            } else {
                ec = co_await detail::read_more(conn.plain->socket(), conn.buffer, s.parser,
                                                detail::ShortRead::try_again,
                                                detail::FirstAttempt::try_socket);
                if (!ec && !s.parser.is_done()) continue;  // parse what arrived
            }
        }
        if (ec == http::error::need_buffer) ec = {};
        if (ec) {
            if (s.cancelled) {
                ec = asio::error::operation_aborted;
            } else if (conn.timed_out()) {
                ec = beast::error::timeout;
            }
            s.conn->close();
            s.conn.reset();
            co_return io_error(ec, deadline, s.authority, "reading body");
        }
        const std::size_t got = conn.piece.size() - s.parser.get().body().size;
        if (s.parser.is_done()) {
            finish_response(s);
        } else if (got == 0) {
            continue;  // only framing (a chunk header) arrived
        }
        if (got > 0) {
            s.first_piece = false;
            if (s.conn) s.conn->set_deadline(Clock::time_point::max());
        }
        co_return std::string_view(conn.piece.data(), got);
    }
}

asio::awaitable<Result<std::string>> StreamingResponse::read_all(std::size_t max_bytes) {
    std::string out;
    for (;;) {
        auto piece = co_await read_some();
        if (!piece) co_return piece.error();
        if (piece->empty()) co_return out;
        if (out.size() + piece->size() > max_bytes) {
            cancel();
            co_return Error(Errc::payload_too_large, fmt::format("{}: response body over {} bytes",
                                                                 state_->authority, max_bytes));
        }
        out.append(*piece);
    }
}

// ---------------------------------------------------------------------------------------
// HttpClient

HttpClient::HttpClient(asio::any_io_executor ex, ClientOptions options)
    : ex_(ex), pool_(std::make_shared<ClientPool>(std::move(ex), std::move(options))) {}
HttpClient::~HttpClient() = default;

std::size_t HttpClient::idle_connections() const { return pool_->idle_count(); }

asio::awaitable<Result<std::unique_ptr<StreamingResponse>>> HttpClient::open(
    http::verb method, const Url& url, const RequestHeaders& headers, std::string body) {
    const ClientOptions& options = pool_->options;
    const auto total_deadline = Clock::now() + options.total_timeout;
    const std::string authority = url.authority();
    const std::string key = url.scheme + "://" + authority;

    const bool default_port = url.port == (url.tls() ? 443 : 80);
    std::string host_field;
    if (!default_port) {
        host_field = authority;
    } else if (url.host.find(':') != std::string::npos) {
        host_field = '[' + url.host + ']';
    } else {
        host_field = url.host;
    }
    auto head = request_head(method, url.target, host_field, headers, body.size());
    if (!head) co_return head.error();

    for (int attempt = 0; attempt < 2; ++attempt) {
        const asio::cancellation_state cancel_state = co_await asio::this_coro::cancellation_state;
        if (cancellation_requested(cancel_state)) {
            co_return Error(Errc::cancelled,
                            fmt::format("{}: cancelled before the request", authority));
        }
        auto state = std::make_unique<ResponseState>();
        state->pool = pool_;
        state->total_deadline = total_deadline;
        state->authority = authority;
        state->conn = attempt == 0 ? pool_->take(key) : nullptr;
        const bool reused = state->conn != nullptr;
        state->timings.reused_connection = reused;
        if (!reused) {
            auto connected = co_await connect(pool_, url, key, &state->timings, total_deadline);
            if (!connected) co_return connected.error();
            state->conn = std::move(*connected);
        }
        ClientConnection& conn = *state->conn;

        Deadline deadline(options.headers_timeout, total_deadline, Errc::timeout_headers);
        conn.set_deadline(deadline.at());
        state->timings.t_send = steady_now_ns();
        ErrorCode ec;  // if/else: GCC 12 mis-compiles co_await inside ?:
        bool inline_write = false;
        if (conn.tls) {
            ec = co_await write_request(*conn.tls, *head, body);
        } else {
            ec = co_await write_request(*conn.plain, *head, body, inline_write);
        }
        if (ec && conn.timed_out()) ec = beast::error::timeout;
        if (ec) {
            conn.close();
            if (reused && ec != beast::error::timeout && ec != asio::error::operation_aborted) {
                pool_->mark_closes_early(key);
                continue;  // stale pooled connection: the server never saw the request
            }
            co_return io_error(ec, deadline, authority, "writing request");
        }

        auto& parser = state->parser;
        parser.header_limit(kMaxResponseHeader);
        parser.body_limit(boost::none);  // bodies are streamed in pieces, never held whole
        if (method == http::verb::head) parser.skip(true);
        bool awaited = false;
        if (conn.tls) {
            ec = co_await read_head(*conn.tls, conn.buffer, parser);
        } else {
            // When the request went out inline and nothing else polls this io_context, epoll
            // still holds the edge of any answer that came since (sync_io.hpp, AwaitedBuffer).
            awaited = inline_write && pool_->polled_only_here();
            const auto first =
                awaited ? detail::FirstAttempt::await_epoll : detail::FirstAttempt::try_socket;
            ec = co_await detail::read_until(conn.plain->socket(), conn.buffer, parser,
                                             detail::ParseUntil::header,
                                             detail::ShortRead::try_again, first);
        }
        if (ec && conn.timed_out()) ec = beast::error::timeout;
        if (ec) {
            conn.close();
            // A reused connection that the server closed without a byte of answer never
            // carried the request to it (it had closed first, and the request raced its FIN):
            // retried once on a fresh connection whatever the method, as browsers and
            // Python's urllib3 do. An attempt that got response bytes is a real failure.
            const bool closed_before_answer =
                !parser.got_some() && conn.buffer.size() == 0 &&
                (ec == http::error::end_of_stream || ec == asio::error::connection_reset ||
                 ec == asio::error::eof || ec == asio::error::broken_pipe);
            if (reused && closed_before_answer) {
                pool_->mark_closes_early(key);
                continue;
            }
            // No byte before the timeout on an awaited reuse: perhaps a peer that half-closed
            // while it sat in the pool (AwaitedBuffer). Later reuses of the host are peeked.
            if (reused && awaited && ec == beast::error::timeout && !parser.got_some()) {
                pool_->mark_closes_early(key);
            }
            co_return io_error(ec, deadline, authority, "reading response head");
        }
        state->timings.t_headers = steady_now_ns();
        conn.set_deadline(Clock::time_point::max());
        if (parser.is_done()) finish_response(*state);
        co_return std::make_unique<StreamingResponse>(std::move(state));
    }
    co_return Error(Errc::connection_error,
                    fmt::format("{}: pooled connection closed and retry failed", authority));
}

asio::awaitable<Result<HttpClient::Response>> HttpClient::request(http::verb method, const Url& url,
                                                                  const RequestHeaders& headers,
                                                                  std::string body,
                                                                  std::size_t max_body) {
    auto opened = co_await open(method, url, headers, std::move(body));
    if (!opened) co_return opened.error();
    StreamingResponse& response = **opened;
    auto all = co_await response.read_all(max_body);
    if (!all) co_return all.error();
    Response out;
    out.status = response.status();
    out.headers = response.headers();
    out.body = std::move(*all);
    out.timings = response.timings();
    co_return out;
}

void record_timings(Measurement& m, const RequestTimings& timings, std::int64_t t_start) {
    m.ts_us += (timings.t_send - t_start) / 1000;
    m.t.send = timings.t_send;
    m.t.headers = timings.t_headers;
    m.connect_ns = timings.connect_ns;
    m.tls_ns = timings.tls_ns;
}

}  // namespace tokenradar::net
