#pragma once
// Private to net: one server connection and the state the server's connections share, used by
// the connection loop (http_server.cpp), ResponseWriter (response_writer.cpp) and the peer
// watch (peer_watch.cpp).

#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/net/server_tls.hpp>

#include "lazy_deadline.hpp"
#include "peer_watch.hpp"
#include "sync_io.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tokenradar::net::detail {

using asio::ip::tcp;

struct ServerState {
    ServerState(asio::io_context& io, Handler h, ServerLimits l, std::vector<asio::io_context*> w)
        : ioc(io), handler(std::move(h)), limits(l), workers(std::move(w)) {
        if (workers.empty()) {
            peer_watches.push_back(std::make_shared<PeerWatchSweep>(asio::make_strand(ioc)));
        }
        for (asio::io_context* worker : workers) {
            peer_watches.push_back(std::make_shared<PeerWatchSweep>(worker->get_executor()));
        }
        if (limits.accept_per_worker && !workers.empty()) {
            for (asio::io_context* worker : workers) acceptors.emplace_back(worker->get_executor());
        } else {
            acceptors.emplace_back(asio::make_strand(io));
        }
    }

    // A new connection's executor and peer watch sweep, given the acceptor that took it: its
    // own strand on ioc; the acceptor's own worker when each worker accepts; else the next
    // worker io_context's executor itself. A worker runs on one thread, so nothing of a
    // connection can run concurrently there, and a strand would cost a mutex, a queue and an
    // executor hop on every completion of every operation (e.g. each paced sim chunk).
    std::pair<asio::any_io_executor, std::shared_ptr<PeerWatchSweep>> next_connection_place(
        std::size_t acceptor) {
        if (workers.empty()) return {asio::make_strand(ioc), peer_watches.front()};
        const std::size_t i =
            acceptors.size() == workers.size() ? acceptor : next_worker++ % workers.size();
        return {workers[i]->get_executor(), peer_watches[i]};
    }

    asio::io_context& ioc;
    Handler handler;
    std::shared_ptr<ServerTls> tls;  // set before start(): connections begin with a handshake
    HeadCheck head_check;            // set before start()
    ServerLimits limits;
    std::vector<asio::io_context*> workers;
    // Request body bytes reserved by the connections (ServerLimits::max_body_bytes_in_flight).
    std::atomic<std::size_t> body_bytes_in_flight{0};
    // Only the accept loop (on the acceptor's strand) uses it.
    std::size_t next_worker = 0;
    // One on its own strand (accept loop and close() never race), or one per worker on the
    // worker's executor (ServerLimits::accept_per_worker). Never resized after construction.
    std::vector<tcp::acceptor> acceptors;
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
    // With TLS: the stream over `socket` that reads and writes go through, and the context it
    // was made from (kept: a reload replaces the server's, not this connection's).
    std::shared_ptr<asio::ssl::context> tls_context;
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls;
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
    // Terminal cancellation of the running handler. Shared with the coroutine's completion
    // handler: Asio clears the slot after the frame, and this connection with it, is gone.
    std::shared_ptr<asio::cancellation_signal> handler_cancel =
        std::make_shared<asio::cancellation_signal>();

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
        if (in_handler && !was_gone) handler_cancel->emit(asio::cancellation_type::terminal);
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

// Writes a buffer sequence: inline what the socket takes now (no posted completion), the rest
// asynchronously under the write timeout. Over TLS every write is asynchronous: the stream
// writes OpenSSL's records.
template <class Buffers>
asio::awaitable<boost::system::error_code> write_buffers(ServerConnection& conn,
                                                         const Buffers& buffers) {
    boost::system::error_code ec;
    beast::buffers_suffix<Buffers> rest(buffers);
    if (conn.tls) {
        conn.set_write_deadline();
        auto [e, n] = co_await asio::async_write(*conn.tls, rest, use_nothrow);
        conn.expires_never();
        co_return e;
    }
    if (write_now(conn.socket, rest, ec)) co_return ec;
    conn.set_write_deadline();
    auto [e, n] = co_await asio::async_write(conn.socket, rest, use_nothrow);
    conn.expires_never();
    co_return e;
}

}  // namespace tokenradar::net::detail
