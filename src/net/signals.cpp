#include <tokenradar/core/logging.hpp>
#include <tokenradar/net/signals.hpp>

#include <csignal>

namespace tokenradar::net {

ShutdownSignals::ShutdownSignals(asio::io_context& ioc, std::function<void(int)> on_signal)
    : signals_(ioc, SIGINT, SIGTERM), on_signal_(std::move(on_signal)) {
    signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
        if (ec) return;  // cancelled
        spdlog::info("net: received signal {}, shutting down", signo);
        on_signal_(signo);
    });
}

void ShutdownSignals::cancel() {
    boost::system::error_code ignored;
    signals_.cancel(ignored);
}

}  // namespace tokenradar::net
