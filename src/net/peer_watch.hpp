#pragma once
// Private to net: the server's peer watch. While a handler runs (e.g. waits for an upstream's
// first token), a client that closes or errors closes the connection, which cancels the
// handler. Handlers that run past 10-20 ms get a wait for readability on their socket
// (watch_peer); PeerWatchSweep decides which, so quick handlers never pay for the wait.
//
// Threads: watch_peer, SweptHandler and the watch's callback run on the connection's executor
// (its strand or its worker); PeerWatchSweep's timer on its own (below).

#include <tokenradar/net/asio.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tokenradar::net::detail {

class ServerConnection;

// Watches `conn`'s running handler: a wait for readability, then a MSG_PEEK that tells the
// peer's close (which closes the connection) from a pipelined request. Does nothing while a
// wait of this connection is pending. Runs on the connection's executor; does not suspend.
void watch_peer(const std::shared_ptr<ServerConnection>& conn);

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
    explicit PeerWatchSweep(const asio::any_io_executor& ex) : timer_(ex) {}

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

// The running handler of a connection, in the peer watch sweep for as long as it runs (a
// frame local: leaves even when the coroutine is destroyed mid-handler).
class SweptHandler {
  public:
    explicit SweptHandler(const std::shared_ptr<ServerConnection>& conn);
    ~SweptHandler();
    SweptHandler(const SweptHandler&) = delete;
    SweptHandler& operator=(const SweptHandler&) = delete;

  private:
    ServerConnection& conn_;
    PeerWatchSweep& sweep_;
};

}  // namespace tokenradar::net::detail
