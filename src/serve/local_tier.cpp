#include "local_tier.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/thread_name.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tokenradar::serve {
namespace {

namespace asio = boost::asio;

// Runs `work` on `pool`'s thread and completes with its result on the awaiting coroutine's
// executor. The coroutine itself never leaves that executor: only `work` runs on the pool
// (a coroutine moved to the pool would race with a cancellation emitted on the I/O thread).
template <typename T, typename Work>
net::asio::awaitable<T> run_on(asio::thread_pool& pool, Work work) {
    return asio::async_initiate<decltype(asio::use_awaitable), void(T)>(
        [&pool](auto handler, Work w) {
            asio::post(pool, [handler = std::move(handler), w = std::move(w)]() mutable {
                T result = w();
                const auto ex = asio::get_associated_executor(handler);
                asio::post(ex,
                           [handler = std::move(handler), result = std::move(result)]() mutable {
                               std::move(handler)(std::move(result));
                           });
            });
        },
        asio::use_awaitable, std::move(work));
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
    using Got = Result<std::optional<std::string>>;
    auto read = [this, key = std::move(key)]() -> Got {
        Got got = file_->get(key, wall_now_us());
        failing_.store(!got, std::memory_order_relaxed);
        return got;
    };
    auto op = run_on<Got>(pool_, std::move(read));  // not in the co_await: GCC 12
    co_return co_await std::move(op);
}

net::asio::awaitable<Result<void>> LocalTier::set(std::string key, std::string bytes,
                                                  std::chrono::milliseconds ttl) {
    if (closed_.load(std::memory_order_relaxed)) co_return closed();
    if (pending_writes_.fetch_add(1, std::memory_order_relaxed) >= kMaxPendingWrites) {
        pending_writes_.fetch_sub(1, std::memory_order_relaxed);
        dropped_writes_.fetch_add(1, std::memory_order_relaxed);
        co_return Error(Errc::overloaded, "the shared tier (local file) is behind: write dropped");
    }
    const std::int64_t ttl_us = std::chrono::duration_cast<std::chrono::microseconds>(ttl).count();
    auto write = [this, key = std::move(key), bytes = std::move(bytes), ttl_us]() -> Result<void> {
        const std::int64_t now_us = wall_now_us();
        auto stored = file_->put(key, bytes, now_us + ttl_us, now_us);
        failing_.store(!stored, std::memory_order_relaxed);
        pending_writes_.fetch_sub(1, std::memory_order_relaxed);
        if (!stored) return stored.error();
        return {};
    };
    auto op = run_on<Result<void>>(pool_, std::move(write));
    co_return co_await std::move(op);
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
