#include "local_tier.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/thread_name.hpp>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tokenradar::serve {
namespace {

namespace asio = boost::asio;

// Resumes the awaiting coroutine on `pool`'s thread (bound to the pool, the completion is
// dispatched there rather than to the coroutine's own executor).
auto onto(asio::thread_pool& pool) {
    return asio::post(asio::bind_executor(pool.get_executor(), asio::use_awaitable));
}

Error closed() { return Error(Errc::cancelled, "the shared tier (local file) is closed"); }

}  // namespace

Result<std::shared_ptr<LocalTier>> LocalTier::open(const std::string& path,
                                                   std::uint64_t max_bytes) {
    store::CacheFileOptions options;
    options.max_bytes = max_bytes;
    auto file = store::CacheFile::open(path, options);
    if (!file) return file.error();
    return std::shared_ptr<LocalTier>(new LocalTier(std::move(*file)));
}

LocalTier::LocalTier(std::unique_ptr<store::CacheFile> file) : file_(std::move(file)) {
    asio::post(pool_, [] { name_this_thread("tr-cache-file"); });
}

LocalTier::~LocalTier() {
    closed_.store(true, std::memory_order_relaxed);
    pool_.join();  // the queued writes finish; then file_ closes
}

net::asio::awaitable<Result<std::optional<std::string>>> LocalTier::get(std::string key) {
    if (closed_.load(std::memory_order_relaxed)) co_return closed();
    const auto caller = co_await asio::this_coro::executor;
    co_await onto(pool_);
    Result<std::optional<std::string>> got = file_->get(key, wall_now_us());
    failing_.store(!got, std::memory_order_relaxed);
    co_await asio::post(caller, asio::use_awaitable);
    co_return got;
}

net::asio::awaitable<Result<void>> LocalTier::set(std::string key, std::string bytes,
                                                  std::chrono::milliseconds ttl) {
    if (closed_.load(std::memory_order_relaxed)) co_return closed();
    if (pending_writes_.fetch_add(1, std::memory_order_relaxed) >= kMaxPendingWrites) {
        pending_writes_.fetch_sub(1, std::memory_order_relaxed);
        dropped_writes_.fetch_add(1, std::memory_order_relaxed);
        co_return Error(Errc::overloaded, "the shared tier (local file) is behind: write dropped");
    }
    const auto caller = co_await asio::this_coro::executor;
    co_await onto(pool_);
    const std::int64_t now_us = wall_now_us();
    const std::int64_t ttl_us = std::chrono::duration_cast<std::chrono::microseconds>(ttl).count();
    auto stored = file_->put(key, bytes, now_us + ttl_us, now_us);
    failing_.store(!stored, std::memory_order_relaxed);
    pending_writes_.fetch_sub(1, std::memory_order_relaxed);
    co_await asio::post(caller, asio::use_awaitable);
    if (!stored) co_return stored.error();
    co_return Result<void>{};
}

bool LocalTier::up() const {
    return !closed_.load(std::memory_order_relaxed) && !failing_.load(std::memory_order_relaxed);
}

void LocalTier::close() { closed_.store(true, std::memory_order_relaxed); }

LocalTier::Counters LocalTier::counters() const noexcept {
    return {dropped_writes_.load(std::memory_order_relaxed),
            pending_writes_.load(std::memory_order_relaxed)};
}

}  // namespace tokenradar::serve
