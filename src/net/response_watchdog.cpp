#include <tokenradar/net/response_watchdog.hpp>

namespace tokenradar::net {

// Shared with the timer coroutine, which may outlive the watchdog by one completion.
struct ResponseWatchdog::State {
    explicit State(const asio::any_io_executor& ex) : timer(ex) {}
    asio::steady_timer timer;
    StreamingResponse* response = nullptr;  // cleared by disarm()
    bool fired = false;
};

ResponseWatchdog::ResponseWatchdog(const asio::any_io_executor& ex, StreamingResponse& response,
                                   std::chrono::steady_clock::time_point deadline)
    : state_(std::make_shared<State>(ex)) {
    state_->response = &response;
    state_->timer.expires_at(deadline);
    // A plain callback, not a spawned coroutine: one per relayed stream, and a coroutine cost
    // a frame, a posted start and a posted completion.
    state_->timer.async_wait([state = state_](const boost::system::error_code& ec) {
        if (!ec && state->response != nullptr) {
            state->fired = true;
            state->response->cancel();
            state->response = nullptr;
        }
    });
}

ResponseWatchdog::~ResponseWatchdog() { disarm(); }

ResponseWatchdog& ResponseWatchdog::operator=(ResponseWatchdog&& other) noexcept {
    if (this != &other) {
        disarm();
        state_ = std::move(other.state_);
    }
    return *this;
}

void ResponseWatchdog::disarm() noexcept {
    if (state_ && state_->response != nullptr) {
        state_->response = nullptr;
        state_->timer.cancel();
    }
}

bool ResponseWatchdog::armed() const noexcept { return state_ && state_->response != nullptr; }

bool ResponseWatchdog::fired() const noexcept { return state_ && state_->fired; }

}  // namespace tokenradar::net
