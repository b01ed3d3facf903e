#pragma once
// Takes measurement records off the request path and writes them to a store in batches from
// a thread of its own.
//
//     auto store = SqliteStore::open("tokenradar.db");          // Result: check it
//     BatchWriter writer(std::move(*store));                     // starts the writer thread
//     writer.try_push(std::move(record));                        // request path: never blocks
//     ... on SIGTERM, from ordinary code (not the signal handler):
//     writer.stop();                                             // writes what is queued, joins
//
// Threads:
// - try_push() may be called from any number of threads at once. It never touches the disk
//   and never waits for the writer: it holds a mutex for the duration of a vector push
//   (tens of nanoseconds, no allocation once the queue has grown) and returns. When
//   `queue_capacity` records are waiting it drops the record and returns false.
// - counters() may be called from any thread (relaxed atomics: each figure is exact, the set
//   is not one snapshot).
// - stop() may be called from any thread except the writer's, more than once; it blocks
//   until the queue is written (or the store failed) and the thread has exited. The
//   destructor calls it. Not async-signal-safe.
// - The store is used only by the writer thread after construction.
//
// Loss: a record is on disk at most `flush_interval` (plus the time of one write) after
// try_push accepted it. kill -9 loses what was accepted since the last commit; stop() loses
// nothing unless the store keeps failing. Measured in src/store/README.md.

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/store/measurement_store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace tokenradar::store {

// What else runs on the writer thread, with the writer's store (the observatory keeps its
// rollups this way: one thread, one connection, in the order records were stored). Calls
// happen on the writer thread only; an exception from one is logged and the writer goes on.
class WriteListener {
  public:
    virtual ~WriteListener() = default;
    // Once, before the first write.
    virtual void started(MeasurementStore& /*store*/) {}
    // After each committed insert, with the records it stored (duplicates left out).
    virtual void written(MeasurementStore& /*store*/, std::span<const Measurement> /*stored*/) {}
    // Each time the writer wakes (at least once per flush interval), after its writes.
    virtual void tick(MeasurementStore& /*store*/) {}
    // Once, after the last write at stop().
    virtual void stopping(MeasurementStore& /*store*/) {}
};

struct BatchWriterOptions {
    // The writer commits what is queued at least this often...
    std::chrono::milliseconds flush_interval{200};
    // ...and as soon as this many records are queued. Small enough that one batch is a short
    // burst of CPU (~0.6 ms at 256) beside a busy I/O thread on the same core: the gateway's
    // p99 at c=64 is 19-28% lower than at 2,048 (bench/README.md "The measurement store");
    // each commit also rewrites the B-trees' right edges, so much smaller batches cost CPU per
    // record (store_bench Insert/64 against /256).
    std::size_t max_batch = 256;
    // try_push drops records while this many are accepted but not yet written (queued, being
    // written, or kept for a retry after a failed write): the memory bound, about 1 KiB each.
    std::size_t queue_capacity = 100'000;
    // Delete records older than this (by ts_us, wall clock); zero keeps everything.
    std::chrono::seconds retention{0};
    // How often the writer thread applies retention (also once at start).
    std::chrono::milliseconds retention_check_interval{std::chrono::minutes(1)};
    // At most one warning per this interval about dropped records or failed writes.
    std::chrono::milliseconds warning_interval{std::chrono::seconds(10)};
};

class BatchWriter {
  public:
    struct Counters {
        std::uint64_t accepted = 0;      // try_push returned true
        std::uint64_t dropped = 0;       // try_push returned false (queue full or stopped)
        std::uint64_t written = 0;       // records committed to the store (not duplicates)
        std::uint64_t write_errors = 0;  // failed insert transactions (the batch is retried)
        std::uint64_t lost = 0;         // accepted, then given up: the store still failed at stop()
        std::uint64_t queue_depth = 0;  // accepted, not yet written or lost
        std::uint64_t retention_deleted = 0;
    };

    // Starts the writer thread. `store` must not be null; `listener` may be.
    explicit BatchWriter(std::unique_ptr<MeasurementStore> store, BatchWriterOptions options = {},
                         std::shared_ptr<WriteListener> listener = nullptr);
    ~BatchWriter();
    BatchWriter(const BatchWriter&) = delete;
    BatchWriter& operator=(const BatchWriter&) = delete;

    // Queues the record for the writer thread; false (record dropped and counted) when the
    // queue is full or stop() has begun. Never blocks on I/O; see Threads above.
    bool try_push(Measurement&& m) noexcept;

    // Ingestion: the writer thread stores `records` at once (not at the next flush), skipping
    // duplicates, and the future gets one flag per record (stored / duplicate) or the store's
    // error (nothing stored). Errc::overloaded at once when they would pass queue_capacity,
    // Errc::cancelled once stop() has begun. The caller may block on the future: it never
    // runs on the caller's thread.
    std::future<Result<std::vector<bool>>> submit(std::vector<Measurement> records);

    // Writes every queued record, then joins the writer thread. Later try_push calls fail.
    void stop();

    [[nodiscard]] Counters counters() const noexcept;
    [[nodiscard]] const BatchWriterOptions& options() const noexcept { return options_; }

  private:
    struct Submission {
        std::vector<Measurement> records;
        std::promise<Result<std::vector<bool>>> done;
    };

    void run();
    void write_pending();
    void write_submissions(std::vector<Submission>& submissions);
    // Stored records to the listener (not the duplicates), catching what it throws.
    void notify_written(std::span<const Measurement> records, const std::vector<bool>& stored);
    template <class F>
    void notify(const char* what, F&& call);
    void apply_retention();
    void warn_if_due(std::chrono::steady_clock::time_point now);

    const BatchWriterOptions options_;
    std::unique_ptr<MeasurementStore> store_;
    std::shared_ptr<WriteListener> listener_;

    std::mutex mutex_;  // guards queue_, stopping_
    std::condition_variable wake_;
    std::vector<Measurement> queue_;
    std::vector<Submission> submissions_;
    bool stopping_ = false;

    // Writer thread only.
    std::vector<Measurement> pending_;  // taken from queue_, not yet committed
    std::chrono::steady_clock::time_point last_warning_{};
    std::uint64_t warned_dropped_ = 0, warned_errors_ = 0, warned_lost_ = 0;

    std::atomic<std::uint64_t> accepted_{0}, dropped_{0}, written_{0}, write_errors_{0}, lost_{0},
        queue_depth_{0}, retention_deleted_{0};

    std::mutex stop_mutex_;  // serialises stop() callers
    std::thread thread_;
};

}  // namespace tokenradar::store
