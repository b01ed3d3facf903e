#include <sys/socket.h>

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/net/http_server.hpp>

#include "lazy_deadline.hpp"
#include "message_head.hpp"
#include "sync_io.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

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
// A handler gets a peer watch once it has run for one to two of these (PeerWatchSweep).
constexpr std::chrono::milliseconds kPeerWatchDelay{10};

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

class ServerConnection;

// Starts the peer watch (watch_peer) of handlers that have run for one to two sweep periods,
// so the short ones never pay for it. A watch is a wait for readability, which Asio 1.81
// re-arms with an epoll_ctl each time: one syscall per request, ~2% of the gateway's CPU at
// c=64 when every handler had one (docs/NOTES.md). The cost is a disconnect noticed up to
// two periods late while a handler is young: the upstream request is cancelled 10-20 ms
// after the client left instead of at once.
//
// One per worker io_context (its timer on that worker: no strand, no cross-thread post), or
// one on a strand of the server's io_context when connections run on strands. Handlers
// enter and leave from their connection's thread; the timer ticks while handlers run and
// stops after a period in which none ran, so an idle server has no timer pending. After
// stop(), every running handler and every new one is watched at once.
class PeerWatchSweep : public std::enable_shared_from_this<PeerWatchSweep> {
  public:
    explicit PeerWatchSweep(asio::any_io_executor ex) : timer_(std::move(ex)) {}

    // A handler starts on `conn`: true when the caller must watch it at once (stopped).
    bool enter(ServerConnection& conn);
    void leave(ServerConnection& conn);
    // Watches every running handler now, and every later one as it enters. Idempotent.
    void stop();
    // Handlers whose watch the sweep started, so far (tests).
    std::uint64_t watches_started() const { return watches_started_.load(); }

  private:
    void arm();
    void tick();
    void remove_at(std::size_t index);
    // Posts watch_peer for each to its connection's executor, if the same handler still runs.
    void start_watches(
        std::vector<std::pair<std::shared_ptr<ServerConnection>, std::uint64_t>> due);

    mutable std::mutex mu_;
    std::vector<ServerConnection*> running_;  // each knows its index (sweep_index)
    std::uint64_t tick_ = 0;                  // ticks so far; a handler records it on entry
    bool armed_ = false;                      // a tick is due
    bool entered_since_tick_ = false;
    bool stopped_ = false;
    std::atomic<std::uint64_t> watches_started_{0};  // counted on the connections' threads
    asio::steady_timer timer_;                       // on a worker, or on its own strand
};

struct ServerState {
    ServerState(asio::io_context& io, Handler h, ServerLimits l, std::vector<asio::io_context*> w)
        : ioc(io),
          handler(std::move(h)),
          limits(l),
          workers(std::move(w)),
          acceptor(asio::make_strand(io)) {
        if (workers.empty()) {
            peer_watches.push_back(std::make_shared<PeerWatchSweep>(asio::make_strand(ioc)));
        }
        for (asio::io_context* worker : workers) {
            peer_watches.push_back(std::make_shared<PeerWatchSweep>(worker->get_executor()));
        }
    }

    // A new connection's executor and peer watch sweep: its own strand on ioc, or the next
    // worker io_context's executor itself. A worker runs on one thread, so nothing of a
    // connection can run concurrently there, and a strand would cost a mutex, a queue and an
    // executor hop on every completion of every operation (e.g. each paced sim chunk).
    std::pair<asio::any_io_executor, std::shared_ptr<PeerWatchSweep>> next_connection_place() {
        if (workers.empty()) return {asio::make_strand(ioc), peer_watches.front()};
        const std::size_t i = next_worker++ % workers.size();
        return {workers[i]->get_executor(), peer_watches[i]};
    }

    asio::io_context& ioc;
    Handler handler;
    HeadCheck head_check;  // set before start()
    ServerLimits limits;
    std::vector<asio::io_context*> workers;
    // Request body bytes reserved by the connections (ServerLimits::max_body_bytes_in_flight).
    std::atomic<std::size_t> body_bytes_in_flight{0};
    // Only the accept loop (on the acceptor's strand) uses it.
    std::size_t next_worker = 0;
    tcp::acceptor acceptor;  // on its own strand: accept loop and close() never race
    std::uint16_t port = 0;
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> active{0};
    // One per worker (or one for the strands); their pending operations hold them.
    std::vector<std::shared_ptr<PeerWatchSweep>> peer_watches;

    std::mutex mu;  // guards connections and next_id
    std::unordered_map<std::uint64_t, std::weak_ptr<ServerConnection>> connections;
    std::uint64_t next_id = 0;
};

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
  public:
    ServerConnection(std::shared_ptr<ServerState> s, tcp::socket sock,
                     std::shared_ptr<PeerWatchSweep> sweep)
        : state(std::move(s)),
          socket(std::move(sock)),
          peer_watch(std::move(sweep)),
          deadline(
              std::make_shared<LazyDeadline>(socket.get_executor(), [this] { on_deadline(); })) {}

    std::shared_ptr<ServerState> state;
    tcp::socket socket;  // executor: this connection's strand, or its worker io_context
    std::shared_ptr<PeerWatchSweep> peer_watch;  // its worker's (or the strands') sweep
    // Header, idle and write timeouts: closing the socket fails the pending operation, as
    // Beast's stream expiry did, without a timer arm and cancel around every operation.
    std::shared_ptr<LazyDeadline> deadline;
    beast::flat_buffer buffer;
    std::uint64_t id = 0;
    bool gone = false;               // peer closed/errored, or we closed the socket
    bool stopping = false;           // server is shutting down: no keep-alive
    bool in_handler = false;         // a response is in flight
    bool watch_pending = false;      // the peer watcher's wait is queued
    bool reading_request = false;    // a request's first bytes came, not all of it
    bool request_timed_out = false;  // ...and the header timeout passed: 408
    // Handlers started on this connection. Written on the connection's thread only while it
    // is not in the sweep's list (before enter(), after leave()), read under the sweep's
    // mutex only while it is: the mutex orders the two.
    std::uint64_t handlers = 0;
    // PeerWatchSweep's: where the running handler is in its list (kNotSwept: not in it), and
    // the sweep's tick when it entered. Guarded by the sweep's mutex.
    std::size_t sweep_index = kNotSwept;
    std::uint64_t sweep_tick = 0;
    static constexpr std::size_t kNotSwept = static_cast<std::size_t>(-1);
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
        close_socket();
    }
    // A request that has begun to arrive and is late is cancelled, to be answered with 408;
    // any other timeout closes the socket.
    void on_deadline() {
        if (reading_request) {
            request_timed_out = true;
            boost::system::error_code ignored;
            socket.cancel(ignored);
            return;
        }
        close_socket();
    }
    // A timeout: the pending operation fails (the handler sees a write error, the read loop
    // ends), as with Beast's expiry; no cancellation is emitted.
    void close_socket() {
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_both, ignored);
        socket.close(ignored);
        deadline->clear();  // nothing may stay pending: io_context::run() must be able to return
    }
    void expires_after(std::chrono::milliseconds timeout) {
        deadline->set(LazyDeadline::Clock::now() + timeout);
    }
    void expires_never() { deadline->set(LazyDeadline::kNone); }
    void set_write_deadline() { expires_after(state->limits.idle_timeout); }
};

}  // namespace detail

using detail::DrainingBuffer;
using detail::LazyDeadline;
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
    const auto endpoint = conn_->socket.remote_endpoint(ec);
    return ec ? std::string() : endpoint.address().to_string();
}

void ResponseWriter::abort() {
    keep_alive_ = false;
    conn_->close();
}

namespace {

boost::system::error_code gone_error() {
    return asio::error::make_error_code(asio::error::not_connected);
}

// Writes a buffer sequence: inline what the socket takes now (no posted completion), the rest
// asynchronously under the write timeout.
template <class Buffers>
asio::awaitable<boost::system::error_code> write_buffers(ServerConnection& conn,
                                                         const Buffers& buffers) {
    boost::system::error_code ec;
    beast::buffers_suffix<Buffers> rest(buffers);
    if (detail::write_now(conn.socket, rest, ec)) co_return ec;
    conn.set_write_deadline();
    auto [e, n] = co_await asio::async_write(conn.socket, rest, use_nothrow);
    conn.expires_never();
    co_return e;
}

// The head for a response, or (a header value with CR or LF: a bug of the handler's, which
// must not reach the wire) an error that leaves the response unstarted, so the server
// answers 500.
Result<std::string> checked_head(http::status status, unsigned version, bool keep_alive,
                                 std::string_view content_type, const HeaderList& headers,
                                 ResponseBody body, std::size_t body_size) {
    auto head = response_head(status, version, keep_alive, content_type, headers, body, body_size);
    if (!head) spdlog::error("response head: {}", head.error().message);
    return head;
}

// Chunked framing without Beast's chunk_body, whose size line is a shared_ptr allocation
// per chunk: "<hex size>\r\n" <bytes> "\r\n".
struct ChunkFrame {
    explicit ChunkFrame(std::size_t size) {
        char* end = std::to_chars(line.data(), line.data() + line.size() - 2, size, 16).ptr;
        end[0] = '\r';
        end[1] = '\n';
        length = static_cast<std::size_t>(end + 2 - line.data());
    }
    std::array<char, 20> line{};
    std::size_t length = 0;
};

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace

asio::awaitable<boost::system::error_code> ResponseWriter::send(http::status status,
                                                                std::string_view content_type,
                                                                std::string body,
                                                                const HeaderList& headers) {
    if (started_ || conn_->gone) co_return gone_error();
    if (conn_->stopping) keep_alive_ = false;
    const bool bodiless = http::to_status_class(status) == http::status_class::informational ||
                          status == http::status::no_content ||
                          status == http::status::not_modified;
    if (bodiless && !body.empty()) {
        throw std::invalid_argument("a 1xx, 204 or 304 response has no body");  // as Beast's
    }
    const auto head = checked_head(status, version_, keep_alive_, content_type, headers,
                                   ResponseBody::content_length, body.size());
    if (!head) co_return make_error_code(boost::system::errc::invalid_argument);
    started_ = true;
    boost::system::error_code ec;
    if (head_request_) {
        const auto buffer = asio::buffer(*head);  // named: no temporaries in co_await arguments
        ec = co_await write_buffers(*conn_, buffer);
    } else {
        const std::array<asio::const_buffer, 2> buffers{asio::buffer(*head), asio::buffer(body)};
        ec = co_await write_buffers(*conn_, buffers);
    }
    if (ec) {
        conn_->gone = true;
        co_return ec;
    }
    complete_ = true;
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::start_stream(
    http::status status, std::string_view content_type, const HeaderList& headers,
    std::string_view first_chunk) {
    if (started_ || conn_->gone) co_return gone_error();
    if (conn_->stopping || version_ < 11) keep_alive_ = false;
    const auto built = checked_head(status, version_, keep_alive_, content_type, headers,
                                    ResponseBody::chunked, 0);
    if (!built) co_return make_error_code(boost::system::errc::invalid_argument);
    started_ = true;
    streaming_ = true;
    const std::string& head = *built;
    if (head_request_) first_chunk = {};
    boost::system::error_code ec;
    if (first_chunk.empty()) {
        const auto buffer = asio::buffer(head);  // named: no temporaries in co_await arguments
        ec = co_await write_buffers(*conn_, buffer);
    } else if (version_ >= 11) {
        const ChunkFrame frame(first_chunk.size());
        const std::array<asio::const_buffer, 4> buffers{
            asio::buffer(head), asio::buffer(frame.line.data(), frame.length),
            asio::buffer(first_chunk.data(), first_chunk.size()),
            asio::buffer(kCrlf.data(), kCrlf.size())};
        ec = co_await write_buffers(*conn_, buffers);
    } else {
        const std::array<asio::const_buffer, 2> buffers{
            asio::buffer(head), asio::buffer(first_chunk.data(), first_chunk.size())};
        ec = co_await write_buffers(*conn_, buffers);
    }
    if (ec) conn_->gone = true;
    if (head_request_) complete_ = !ec;  // the head is the whole answer to HEAD
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::write_chunk(std::string_view bytes) {
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    if (bytes.empty()) co_return boost::system::error_code{};
    boost::system::error_code ec;
    if (version_ >= 11) {
        // A buffer sequence over the caller's bytes: size line, data, CRLF (no copy).
        const ChunkFrame frame(bytes.size());
        const std::array<asio::const_buffer, 3> buffers{
            asio::buffer(frame.line.data(), frame.length), asio::buffer(bytes.data(), bytes.size()),
            asio::buffer(kCrlf.data(), kCrlf.size())};
        ec = co_await write_buffers(*conn_, buffers);
    } else {
        const auto buffer = asio::buffer(bytes.data(), bytes.size());
        ec = co_await write_buffers(*conn_, buffer);
    }
    if (ec) conn_->gone = true;
    co_return ec;
}

asio::awaitable<boost::system::error_code> ResponseWriter::finish(std::string_view last_bytes) {
    if (head_request_ && streaming_) co_return boost::system::error_code{};
    if (!streaming_ || complete_ || conn_->gone) co_return gone_error();
    boost::system::error_code ec;
    if (version_ < 11) {
        if (!last_bytes.empty()) {
            const auto buffer = asio::buffer(last_bytes.data(), last_bytes.size());
            ec = co_await write_buffers(*conn_, buffer);
        }
    } else if (last_bytes.empty()) {
        const auto buffer = asio::buffer(kLastChunk.data(), kLastChunk.size());
        ec = co_await write_buffers(*conn_, buffer);
    } else {
        // The last chunk and the terminating one in one write: one wake-up of the client.
        const ChunkFrame frame(last_bytes.size());
        const std::array<asio::const_buffer, 4> buffers{
            asio::buffer(frame.line.data(), frame.length),
            asio::buffer(last_bytes.data(), last_bytes.size()),
            asio::buffer(kCrlf.data(), kCrlf.size()),
            asio::buffer(kLastChunk.data(), kLastChunk.size())};
        ec = co_await write_buffers(*conn_, buffers);
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

// Notices the peer closing or erroring while a handler runs (e.g. waits for an upstream's
// first token): that closes the socket, which cancels the handler. A wait for readability,
// then (only while a handler runs) a non-blocking MSG_PEEK of one byte to tell the peer's
// close from a pipelined request's bytes, which it never consumes. Not a coroutine: a wait
// with a plain callback costs no frame and no spawn. Started by PeerWatchSweep for handlers
// that run longer than kPeerWatchDelay.
//
// The wait is not cancelled when the handler ends: it completes when the next request's bytes
// (or the peer's close) arrive, in the same reactor pass as the loop's read, where a cancel
// cost a posted completion per request; the callback then has nothing to do. One wait is
// pending at a time; whichever handler runs when it completes is the one it watches.
// Syscalls: the wait's epoll_ctl (re-arm). A MSG_PEEK receive instead cost two (a
// speculative one that found nothing, and the one that found the next request's first byte).
void watch_peer(const std::shared_ptr<ServerConnection>& conn) {
    if (conn->watch_pending) return;
    conn->watch_pending = true;
    conn->socket.async_wait(tcp::socket::wait_read, [conn](const boost::system::error_code& ec) {
        conn->watch_pending = false;
        if (!conn->in_handler || conn->gone) return;  // between requests, or closed
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
            char byte = 0;
            boost::system::error_code peek_ec;
            const std::size_t n =
                conn->socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
            if (!peek_ec && n > 0) return;       // a pipelined request: the peer is there
            if (detail::would_block(peek_ec)) {  // readiness without bytes: watch on
                watch_peer(conn);
                return;
            }
        }
        conn->close();  // orderly close (eof) or a socket error
    });
}

// The running handler of a connection, in the peer watch sweep for as long as it runs (a
// frame local: leaves even when the coroutine is destroyed mid-handler).
class SweptHandler {
  public:
    explicit SweptHandler(const std::shared_ptr<ServerConnection>& conn)
        : conn_(*conn), sweep_(*conn->peer_watch) {
        if (sweep_.enter(conn_)) watch_peer(conn);
    }
    ~SweptHandler() { sweep_.leave(conn_); }
    SweptHandler(const SweptHandler&) = delete;
    SweptHandler& operator=(const SweptHandler&) = delete;

  private:
    ServerConnection& conn_;
    detail::PeerWatchSweep& sweep_;
};

}  // namespace

namespace detail {

bool PeerWatchSweep::enter(ServerConnection& conn) {
    bool arm_now = false;
    {
        std::lock_guard lock(mu_);
        if (stopped_) return true;
        running_.push_back(&conn);
        conn.sweep_index = running_.size() - 1;
        conn.sweep_tick = tick_;
        entered_since_tick_ = true;
        arm_now = !armed_;
        armed_ = true;
    }
    if (arm_now) asio::post(timer_.get_executor(), [self = shared_from_this()] { self->arm(); });
    return false;
}

void PeerWatchSweep::leave(ServerConnection& conn) {
    std::lock_guard lock(mu_);
    if (conn.sweep_index != ServerConnection::kNotSwept) remove_at(conn.sweep_index);
}

void PeerWatchSweep::remove_at(std::size_t index) {
    running_[index]->sweep_index = ServerConnection::kNotSwept;
    if (index + 1 != running_.size()) {
        running_[index] = running_.back();
        running_[index]->sweep_index = index;
    }
    running_.pop_back();
}

void PeerWatchSweep::stop() {
    std::vector<std::pair<std::shared_ptr<ServerConnection>, std::uint64_t>> due;
    {
        std::lock_guard lock(mu_);
        if (stopped_) return;
        stopped_ = true;
        for (ServerConnection* conn : running_) {
            conn->sweep_index = ServerConnection::kNotSwept;
            due.emplace_back(conn->shared_from_this(), conn->handlers);
        }
        running_.clear();
    }
    start_watches(std::move(due));
    asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

// On the timer's strand; armed_ is already true.
void PeerWatchSweep::arm() {
    timer_.expires_after(kPeerWatchDelay);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted) {
            std::lock_guard lock(self->mu_);
            self->armed_ = false;
            return;
        }
        self->tick();
    });
}

void PeerWatchSweep::tick() {
    std::vector<std::pair<std::shared_ptr<ServerConnection>, std::uint64_t>> due;
    bool again = false;
    {
        std::lock_guard lock(mu_);
        // Handlers that entered before the previous tick have run for at least one period.
        for (std::size_t i = running_.size(); i-- > 0;) {
            ServerConnection* conn = running_[i];
            if (conn->sweep_tick >= tick_) continue;
            due.emplace_back(conn->shared_from_this(), conn->handlers);
            remove_at(i);
        }
        ++tick_;
        again = !stopped_ && (!running_.empty() || entered_since_tick_);
        entered_since_tick_ = false;
        armed_ = again;
    }
    start_watches(std::move(due));
    if (again) arm();
}

void PeerWatchSweep::start_watches(
    std::vector<std::pair<std::shared_ptr<ServerConnection>, std::uint64_t>> due) {
    for (auto& [conn, handler] : due) {
        auto ex = conn->socket.get_executor();
        asio::post(ex, [self = shared_from_this(), conn = std::move(conn), handler = handler] {
            // The same handler, still running on an open socket (a timeout may have closed
            // it without cancelling the handler, and must stay that way).
            if (!conn->in_handler || conn->handlers != handler || conn->gone ||
                !conn->socket.is_open())
                return;
            self->watches_started_.fetch_add(1);
            watch_peer(conn);
        });
    }
}

}  // namespace detail

namespace {

asio::awaitable<void> linger_close(std::shared_ptr<ServerConnection> conn) {
    boost::system::error_code ignored;
    conn->socket.shutdown(tcp::socket::shutdown_send, ignored);
    conn->expires_after(kLingerTime);
    std::size_t total = 0;
    char sink[1024];
    while (total < kLingerBytes) {
        auto [ec, n] = co_await conn->socket.async_read_some(asio::buffer(sink), use_nothrow);
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
    bool first = true;
    for (;;) {
        if (conn->stopping || conn->gone) break;
        // Wait for the first bytes of the next request: the idle timeout applies between
        // keep-alive requests, the header timeout to a fresh connection.
        if (conn->buffer.size() == 0) {
            conn->expires_after(first ? limits.header_timeout : limits.idle_timeout);
            auto [ec, n] = co_await conn->socket.async_read_some(
                DrainingBuffer(conn->buffer.prepare(kReadChunk)), use_nothrow);
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
            ec = co_await detail::read_until(conn->socket, conn->buffer, parser,
                                             detail::ParseUntil::header, detail::ShortRead::drains);
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
                http::response<http::empty_body> cont{http::status::continue_, 11};
                auto [cec, cn] = co_await http::async_write(conn->socket, cont, use_nothrow);
                if (cec) break;
            }
            // Room for the whole body when it is smaller than kBodyReadRoom (a chat request
            // of a few KiB), so a gateway request does not allocate 64 KiB for it.
            const std::uint64_t announced = parser.content_length().value_or(kBodyReadRoom);
            if (parser.chunked() || announced > kReadChunk) {
                conn->buffer.reserve(static_cast<std::size_t>(
                    std::min<std::uint64_t>(conn->buffer.size() + announced, kBodyReadRoom)));
            }
            if (!detail::parse_buffered(parser, conn->buffer, detail::ParseUntil::message, ec)) {
                ec = co_await detail::read_until(conn->socket, conn->buffer, parser,
                                                 detail::ParseUntil::message,
                                                 detail::ShortRead::drains);
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

asio::awaitable<void> accept_loop(std::shared_ptr<ServerState> state) {
    while (!state->stopping.load()) {
        auto [executor, sweep] = state->next_connection_place();
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
        socket.non_blocking(true, ignored);  // writes are tried inline first (sync_io.hpp)
        auto conn = std::make_shared<ServerConnection>(state, std::move(socket), std::move(sweep));
        {
            std::lock_guard lock(state->mu);
            conn->id = ++state->next_id;
            state->connections.emplace(conn->id, conn);
            state->active.fetch_add(1);
        }
        if (state->stopping.load()) conn->stopping = true;
        // The slot is taken before conn is moved into the coroutine (argument order).
        const asio::cancellation_slot slot = conn->handler_cancel.slot();
        asio::co_spawn(executor, run_connection_tracked(std::move(conn)),
                       asio::bind_cancellation_slot(slot, LogCompletion{"connection"}));
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

void HttpServer::set_head_check(HeadCheck check) { state_->head_check = std::move(check); }

void HttpServer::start() {
    asio::co_spawn(state_->acceptor.get_executor(), accept_loop(state_),
                   LogCompletion{"accept loop"});
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
    asio::post(state_->acceptor.get_executor(), [s = state_] {
        boost::system::error_code ignored;
        s->acceptor.close(ignored);
    });
    for (auto& conn : snapshot(*state_)) {
        auto ex = conn->socket.get_executor();
        asio::post(ex, [c = std::move(conn)] { c->begin_stop(); });
    }
    asio::co_spawn(state_->ioc, cancel_after_grace(state_, grace), LogCompletion{"shutdown"});
}

}  // namespace tokenradar::net
