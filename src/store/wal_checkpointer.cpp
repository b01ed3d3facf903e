#include "wal_checkpointer.hpp"

#include "sqlite_util.hpp"

#include <tokenradar/core/thread_name.hpp>

#include <spdlog/spdlog.h>

namespace tokenradar::store {

WalCheckpointer::WalCheckpointer(std::string path, std::chrono::milliseconds busy_timeout)
    : path_(std::move(path)), busy_timeout_(busy_timeout) {}

WalCheckpointer::~WalCheckpointer() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

void WalCheckpointer::request() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        requested_ = true;
        if (!thread_.joinable()) {
            thread_ = std::thread([this] {
                name_this_thread("tr-wal");
                run();
            });
        }
    }
    wake_.notify_one();
}

void WalCheckpointer::run() {
    sqlite3* raw = nullptr;
    const int rc =
        sqlite3_open_v2(path_.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
    DbHandle db(raw);
    if (rc != SQLITE_OK) {
        // The writer's own fallback checkpoint (SqliteStore) still bounds the WAL.
        spdlog::warn("{}", sqlite_error(path_, raw, "open the checkpoint connection").message);
        return;
    }
    sqlite3_busy_timeout(db.get(), static_cast<int>(busy_timeout_.count()));
    // A connection opens the WAL at its first read; until then a checkpoint is a no-op that
    // reports "not in WAL mode".
    if (auto read = query_integer(db.get(), path_, "SELECT count(*) FROM sqlite_schema"); !read) {
        spdlog::warn("{}", read.error().message);
        return;
    }
    bool last_failed = false;
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return requested_ || stopping_; });
        if (stopping_) return;
        requested_ = false;
        lock.unlock();
        // PASSIVE: copies what no reader still needs and never waits for readers or the
        // writer. SQLITE_BUSY means another checkpoint is running: the next request retries.
        const int done = sqlite3_wal_checkpoint_v2(db.get(), nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                                   nullptr, nullptr);
        if (done == SQLITE_OK) {
            completed_.fetch_add(1);
            last_failed = false;
        } else if (done != SQLITE_BUSY && !last_failed) {
            // Logged once per run of failures, not at every commit.
            spdlog::warn("{}", sqlite_error(path_, db.get(), "background WAL checkpoint").message);
            last_failed = true;
        }
        lock.lock();
    }
}

}  // namespace tokenradar::store
