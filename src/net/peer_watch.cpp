// The server's peer watch (peer_watch.hpp): a callback per watched handler and one sweep per
// worker that decides which handlers are watched.

#include "peer_watch.hpp"

#include "server_connection.hpp"
#include "sync_io.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>

namespace tokenradar::net::detail {

namespace {

// A handler gets a peer watch once it has run for one to two of these (PeerWatchSweep).
constexpr std::chrono::milliseconds kPeerWatchDelay{10};

}  // namespace

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
            if (!peek_ec && n > 0) return;  // a pipelined request: the peer is there
            if (would_block(peek_ec)) {     // readiness without bytes: watch on
                watch_peer(conn);
                return;
            }
        }
        conn->close();  // orderly close (eof) or a socket error
    });
}

SweptHandler::SweptHandler(const std::shared_ptr<ServerConnection>& conn)
    : conn_(*conn), sweep_(*conn->peer_watch) {
    if (sweep_.enter(conn_)) watch_peer(conn);
}

SweptHandler::~SweptHandler() { sweep_.leave(conn_); }

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

// `due` is taken by value: its connections are moved into the posted handlers.
void PeerWatchSweep::start_watches(
    // NOLINTNEXTLINE(performance-unnecessary-value-param)
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

}  // namespace tokenradar::net::detail
