#pragma once
// Moves SQLite's WAL checkpoint off the writing thread.
//
// In WAL mode SQLite checkpoints on the committing thread once the WAL passes 1,000 pages,
// and a checkpoint ends with an fsync of the database file: under sustained ingestion the
// store's writer spent most of its sleeping time waiting for that disk writeback
// (docs/NOTES.md). A WalCheckpointer owns a second connection to the same file and a thread
// that runs PASSIVE checkpoints when asked: readers and the writer never wait for it, and
// the fsync waits on its thread.
//
// Threads: request() may be called from any thread (it takes a mutex for a flag and wakes
// the checkpoint thread); the thread starts at the first request, so a store that never
// commits (stats, rollup reads) starts none. The destructor stops and joins it.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tokenradar::store {

class WalCheckpointer {
  public:
    WalCheckpointer(std::string path, std::chrono::milliseconds busy_timeout);
    ~WalCheckpointer();
    WalCheckpointer(const WalCheckpointer&) = delete;
    WalCheckpointer& operator=(const WalCheckpointer&) = delete;

    // Asks for one checkpoint soon. Requests made while one runs fold into the next.
    void request();
    // Checkpoints run to completion (every WAL frame of their start copied back).
    [[nodiscard]] std::uint64_t completed() const noexcept { return completed_.load(); }

  private:
    void run();

    std::string path_;
    std::chrono::milliseconds busy_timeout_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool requested_ = false;
    bool stopping_ = false;
    std::thread thread_;
    std::atomic<std::uint64_t> completed_{0};
};

}  // namespace tokenradar::store
