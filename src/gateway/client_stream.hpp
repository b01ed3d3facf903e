#pragma once
// The client side of one relayed stream. Two writers share it: the relay loop (upstream
// bytes) and the heartbeat (an SSE comment when the upstream has been silent for a while).
// Both run on the connection's strand; writes go out one at a time.
//
// Lifetime: the ResponseWriter is valid only while the handler runs, so the relay must
// co_await stop_heartbeat() before it returns: after that the heartbeat never touches the
// writer again (its coroutine may still wake once and exit, holding only the shared state).

#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/http_server.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

namespace tokenradar::gateway {

struct ClientStream {
    ClientStream(const net::asio::any_io_executor& ex, net::ResponseWriter& w);

    net::ResponseWriter* writer;
    net::asio::steady_timer heartbeat_timer;
    net::asio::steady_timer write_done;  // signals the relay that a heartbeat write ended
    std::int64_t last_write_ns;
    bool writing = false;
    bool stopped = false;
};

// Sends the response head (200, text/event-stream, `headers`) with `first` in the same write.
// Only before anything else was written (the heartbeat writes nothing before it).
net::asio::awaitable<boost::system::error_code> start_client(ClientStream& stream,
                                                             const net::HeaderList& headers,
                                                             std::string_view first);

// Suspends until `bytes` are written (after any heartbeat on the wire).
net::asio::awaitable<boost::system::error_code> write_client(ClientStream& stream,
                                                             std::string_view bytes);

// Spawns the heartbeat on the current strand; interval 0 = none.
void start_heartbeat(const std::shared_ptr<ClientStream>& stream,
                     std::chrono::milliseconds interval);

// Stops the heartbeat without waiting, on every way out of the relay (normally
// stop_heartbeat() has already run and this does nothing).
class HeartbeatGuard {
  public:
    explicit HeartbeatGuard(ClientStream& s) : s_(s) {}
    ~HeartbeatGuard() {
        s_.stopped = true;
        s_.heartbeat_timer.cancel();
    }
    HeartbeatGuard(const HeartbeatGuard&) = delete;
    HeartbeatGuard& operator=(const HeartbeatGuard&) = delete;

  private:
    ClientStream& s_;
};

// Stops the heartbeat; suspends while one of its writes is on the wire.
net::asio::awaitable<void> stop_heartbeat(ClientStream& stream);

}  // namespace tokenradar::gateway
