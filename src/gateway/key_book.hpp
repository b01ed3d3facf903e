#pragma once
// Private to the gateway: virtual keys at request time (README "Keys, limits and budgets").
// The registry's active keys are kept in memory, looked up by SHA-256 digest (one hash-map
// lookup per request), and re-read every `[auth] refresh` on the book's thread (`tr-keys`),
// which also writes this node's usage to the registry and runs the admin API's calls. Limits
// and budgets are checked once the request's model is known (admit) and its tokens counted
// when it is over (settle).
//
// Threads: find(), admit(), settle(), render() from any I/O thread; find() uses the calling
// thread's view of the table (`thread`: Gateway::Impl::io_thread()), so two threads must never
// pass the same index at once. The admin calls suspend until the book's thread has done them
// and complete on the caller's executor. admit() suspends only for the shared buckets in
// Redis (on the first I/O executor, reached with co_spawn from the others); a Redis error or
// timeout falls back to this node's buckets at once (tokenradar_limits_redis_fallback_total).
// Cancellation: none needed: every wait is bounded by the Redis client's timeouts.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/keys/key_registry.hpp>
#include <tokenradar/keys/token_bucket.hpp>
#include <tokenradar/net/asio.hpp>
#include <tokenradar/net/header_list.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::gateway {

// Why a key's request was refused (tokenradar_key_rejected_total{reason}).
enum class KeyRefusal : std::uint8_t { model, requests, tokens, budget };
inline constexpr std::array<std::string_view, 4> kKeyRefusalNames = {"model", "requests", "tokens",
                                                                     "budget"};

// A key's counters and buckets, by id: they outlive rotations and table swaps, and are freed
// only with the book.
struct KeyState {
    std::atomic<std::size_t> in_flight{0};
    std::mutex mu;  // the buckets
    keys::TokenBucket requests;
    keys::TokenBucket tokens;
    // This period's usage: every node's as the registry said at the last read, and this node's
    // since (written to the registry at the next read).
    std::atomic<std::int64_t> period_start_us{0};
    std::atomic<std::int64_t> period_end_us{0};
    std::atomic<std::int64_t> synced_requests{0};
    std::atomic<std::int64_t> synced_tokens{0};
    std::atomic<std::int64_t> pending_requests{0};
    std::atomic<std::int64_t> pending_tokens{0};
    // This node's, since start (/metrics).
    std::atomic<std::uint64_t> requests_total{0};
    std::atomic<std::uint64_t> tokens_total{0};
    std::array<std::atomic<std::uint64_t>, kKeyRefusalNames.size()> refused{};
};

// One table's view of a key: immutable; `state` is the id's long-lived one.
struct KeyEntry {
    keys::VirtualKey key;
    KeyState* state = nullptr;
    std::string tenant;  // "key:<id>": the response cache's scope (the same across rotations)
};
using KeyRef = std::shared_ptr<const KeyEntry>;

// A refused request: the status and OpenAI-style error, and headers (retry-after...).
struct Refusal {
    Errc code = Errc::rate_limited;
    std::string message;
    std::string param;
    std::string type_code;  // the error's `code`
    net::HeaderList headers;
};

// What the admin API shows once: a new or rotated key.
struct IssuedKey {
    keys::VirtualKey key;
    std::string secret;
};

// A key as the admin API shows it (no digest, no secret).
std::string key_object_json(const keys::VirtualKey& key);

class KeyBook {
  public:
    // Reads the registry once before returning (a failure is logged: the book starts empty
    // and keeps trying). `io_executors`: the gateway's; the first runs the Redis client.
    KeyBook(std::shared_ptr<keys::KeyRegistry> registry, const GatewayConfig& config,
            const std::vector<net::asio::any_io_executor>& io_executors);
    ~KeyBook();
    KeyBook(const KeyBook&) = delete;
    KeyBook& operator=(const KeyBook&) = delete;

    // The active key with this digest (lowercase hex), or null. Does not suspend.
    [[nodiscard]] KeyRef find(std::string_view sha256, std::size_t thread) const;

    // Whether `key` may send this request for `model` now: the model allowed, the budget not
    // spent, a request and a token in its buckets. Takes the request from the buckets when
    // admitted; x-ratelimit-* headers are appended to `headers` for keys with a rate.
    net::asio::awaitable<std::optional<Refusal>> admit(KeyRef key, std::string model,
                                                       net::HeaderList& headers);
    // The request's tokens (prompt + output of its attempts), after its answer.
    void settle(const KeyEntry& key, std::int64_t tokens);

    // The admin API's calls (suspend until the registry has answered).
    net::asio::awaitable<Result<IssuedKey>> create(keys::KeySpec spec, std::string actor);
    net::asio::awaitable<Result<IssuedKey>> rotate(std::string id, std::string actor);
    // The revoked key; Errc::not_found when no active key has the id.
    net::asio::awaitable<Result<keys::VirtualKey>> revoke(std::string id, std::string actor);
    // GET /admin/v1/keys and /admin/v1/audit bodies.
    net::asio::awaitable<Result<std::string>> list_json();
    net::asio::awaitable<Result<std::string>> audit_json(std::size_t limit);

    void render(PrometheusText& out) const;
    // Drops the Redis connection (Gateway::close_background): on the first I/O executor.
    void close();

    struct Shared;  // the Redis buckets (key_book.cpp)

  private:
    struct Table;
    void sync();  // on the book's thread
    [[nodiscard]] std::shared_ptr<const Table> table() const;
    template <typename T, typename Work>
    net::asio::awaitable<T> on_book_thread(Work work);
    Result<void> check_spec(const keys::KeySpec& spec) const;

    std::shared_ptr<keys::KeyRegistry> registry_;
    const GatewayConfig& config_;
    std::unique_ptr<Shared> shared_;
    std::atomic<std::uint64_t> registry_errors_{0};
    std::atomic<bool> registry_failing_{false};

    mutable std::mutex table_mu_;
    std::shared_ptr<const Table> table_;
    std::atomic<std::uint64_t> version_{1};
    struct alignas(64) View {
        std::uint64_t version = 0;
        std::shared_ptr<const Table> table;
    };
    mutable std::vector<View> views_;  // one per I/O thread, each used by its thread only

    struct Impl;  // the book's thread, its timer and the states by id
    std::unique_ptr<Impl> impl_;
};

}  // namespace tokenradar::gateway
