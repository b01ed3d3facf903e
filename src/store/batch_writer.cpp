#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/store/batch_writer.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <iterator>
#include <string>
#include <utility>

namespace tokenradar::store {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRelaxed = std::memory_order_relaxed;
// stop() gives a failing store this many more tries before counting the rest as lost.
constexpr int kStopAttempts = 3;

}  // namespace

BatchWriter::BatchWriter(std::unique_ptr<MeasurementStore> store, BatchWriterOptions options,
                         std::shared_ptr<WriteListener> listener)
    : options_(options), store_(std::move(store)), listener_(std::move(listener)) {
    assert(store_ != nullptr);
    queue_.reserve(std::min(options_.max_batch, options_.queue_capacity));
    thread_ = std::thread([this] {
        name_this_thread("tr-store");
        run();
    });
}

BatchWriter::~BatchWriter() { stop(); }

bool BatchWriter::try_push(Measurement&& m) noexcept {
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        // Capacity counts every record not yet written, including a batch being written or
        // kept for a retry, so memory stays bounded while the store is slow or failing.
        if (stopping_ || queue_depth_.load(kRelaxed) >= options_.queue_capacity) {
            dropped_.fetch_add(1, kRelaxed);
            return false;
        }
        try {
            queue_.push_back(std::move(m));  // allocates only while the queue grows
        } catch (const std::exception&) {
            dropped_.fetch_add(1, kRelaxed);
            return false;
        }
        // Counted under the lock so the writer never sees written > accepted.
        accepted_.fetch_add(1, kRelaxed);
        queue_depth_.fetch_add(1, kRelaxed);
        wake = queue_.size() == options_.max_batch;
    }
    // Waking the writer is a futex wake at most once per batch; it never waits.
    if (wake) wake_.notify_one();
    return true;
}

std::future<Result<std::vector<bool>>> BatchWriter::submit(std::vector<Measurement> records) {
    Submission submission{std::move(records), {}};
    auto future = submission.done.get_future();
    const std::size_t n = submission.records.size();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) {
            submission.done.set_value(Error(Errc::cancelled, "measurement store: shutting down"));
            return future;
        }
        if (queue_depth_.load(kRelaxed) + n > options_.queue_capacity) {
            submission.done.set_value(
                Error(Errc::overloaded,
                      fmt::format("measurement store: {} records waiting, capacity {}",
                                  queue_depth_.load(kRelaxed), options_.queue_capacity)));
            return future;
        }
        submissions_.push_back(std::move(submission));
        accepted_.fetch_add(n, kRelaxed);
        queue_depth_.fetch_add(n, kRelaxed);
    }
    wake_.notify_one();
    return future;
}

void BatchWriter::stop() {
    std::lock_guard serial(stop_mutex_);
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

BatchWriter::Counters BatchWriter::counters() const noexcept {
    Counters c;
    c.accepted = accepted_.load(kRelaxed);
    c.dropped = dropped_.load(kRelaxed);
    c.written = written_.load(kRelaxed);
    c.write_errors = write_errors_.load(kRelaxed);
    c.lost = lost_.load(kRelaxed);
    c.queue_depth = queue_depth_.load(kRelaxed);
    c.retention_deleted = retention_deleted_.load(kRelaxed);
    return c;
}

void BatchWriter::run() {
    const bool retention = options_.retention.count() > 0;
    auto next_flush = Clock::now() + options_.flush_interval;
    auto next_retention = retention ? Clock::now() : Clock::time_point::max();
    std::vector<Measurement> incoming;  // swapped with queue_, so neither reallocates
    incoming.reserve(queue_.capacity());
    std::vector<Submission> submissions;
    if (listener_) notify("started", [&] { listener_->started(*store_); });
    try {
        for (;;) {
            bool stop = false;
            bool flush = false;
            {
                std::unique_lock lock(mutex_);
                wake_.wait_until(lock, std::min(next_flush, next_retention), [&] {
                    return stopping_ || queue_.size() >= options_.max_batch ||
                           !submissions_.empty();
                });
                submissions.swap(submissions_);
                stop = stopping_;
                const auto now = Clock::now();
                flush = stop || now >= next_flush || queue_.size() >= options_.max_batch;
                if (flush) {
                    queue_.swap(incoming);
                    next_flush = now + options_.flush_interval;
                }
            }
            write_submissions(submissions);
            if (flush) {
                if (pending_.empty()) {
                    pending_.swap(incoming);
                } else {
                    std::move(incoming.begin(), incoming.end(), std::back_inserter(pending_));
                    incoming.clear();
                }
                write_pending();
            }
            if (stop) {
                for (int attempt = 1; attempt < kStopAttempts && !pending_.empty(); ++attempt) {
                    write_pending();
                }
                if (!pending_.empty()) {
                    spdlog::error("measurement store: {} records could not be written at shutdown",
                                  pending_.size());
                    lost_.fetch_add(pending_.size(), kRelaxed);
                    queue_depth_.fetch_sub(pending_.size(), kRelaxed);
                    pending_.clear();
                }
                warn_if_due(Clock::time_point::max());
                if (listener_) notify("stopping", [&] { listener_->stopping(*store_); });
                return;
            }
            if (retention && Clock::now() >= next_retention) {
                apply_retention();
                next_retention = Clock::now() + options_.retention_check_interval;
            }
            if (listener_) notify("tick", [&] { listener_->tick(*store_); });
            warn_if_due(Clock::now());
        }
    } catch (const std::exception& e) {
        // Only allocation can throw here. try_push keeps accepting until the queue is full.
        spdlog::critical("measurement store: writer thread stopped: {}", e.what());
    }
}

void BatchWriter::write_pending() {
    if (pending_.empty()) return;
    auto inserted = store_->insert(pending_);
    if (!inserted) {
        write_errors_.fetch_add(1, kRelaxed);
        // The first failure after a quiet period is reported at once, with its reason.
        if (Clock::now() - last_warning_ >= options_.warning_interval) {
            spdlog::warn("measurement store: writing {} records failed (will retry): {}",
                         pending_.size(), inserted.error().message);
            last_warning_ = Clock::now();
            warned_errors_ = write_errors_.load(kRelaxed);
        }
        return;
    }
    written_.fetch_add(pending_.size(), kRelaxed);
    queue_depth_.fetch_sub(pending_.size(), kRelaxed);
    notify_written(pending_, *inserted);
    pending_.clear();
}

void BatchWriter::write_submissions(std::vector<Submission>& submissions) {
    for (Submission& s : submissions) {
        auto inserted = store_->insert(s.records);
        if (inserted) {
            // Duplicates were accepted but are not written: they leave the queue uncounted.
            const auto stored = std::count(inserted->begin(), inserted->end(), true);
            written_.fetch_add(static_cast<std::uint64_t>(stored), kRelaxed);
            notify_written(s.records, *inserted);
        } else {
            write_errors_.fetch_add(1, kRelaxed);
            lost_.fetch_add(s.records.size(), kRelaxed);  // the submitter hears of it and may retry
        }
        queue_depth_.fetch_sub(s.records.size(), kRelaxed);
        s.done.set_value(std::move(inserted));
    }
    submissions.clear();
}

void BatchWriter::notify_written(std::span<const Measurement> records,
                                 const std::vector<bool>& stored) {
    if (!listener_) return;
    if (std::find(stored.begin(), stored.end(), false) == stored.end()) {
        notify("written", [&] { listener_->written(*store_, records); });
        return;
    }
    std::vector<Measurement> kept;
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (stored[i]) kept.push_back(records[i]);
    }
    notify("written", [&] { listener_->written(*store_, kept); });
}

template <class F>
void BatchWriter::notify(const char* what, F&& call) {
    try {
        call();
    } catch (const std::exception& e) {
        spdlog::error("measurement store: listener ({}): {}", what, e.what());
    }
}

void BatchWriter::apply_retention() {
    const auto keep_us = std::chrono::duration_cast<std::chrono::microseconds>(options_.retention);
    auto deleted = store_->delete_before(wall_now_us() - keep_us.count());
    if (!deleted) {
        spdlog::warn("measurement store: retention: {}", deleted.error().message);
        return;
    }
    retention_deleted_.fetch_add(*deleted, kRelaxed);
    if (*deleted > 0) spdlog::debug("measurement store: retention deleted {} records", *deleted);
}

void BatchWriter::warn_if_due(Clock::time_point now) {
    const std::uint64_t dropped = dropped_.load(kRelaxed);
    const std::uint64_t errors = write_errors_.load(kRelaxed);
    const std::uint64_t lost = lost_.load(kRelaxed);
    if (dropped == warned_dropped_ && errors == warned_errors_ && lost == warned_lost_) return;
    if (now != Clock::time_point::max() && now - last_warning_ < options_.warning_interval) return;
    spdlog::warn(
        "measurement store: {} records dropped (queue full, capacity {}), {} failed writes, {} "
        "records lost since the last warning; {} waiting",
        dropped - warned_dropped_, options_.queue_capacity, errors - warned_errors_,
        lost - warned_lost_, queue_depth_.load(kRelaxed));
    warned_dropped_ = dropped;
    warned_errors_ = errors;
    warned_lost_ = lost;
    last_warning_ = now == Clock::time_point::max() ? Clock::now() : now;
}

}  // namespace tokenradar::store
