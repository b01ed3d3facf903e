#pragma once
// Waits for SIGINT/SIGTERM on an io_context and calls a callback once, for graceful
// shutdown in main (e.g. `server.stop(grace)`).

#include <tokenradar/net/asio.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>

namespace tokenradar::net {

class ShutdownSignals {
  public:
    // Starts waiting at once. The callback runs on the io_context with the signal number.
    ShutdownSignals(asio::io_context& ioc, std::function<void(int)> on_signal);
    ShutdownSignals(const ShutdownSignals&) = delete;
    ShutdownSignals& operator=(const ShutdownSignals&) = delete;
    // Stops waiting (the io_context can then run out of work).
    void cancel();

  private:
    asio::signal_set signals_;
    std::function<void(int)> on_signal_;
};

}  // namespace tokenradar::net
