#include "redis_tier.hpp"

namespace tokenradar::gateway {
namespace {

Error closed() { return Error(Errc::cancelled, "the shared tier (redis) is closed"); }

}  // namespace

RedisTier::RedisTier(const net::asio::any_io_executor& ex, net::RedisUrl url,
                     net::RedisOptions options)
    : client_(std::make_shared<net::RedisClient>(ex, std::move(url), options)) {}

net::asio::awaitable<Result<std::optional<std::string>>> RedisTier::get(std::string key) {
    const std::shared_ptr<net::RedisClient> client = client_;  // close() may drop client_
    if (!client) co_return closed();
    co_return co_await client->get(std::move(key));
}

net::asio::awaitable<Result<void>> RedisTier::set(std::string key, std::string bytes,
                                                  std::chrono::milliseconds ttl) {
    const std::shared_ptr<net::RedisClient> client = client_;
    if (!client) co_return closed();
    auto stored = co_await client->set(std::move(key), std::move(bytes), ttl);
    if (!stored) co_return stored.error();
    co_return Result<void>{};
}

bool RedisTier::up() const { return client_ && client_->stats().up; }

void RedisTier::close() { client_.reset(); }

}  // namespace tokenradar::gateway
