#pragma once
// Cancels a StreamingResponse at a deadline unless disarmed first: the first-token timeout
// of bench and the gateway (the client's own timeouts know nothing about tokens).
//
// Executor: arm() and disarm() on the response's executor. The watchdog must be disarmed
// before the response is destroyed (destroying the Armed handle disarms).

#include <tokenradar/net/http_client.hpp>

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>

namespace tokenradar::net {

class ResponseWatchdog {
  public:
    struct State;

    ResponseWatchdog() = default;
    // Starts the timer; at `deadline` the response is cancelled (its pending read_some
    // completes with Errc::cancelled) and fired() becomes true.
    ResponseWatchdog(const asio::any_io_executor& ex, StreamingResponse& response,
                     std::chrono::steady_clock::time_point deadline);
    ~ResponseWatchdog();
    ResponseWatchdog(ResponseWatchdog&&) noexcept = default;
    ResponseWatchdog& operator=(ResponseWatchdog&& other) noexcept;  // disarms this one first

    void disarm() noexcept;
    [[nodiscard]] bool armed() const noexcept;
    [[nodiscard]] bool fired() const noexcept;

  private:
    std::shared_ptr<State> state_;
};

}  // namespace tokenradar::net
