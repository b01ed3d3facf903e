#include "shared_buckets.hpp"

#include <tokenradar/net/log_completion.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <vector>

namespace tokenradar::gateway {
namespace {

// KEYS[1]: the requests bucket, KEYS[2]: the tokens bucket (hashes: level `l`, time `t` in
// ms). ARGV: rpm, tpm (0 = none), tokens to debit (0: take a request). A bucket refills
// rate/60000 per ms up to its rate and expires once it would be full again (a missing bucket is
// full). Taking needs one request and one token (the tokens bucket may be in debt: tokens are
// debited after the answer). Returns {admitted, retry_after_ms, requests_left, tokens_left}.
constexpr std::string_view kScript = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function level(key, cap)
  local v = redis.call('HMGET', key, 'l', 't')
  local l = tonumber(v[1])
  if l == nil then return cap end
  l = l + math.max(0, now - tonumber(v[2])) * cap / 60000
  if l > cap then l = cap end
  return l
end
local function save(key, l, cap)
  redis.call('HSET', key, 'l', tostring(l), 't', now)
  redis.call('PEXPIRE', key, math.ceil((cap - l) * 60000 / cap) + 1000)
end
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local debit = tonumber(ARGV[3])
if debit > 0 then
  if tpm > 0 then save(KEYS[2], level(KEYS[2], tpm) - debit, tpm) end
  return {1, 0, 0, 0}
end
local rl = 0
local tl = 0
local wait = 0
if rpm > 0 then
  rl = level(KEYS[1], rpm)
  if rl < 1 then wait = math.ceil((1 - rl) * 60000 / rpm) end
end
if tpm > 0 then
  tl = level(KEYS[2], tpm)
  if tl < 1 then wait = math.max(wait, math.ceil((1 - tl) * 60000 / tpm)) end
end
if wait > 0 then return {0, wait, math.floor(rl), math.floor(tl)} end
if rpm > 0 then
  rl = rl - 1
  save(KEYS[1], rl, rpm)
end
return {1, 0, math.floor(rl), math.floor(tl)}
)lua";

std::string script_sha1() {
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1(reinterpret_cast<const unsigned char*>(kScript.data()), kScript.size(), digest.data());
    std::string hex;
    for (const unsigned char b : digest) hex += fmt::format("{:02x}", b);
    return hex;
}

const std::string& sha1() {
    static const std::string sha = script_sha1();
    return sha;
}

// Runs the script for key `id` (EVALSHA; EVAL when the server does not have it yet: after a
// restart, or on a fresh server). On the client's executor.
net::asio::awaitable<Result<net::RedisReply>> run_script(std::shared_ptr<net::RedisClient> client,
                                                         std::string id, std::int64_t rpm,
                                                         std::int64_t tpm, std::int64_t debit) {
    const std::string prefix = "tokenradar:limits:" + id;
    std::vector<std::string> argv{"EVALSHA",
                                  sha1(),
                                  "2",
                                  prefix + ":r",
                                  prefix + ":t",
                                  std::to_string(rpm),
                                  std::to_string(tpm),
                                  std::to_string(debit)};
    auto reply = co_await client->command(argv);
    if (reply && reply->type == net::RedisReply::Type::error &&
        reply->str.starts_with("NOSCRIPT")) {
        argv[0] = "EVAL";
        argv[1] = std::string(kScript);
        reply = co_await client->command(std::move(argv));
    }
    if (!reply) co_return reply.error();
    if (reply->type == net::RedisReply::Type::error) {
        co_return Error(Errc::upstream_http_error, "redis: limits script: " + reply->str);
    }
    co_return std::move(*reply);
}

net::asio::awaitable<void> debit_task(std::shared_ptr<net::RedisClient> client, std::string id,
                                      std::int64_t tpm, std::int64_t tokens,
                                      std::shared_ptr<std::atomic<std::uint64_t>> errors) {
    auto reply = co_await run_script(std::move(client), std::move(id), 0, tpm, tokens);
    if (!reply) errors->fetch_add(1, std::memory_order_relaxed);
}

Result<SharedVerdict> verdict_of(const net::RedisReply& reply) {
    const auto& e = reply.elements;
    const bool ok = reply.type == net::RedisReply::Type::array && e.size() == 4 &&
                    std::all_of(e.begin(), e.end(), [](const auto& x) {
                        return x && x->type == net::RedisReply::Type::integer;
                    });
    if (!ok) return Error(Errc::protocol_error, "redis: limits script: unexpected reply");
    SharedVerdict v;
    v.admitted = e[0]->integer == 1;
    v.retry_after_ms = e[1]->integer;
    v.requests_left = e[2]->integer;
    v.tokens_left = e[3]->integer;
    return v;
}

}  // namespace

SharedBuckets::SharedBuckets(const net::asio::any_io_executor& ex, net::RedisUrl url,
                             net::RedisOptions options)
    : executor_(ex), authority_(url.authority()) {
    client_.store(std::make_shared<net::RedisClient>(ex, std::move(url), options));
}

net::asio::awaitable<Result<SharedVerdict>> SharedBuckets::take(std::string id, std::int64_t rpm,
                                                                std::int64_t tpm) {
    std::shared_ptr<net::RedisClient> client = client_.load();  // close() may drop it
    if (!client) co_return Error(Errc::cancelled, "limits: redis closed");
    // Named steps: GCC 12 miscompiled `co_return co_await` on a by-value awaitable.
    const net::asio::any_io_executor here = co_await net::asio::this_coro::executor;
    Result<net::RedisReply> reply = Error(Errc::internal, "limits: not run");
    if (here == executor_) {
        reply = co_await run_script(std::move(client), std::move(id), rpm, tpm, 0);
    } else {
        auto call = run_script(std::move(client), std::move(id), rpm, tpm, 0);
        reply = co_await net::asio::co_spawn(executor_, std::move(call), net::asio::use_awaitable);
    }
    if (!reply) co_return reply.error();
    co_return verdict_of(*reply);
}

void SharedBuckets::debit(std::string id, std::int64_t tpm, std::int64_t tokens) {
    std::shared_ptr<net::RedisClient> client = client_.load();
    if (!client || tpm <= 0 || tokens <= 0) return;
    net::asio::co_spawn(executor_,
                        debit_task(std::move(client), std::move(id), tpm, tokens, debit_errors_),
                        net::LogCompletion{"limits: redis debit"});
}

bool SharedBuckets::up() const {
    const auto client = client_.load();
    return client && client->stats().up;
}

void SharedBuckets::close() { client_.store(nullptr); }

}  // namespace tokenradar::gateway
