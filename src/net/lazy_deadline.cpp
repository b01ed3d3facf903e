#include "lazy_deadline.hpp"

#include <boost/asio/post.hpp>

#include <utility>

namespace tokenradar::net::detail {

LazyDeadline::LazyDeadline(const asio::any_io_executor& ex, std::function<void()> on_expiry)
    : timer_(ex), on_expiry_(std::move(on_expiry)) {}

void LazyDeadline::set(Clock::time_point at) {
    deadline_ = at;
    fired_ = false;
    if (at < armed_) arm(at);
}

void LazyDeadline::release_soon() {
    if (armed_ == kNone || check_posted_) return;
    check_posted_ = true;
    asio::post(timer_.get_executor(), [weak = weak_from_this()] {
        const auto self = weak.lock();
        if (!self) return;
        self->check_posted_ = false;
        if (self->deadline_ == kNone) self->disarm();
    });
}

void LazyDeadline::clear() {
    deadline_ = kNone;
    disarm();
}

void LazyDeadline::disarm() {
    if (armed_ == kNone) return;
    armed_ = kNone;
    ++generation_;  // the cancelled wait's handler finds itself stale
    timer_.cancel();
}

void LazyDeadline::arm(Clock::time_point at) {
    armed_ = at;
    timer_.expires_at(at);  // a pending wait completes as aborted; its generation is stale
    const std::uint64_t generation = ++generation_;
    timer_.async_wait([weak = weak_from_this(), generation](const boost::system::error_code&) {
        if (const auto self = weak.lock()) self->on_wait_done(generation);
    });
}

void LazyDeadline::on_wait_done(std::uint64_t generation) {
    if (generation != generation_) return;
    armed_ = kNone;
    if (deadline_ == kNone) return;  // no phase running
    if (Clock::now() < deadline_) {
        arm(deadline_);  // the deadline moved on since this wait began
        return;
    }
    fired_ = true;
    on_expiry_();
}

}  // namespace tokenradar::net::detail
