#pragma once
// Private to serve: the response cache's shared tier in a local file (`[cache] local`), for a
// gateway without Redis. A store::CacheFile on a thread of its own ("tr-cache-file"): get()
// and set() hand their disk work there, so the gateway's I/O thread never waits on disk.
//
// Executor: get() and set() are called from the gateway's I/O executor; their disk work runs
// on the tier's thread and they complete on the caller's executor (the coroutine never runs
// on the tier's thread). up(), kind(), counters() from any thread.
// Cancellation: none; a get() gives up after kReadTimeout (a timeout error: the cache goes on
// from memory) and its read's result is dropped when it comes; a set() completes once the
// disk has answered.
// Bounds: at most kMaxPendingWrites set() calls, holding at most kMaxPendingBytes, wait for
// the thread; beyond, a write is dropped (an error, counted) and the answer stays in memory
// only. Reads share the thread and wait behind the writes: with over kMaxWritesAheadOfARead
// writes queued, a get() is a miss at once (counted). An exception on the tier's thread is
// the call's error. close() takes no new calls; those already queued finish. The destructor
// waits for them and closes the file.

#include <tokenradar/gateway/shared_tier.hpp>
#include <tokenradar/store/cache_file.hpp>

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tokenradar::serve {

class LocalTier final : public gateway::SharedTier {
  public:
    static constexpr std::size_t kMaxPendingWrites = 1024;
    static constexpr std::size_t kMaxPendingBytes = 64U * 1024 * 1024;
    static constexpr std::size_t kMaxWritesAheadOfARead = 64;
    static constexpr std::chrono::milliseconds kReadTimeout{50};

    struct Counters {
        std::uint64_t dropped_writes = 0;  // over kMaxPendingWrites or kMaxPendingBytes
        std::size_t pending_writes = 0;
        std::uint64_t skipped_reads = 0;  // misses at once: too many writes queued
    };

    // Opens (or creates) `path`; the error names it (store::CacheFile::open).
    static Result<std::shared_ptr<LocalTier>> open(const std::string& path,
                                                   std::uint64_t max_bytes);
    ~LocalTier() override;

    net::asio::awaitable<Result<std::optional<std::string>>> get(std::string key) override;
    net::asio::awaitable<Result<void>> set(std::string key, std::string bytes,
                                           std::chrono::milliseconds ttl) override;
    [[nodiscard]] bool up() const override;
    [[nodiscard]] std::string_view kind() const override { return "local"; }
    void close() override;

    [[nodiscard]] Counters counters() const noexcept;

  private:
    explicit LocalTier(std::unique_ptr<store::CacheFile> file);

    std::unique_ptr<store::CacheFile> file_;  // used on pool_'s thread only
    std::atomic<bool> closed_{false};
    std::atomic<bool> failing_{false};  // the last call on the file failed
    std::atomic<std::size_t> pending_writes_{0};
    std::atomic<std::size_t> pending_bytes_{0};
    std::atomic<std::uint64_t> dropped_writes_{0};
    std::atomic<std::uint64_t> skipped_reads_{0};
    // Declared last: joined first, while the file is still open.
    boost::asio::thread_pool pool_{1};
};

}  // namespace tokenradar::serve
