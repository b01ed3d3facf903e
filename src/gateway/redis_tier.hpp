#pragma once
// Private to the gateway: the shared tier over Redis (`[cache] redis`), one
// net::RedisClient on the gateway's I/O executor (its rules: redis_client.hpp).

#include <tokenradar/gateway/shared_tier.hpp>
#include <tokenradar/net/redis_client.hpp>

#include <memory>

namespace tokenradar::gateway {

class RedisTier final : public SharedTier {
  public:
    RedisTier(const net::asio::any_io_executor& ex, net::RedisUrl url, net::RedisOptions options);

    net::asio::awaitable<Result<std::optional<std::string>>> get(std::string key) override;
    net::asio::awaitable<Result<void>> set(std::string key, std::string bytes,
                                           std::chrono::milliseconds ttl) override;
    [[nodiscard]] bool up() const override;
    [[nodiscard]] std::string_view kind() const override { return "redis"; }
    // Drops the client: its connection closes once the calls in flight (each holds the
    // client) are done, so the io_context's run() can return.
    void close() override;

  private:
    std::shared_ptr<net::RedisClient> client_;
};

}  // namespace tokenradar::gateway
