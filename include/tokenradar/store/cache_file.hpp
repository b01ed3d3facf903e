#pragma once
// The response cache's shared tier on local disk (L2 when there is no Redis): one SQLite file
// of key -> bytes, each with the time it was stored and its expiry, bounded in value bytes.
// A separate file from the measurement store, so that cache churn (large blobs, deletes)
// never slows the measurement writer or grows its WAL.
//
// Threads: one SQLite connection, used by one thread at a time; every call blocks on disk
// (serve runs it on a thread of its own, never the gateway's I/O thread). Errors are values;
// each message names the file.

#include <tokenradar/core/error.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;

namespace tokenradar::store {

class OwnerLock;

struct CacheFileOptions {
    std::uint64_t max_bytes = std::uint64_t{1} << 30;  // total value bytes kept
    std::chrono::milliseconds busy_timeout{1'000};     // a checkpoint or a backup holding a lock
    // put() sweeps expired rows at most this often.
    std::chrono::microseconds sweep_interval = std::chrono::minutes(1);
};

struct CacheFileStats {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;      // value bytes held (expired rows not yet swept included)
    std::uint64_t evictions = 0;  // rows deleted for room since open
    std::uint64_t expired = 0;    // rows swept since open
};

class CacheFile {
  public:
    // Opens or creates `path`. Refused, with a message naming the file, when it cannot be
    // opened or created, when another process (or another CacheFile or store here) has it open
    // (flock on "<path>.lock", as the store's OwnerLock), or when it is a SQLite file of
    // something else (the measurement store, say) or not a SQLite file at all.
    static Result<std::unique_ptr<CacheFile>> open(const std::string& path,
                                                   const CacheFileOptions& options = {});
    ~CacheFile();
    CacheFile(const CacheFile&) = delete;
    CacheFile& operator=(const CacheFile&) = delete;

    // The bytes under `key`; nullopt when absent or expired at `now_us`.
    Result<std::optional<std::string>> get(std::string_view key, std::int64_t now_us);
    // Stores (or replaces) `key` until `expires_at_us`, in one transaction with the deletions
    // that keep the total under max_bytes (the soonest to expire first, then the oldest).
    // False when `bytes` alone is over max_bytes: nothing stored, and an older entry under
    // `key` deleted (it must not outlive a newer answer). Never evicts `key` itself. Sweeps
    // expired rows first
    // when the last sweep is over sweep_interval old.
    Result<bool> put(std::string_view key, std::string_view bytes, std::int64_t expires_at_us,
                     std::int64_t now_us);
    // Deletes the rows expired at `now_us`; how many.
    Result<std::uint64_t> remove_expired(std::int64_t now_us);

    [[nodiscard]] CacheFileStats stats() const noexcept;
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

  private:
    struct Statements;
    CacheFile(std::string path, sqlite3* db, const CacheFileOptions& options,
              std::unique_ptr<OwnerLock> owner);
    Result<void> erase(std::string_view key);

    std::string path_;
    sqlite3* db_;
    CacheFileOptions options_;
    std::unique_ptr<OwnerLock> owner_;
    std::unique_ptr<Statements> statements_;
    CacheFileStats stats_;
    std::int64_t next_sweep_us_ = 0;
};

}  // namespace tokenradar::store
