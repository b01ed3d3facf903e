#include <tokenradar/net/response_watchdog.hpp>

#include <tokenradar/core/logging.hpp>

#include <boost/asio/co_spawn.hpp>

namespace tokenradar::net {

// Shared with the timer coroutine, which may outlive the watchdog by one completion.
struct ResponseWatchdog::State {
    explicit State(asio::any_io_executor ex) : timer(std::move(ex)) {}
    asio::steady_timer timer;
    StreamingResponse* response = nullptr;  // cleared by disarm()
    bool fired = false;
};

namespace {

asio::awaitable<void> watch(std::shared_ptr<ResponseWatchdog::State> state) {
    auto [ec] = co_await state->timer.async_wait(use_nothrow);
    if (!ec && state->response != nullptr) {
        state->fired = true;
        state->response->cancel();
        state->response = nullptr;
    }
}

}  // namespace

ResponseWatchdog::ResponseWatchdog(asio::any_io_executor ex, StreamingResponse& response,
                                   std::chrono::steady_clock::time_point deadline)
    : state_(std::make_shared<State>(ex)) {
    state_->response = &response;
    state_->timer.expires_at(deadline);
    asio::co_spawn(std::move(ex), watch(state_), [](const std::exception_ptr& e) {
        if (e) spdlog::error("response watchdog failed");
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
