#pragma once
// Private to net: the deadline of a connection's current phase, kept lazily. Moving it later
// only stores the time; the one pending timer wait re-arms itself when it fires before a
// deadline that moved on, and runs `on_expiry` (which closes the owner's socket, so its
// pending operation fails) once the deadline has passed. Beast's stream expiry armed and
// cancelled a timer around every socket operation instead: a timer queue insert, a cancel,
// a completion and often a timerfd_settime per read or write.
//
// Threads: every function, and on_expiry, runs on the executor given to the constructor
// (the owner's strand, or the io_context's one thread). Own it through a shared_ptr: the
// pending wait holds a weak_ptr and does nothing once the deadline is gone.

#include <tokenradar/net/asio.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace tokenradar::net::detail {

class LazyDeadline : public std::enable_shared_from_this<LazyDeadline> {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr Clock::time_point kNone = Clock::time_point::max();

    LazyDeadline(const asio::any_io_executor& ex, std::function<void()> on_expiry);
    LazyDeadline(const LazyDeadline&) = delete;
    LazyDeadline& operator=(const LazyDeadline&) = delete;

    // The current phase must end by `at` (kNone: no deadline; the pending wait, if any,
    // stays and finds nothing to do when it fires). Clears fired().
    void set(Clock::time_point at);
    // Cancels the pending wait from a posted check unless a deadline was set again by then,
    // so that an io_context with nothing else to do can return from run().
    void release_soon();
    // No deadline and no pending wait from now on (an idle pooled connection, a closed one);
    // fired() stays as it was.
    void clear();
    // The last deadline passed and on_expiry ran (until the next set()).
    bool fired() const noexcept { return fired_; }
    // The expiry of the pending wait (kNone: none pending); for tests.
    Clock::time_point armed() const noexcept { return armed_; }

  private:
    void arm(Clock::time_point at);
    void disarm();
    void on_wait_done(std::uint64_t generation);

    asio::steady_timer timer_;
    std::function<void()> on_expiry_;
    Clock::time_point deadline_ = kNone;
    Clock::time_point armed_ = kNone;  // the pending wait's expiry
    std::uint64_t generation_ = 0;     // which wait is the current one
    bool fired_ = false;
    bool check_posted_ = false;  // release_soon's check is queued
};

}  // namespace tokenradar::net::detail
