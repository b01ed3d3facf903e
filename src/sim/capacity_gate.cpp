#include <tokenradar/sim/capacity_gate.hpp>

#include <algorithm>
#include <cassert>

namespace tokenradar::sim {

CapacityGate::CapacityGate(std::int64_t max_concurrent, std::int64_t queue_limit)
    : max_concurrent_(max_concurrent), queue_limit_(queue_limit) {
    assert(max_concurrent_ >= 0 && queue_limit_ >= 0);
}

Admission CapacityGate::admit() {
    std::lock_guard lock(mutex_);
    if (max_concurrent_ == 0 || running_ < max_concurrent_) {
        ++running_;
        return {Admission::Kind::run, 0};
    }
    if (static_cast<std::int64_t>(waiting_.size()) >= queue_limit_) {
        return {Admission::Kind::reject, 0};
    }
    const Ticket ticket = next_ticket_++;
    waiting_.push_back(ticket);
    return {Admission::Kind::queued, ticket};
}

std::optional<Ticket> CapacityGate::release() {
    std::lock_guard lock(mutex_);
    assert(running_ > 0);
    if (!waiting_.empty()) {
        // The slot passes straight to the oldest waiter: running_ stays the same.
        const Ticket next = waiting_.front();
        waiting_.pop_front();
        return next;
    }
    if (running_ > 0) --running_;
    return std::nullopt;
}

bool CapacityGate::cancel(Ticket ticket) {
    std::lock_guard lock(mutex_);
    auto it = std::find(waiting_.begin(), waiting_.end(), ticket);
    if (it == waiting_.end()) return false;
    waiting_.erase(it);
    return true;
}

std::int64_t CapacityGate::running() const {
    std::lock_guard lock(mutex_);
    return running_;
}

std::int64_t CapacityGate::queued() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::int64_t>(waiting_.size());
}

}  // namespace tokenradar::sim
