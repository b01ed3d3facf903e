#pragma once
// Private to the gateway: virtual keys' rpm/tpm buckets in Redis (`[limits] redis`), shared by
// every node, so that a key limited to N requests a minute gets N in all, not N per node. One
// Lua script (EVALSHA, loaded by EVAL on NOSCRIPT) refills and takes atomically on the server,
// by the server's clock (TIME): the nodes' clocks do not matter.
//
// Executor: the Redis client lives on the executor given here (the first I/O thread); take()
// may be awaited from any I/O thread and hops there. debit() is spawned there and not awaited.
// Failure: take() returns the Redis client's error (timeout, connection refused, backoff: at
// once without a syscall) for the caller to fall back on its own buckets.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/redis_client.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace tokenradar::gateway {

struct SharedVerdict {
    bool admitted = false;
    std::int64_t retry_after_ms = 0;  // when refused: until a request and a token are there
    std::int64_t requests_left = 0;   // after this request
    std::int64_t tokens_left = 0;
};

class SharedBuckets {
  public:
    SharedBuckets(const net::asio::any_io_executor& ex, net::RedisUrl url,
                  net::RedisOptions options);

    // Takes one request from key `id`'s buckets when both have room (rpm, tpm: 0 = none).
    net::asio::awaitable<Result<SharedVerdict>> take(std::string id, std::int64_t rpm,
                                                     std::int64_t tpm);
    // Debits `tokens` from its tokens bucket, in the background; a failure is counted.
    void debit(std::string id, std::int64_t tpm, std::int64_t tokens);
    [[nodiscard]] std::uint64_t debit_errors() const noexcept {
        return debit_errors_->load(std::memory_order_relaxed);
    }
    [[nodiscard]] bool up() const;
    [[nodiscard]] std::string authority() const { return authority_; }
    // Drops the client: its connection closes once the calls in flight are done.
    void close();

  private:
    net::asio::any_io_executor executor_;
    std::atomic<std::shared_ptr<net::RedisClient>> client_;  // close() drops it
    std::shared_ptr<std::atomic<std::uint64_t>> debit_errors_ =
        std::make_shared<std::atomic<std::uint64_t>>(0);
    std::string authority_;
};

}  // namespace tokenradar::gateway
