#pragma once
// Redis client for the gateway's shared cache tier: one pipelined TCP connection to a
// `redis://` URL (redis_protocol.hpp), opened on first use, AUTH and SELECT on connect.
// Commands from many coroutines share it: they are written in call order (one write for
// those issued while earlier ones await their replies) and replies are matched FIFO.
//
// Executor: one client per io_context thread or strand, like HttpClient. The client, and
// every coroutine calling it, must run on the executor given to the constructor; only
// stats() may be called from any thread.
// What suspends: get(), set(), del(), ping(), command(): until the reply, a timeout, or
// the connection's failure. A call that has to open the connection waits for that first
// (connect_timeout), then command_timeout. While connected, a read is always pending on the
// socket (a server that restarts is noticed at once): io_context::run() does not return
// while a client is connected; destroy it first.
// Failure: errors are values, never exceptions. A call fails within its timeouts whatever
// the server does (dead, hung, garbage). After a connection fails the client does not
// reconnect for a backoff (backoff_initial, doubling to backoff_max; reset by the next
// reply); calls in that time fail at once with Errc::connection_error without a syscall.
// The first call after it reconnects. An idle connection the server closed is reopened by
// the next call without a backoff. A Redis error reply to get/set/del/ping (OOM, NOAUTH,
// WRONGTYPE...) is Errc::upstream_http_error with its text; AUTH refused is unauthorized.
// Cancellation: terminal or partial cancellation of the awaiting coroutine completes that
// call with Errc::cancelled at once. Its command may already have been sent: the reply is
// read and dropped, and the connection stays up for the other callers.
// Messages name the server as "redis host:port" and never contain the password.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/redis_protocol.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::net {

struct RedisOptions {
    std::chrono::milliseconds connect_timeout{100};  // TCP connect + AUTH/SELECT replies
    std::chrono::milliseconds command_timeout{50};   // command issued (connected) -> reply
    std::chrono::milliseconds backoff_initial{1'000};
    std::chrono::milliseconds backoff_max{30'000};
    std::size_t max_pending = 1024;  // commands awaiting replies; more fail at once
    RedisReaderLimits limits;        // reply size (16 MiB) and array length
};

// Counters for the gateway's metrics; a snapshot, readable from any thread.
struct RedisStats {
    std::uint64_t commands = 0;          // sent to the server
    std::uint64_t errors = 0;            // calls that failed (not Redis error replies)
    std::uint64_t timeouts = 0;          // connections closed by connect or command timeouts
    std::uint64_t connects = 0;          // connections established (AUTH/SELECT done)
    std::uint64_t reconnects = 0;        // of which after the first
    std::uint64_t connect_failures = 0;  // attempts that failed
    bool up = false;                     // a connection is established now
};

namespace detail {
struct RedisState;
}  // namespace detail

class RedisClient {
  public:
    // No I/O here: the connection opens on the first call.
    RedisClient(asio::any_io_executor ex, RedisUrl url, RedisOptions options = {});
    // Closes the connection; calls still waiting complete with Errc::cancelled.
    ~RedisClient();
    RedisClient(const RedisClient&) = delete;
    RedisClient& operator=(const RedisClient&) = delete;

    // GET: the value, or nullopt when the key does not exist.
    asio::awaitable<Result<std::optional<std::string>>> get(std::string key);
    // SET key value PX ttl (NX when only_if_absent): true when stored, false when NX found
    // the key. ttl must be positive.
    asio::awaitable<Result<bool>> set(std::string key, std::string value,
                                      std::chrono::milliseconds ttl, bool only_if_absent = false);
    // DEL: how many keys were removed (0 or 1).
    asio::awaitable<Result<std::int64_t>> del(std::string key);
    // PING: the round trip, e.g. for a readiness check.
    asio::awaitable<Result<void>> ping();
    // Any command; an error reply is returned as a reply of Type::error, not as an Error.
    asio::awaitable<Result<RedisReply>> command(std::vector<std::string> argv);

    RedisStats stats() const;
    const RedisUrl& url() const;

  private:
    // Connects if needed, queues the command and waits for its reply. `argv` must outlive
    // the call; `what` is a literal naming the command in messages.
    asio::awaitable<Result<RedisReply>> call(std::span<const std::string_view> argv,
                                             std::string_view what);

    std::shared_ptr<detail::RedisState> state_;
};

}  // namespace tokenradar::net
