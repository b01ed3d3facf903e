#pragma once
// Admission control of a simulated provider, sans-IO: at most max_concurrent sequences run;
// up to queue_limit more wait in FIFO order; any request beyond that is rejected with 429.
// The gate only keeps the books: the server waits (on a timer/channel keyed by the ticket)
// and calls release() when a running request finishes, which hands the slot to the next
// waiter. Thread-safe (one mutex). Never suspends.

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

namespace tokenradar::sim {

using Ticket = std::uint64_t;

struct Admission {
    enum class Kind { run, queued, reject };
    Kind kind = Kind::run;
    Ticket ticket = 0;  // meaningful for `queued` (the id release() will hand back)
};

class CapacityGate {
  public:
    // max_concurrent == 0: unlimited (admit() always says run, the queue is never used).
    CapacityGate(std::int64_t max_concurrent, std::int64_t queue_limit);

    CapacityGate(const CapacityGate&) = delete;
    CapacityGate& operator=(const CapacityGate&) = delete;

    Admission admit();

    // A running request finished. Returns the ticket of the waiter that now holds the freed
    // slot (the server wakes it), or nullopt when nobody waits. Must be called exactly once
    // per request that ran (admitted with `run`, or woken by a previous release()).
    std::optional<Ticket> release();

    // A queued request gave up (client went away). Returns false when the ticket is not
    // waiting (already woken: then the caller holds a slot and must release() it).
    bool cancel(Ticket ticket);

    [[nodiscard]] std::int64_t running() const;
    [[nodiscard]] std::int64_t queued() const;

  private:
    std::int64_t max_concurrent_;
    std::int64_t queue_limit_;
    mutable std::mutex mutex_;
    std::int64_t running_ = 0;
    std::deque<Ticket> waiting_;
    Ticket next_ticket_ = 1;
};

}  // namespace tokenradar::sim
