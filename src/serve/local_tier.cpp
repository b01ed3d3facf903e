#include "local_tier.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/thread_name.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <optional>

namespace tokenradar::serve {
namespace {

namespace asio = boost::asio;

// Runs `work` on `pool`'s thread and completes with its result on the awaiting coroutine's
// executor, or with `late` once `deadline` has passed, whichever comes first (the work's
// result is then dropped when it arrives). The coroutine itself never leaves its executor:
// only `work` runs on the pool (a coroutine moved there would race with a cancellation
// emitted on the I/O thread). The pool job keeps that executor's io_context from running
// out of work until the result is delivered, so it never posts to a finished one.
template <typename T, typename Work>
net::asio::awaitable<T> run_on(asio::thread_pool& pool, Work work,
                               std::optional<std::chrono::milliseconds> deadline, T late) {
    return asio::async_initiate<decltype(asio::use_awaitable), void(T)>(
        [&pool, deadline](auto handler, Work w, T on_late) {
            using Handler = decltype(handler);
            // Both completions run on the handler's executor; `taken` lets the first one
            // through.
            struct Race {
                explicit Race(Handler h)
                    : handler(std::move(h)), timer(asio::get_associated_executor(*handler)) {}
                std::optional<Handler> handler;
                asio::steady_timer timer;
                bool taken = false;
                void complete(T result) {
                    if (taken) return;
                    taken = true;
                    timer.cancel();
                    Handler h = std::move(*handler);
                    handler.reset();
                    std::move(h)(std::move(result));
                }
            };
            auto race = std::make_shared<Race>(std::move(handler));
            const auto ex = race->timer.get_executor();
            if (deadline) {
                race->timer.expires_after(*deadline);
                race->timer.async_wait([race, on_late = std::move(on_late)](
                                           const boost::system::error_code& ec) mutable {
                    if (!ec) race->complete(std::move(on_late));
                });
            }
            asio::post(pool,
                       [race, ex, guard = asio::make_work_guard(ex), w = std::move(w)]() mutable {
                           std::optional<T> result;
                           try {
                               result.emplace(w());
                           } catch (const std::exception& e) {
                               result.emplace(Error(Errc::internal, e.what()));
                           }
                           asio::post(ex, [race, result = std::move(*result)]() mutable {
                               race->complete(std::move(result));
                           });
                       });
        },
        asio::use_awaitable, std::move(work), std::move(late));
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
    using Got = Result<std::optional<std::string>>;
    if (closed_.load(std::memory_order_relaxed)) co_return closed();
    // Reads wait behind the queued writes on the one thread: with a backlog, a miss now is
    // cheaper than a read later.
    if (pending_writes_.load(std::memory_order_relaxed) > kMaxWritesAheadOfARead) {
        skipped_reads_.fetch_add(1, std::memory_order_relaxed);
        co_return std::optional<std::string>();
    }
    auto read = [this, key = std::move(key)]() -> Got {
        Got got = file_->get(key, wall_now_us());
        failing_.store(!got, std::memory_order_relaxed);
        return got;
    };
    Got late = Error(Errc::timeout_total, "the shared tier (local file) did not answer within " +
                                              std::to_string(kReadTimeout.count()) + " ms");
    auto op = run_on<Got>(pool_, std::move(read), kReadTimeout, std::move(late));  // GCC 12
    co_return co_await std::move(op);
}

net::asio::awaitable<Result<void>> LocalTier::set(std::string key, std::string bytes,
                                                  std::chrono::milliseconds ttl) {
    if (closed_.load(std::memory_order_relaxed)) co_return closed();
    const std::size_t size = key.size() + bytes.size();
    if (pending_writes_.fetch_add(1, std::memory_order_relaxed) >= kMaxPendingWrites ||
        pending_bytes_.fetch_add(size, std::memory_order_relaxed) + size > kMaxPendingBytes) {
        pending_writes_.fetch_sub(1, std::memory_order_relaxed);
        pending_bytes_.fetch_sub(size, std::memory_order_relaxed);
        dropped_writes_.fetch_add(1, std::memory_order_relaxed);
        co_return Error(Errc::overloaded, "the shared tier (local file) is behind: write dropped");
    }
    const std::int64_t ttl_us = std::chrono::duration_cast<std::chrono::microseconds>(ttl).count();
    auto write = [this, key = std::move(key), bytes = std::move(bytes), ttl_us,
                  size]() -> Result<void> {
        const std::int64_t now_us = wall_now_us();
        auto stored = file_->put(key, bytes, now_us + ttl_us, now_us);
        failing_.store(!stored, std::memory_order_relaxed);
        pending_writes_.fetch_sub(1, std::memory_order_relaxed);
        pending_bytes_.fetch_sub(size, std::memory_order_relaxed);
        if (!stored) return stored.error();
        return {};
    };
    auto op = run_on<Result<void>>(pool_, std::move(write), std::nullopt, Result<void>());
    co_return co_await std::move(op);
}

bool LocalTier::up() const {
    return !closed_.load(std::memory_order_relaxed) && !failing_.load(std::memory_order_relaxed);
}

void LocalTier::close() { closed_.store(true, std::memory_order_relaxed); }

LocalTier::Counters LocalTier::counters() const noexcept {
    return {dropped_writes_.load(std::memory_order_relaxed),
            pending_writes_.load(std::memory_order_relaxed),
            skipped_reads_.load(std::memory_order_relaxed)};
}

}  // namespace tokenradar::serve
