#pragma once
// A running gateway: its I/O threads (io_threads(config), each running an io_context of its
// own), the HTTP listener and the Gateway. Used by `tokenradar serve`, `tokenradar demo` and
// the tests (port 0).
//
// Threads: the first I/O thread accepts and deals the connections round-robin over all of
// them; a connection stays on its thread. stop() and the destructor may be called from any
// other thread.

#include <tokenradar/core/error.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/gateway.hpp>
#include <tokenradar/net/server_tls.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace tokenradar::gateway {

class GatewayServer {
  public:
    explicit GatewayServer(GatewayConfig config, GatewayHooks hooks = {});
    ~GatewayServer();  // stops with no grace and joins
    GatewayServer(const GatewayServer&) = delete;
    GatewayServer& operator=(const GatewayServer&) = delete;

    // Binds config.host:config.port (0 = any free port) and starts serving.
    Result<std::uint16_t> start();
    // Stops accepting; streams in flight get `grace` to finish; then joins the thread.
    void stop(std::chrono::milliseconds grace);
    // Re-reads [listener] tls_cert and tls_key (SIGHUP): true when new connections use them,
    // false without TLS, an error (naming the file) when they could not be read: the
    // certificate in use stays.
    Result<bool> reload_tls();

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    [[nodiscard]] Gateway& gateway() noexcept { return *gateway_; }
    [[nodiscard]] const GatewayConfig& config() const noexcept { return config_; }

  private:
    GatewayConfig config_;
    std::vector<std::unique_ptr<boost::asio::io_context>> iocs_;  // one per I/O thread
    std::unique_ptr<Gateway> gateway_;
    std::unique_ptr<net::HttpServer> server_;
    std::shared_ptr<net::ServerTls> tls_;  // with [listener] tls_cert
    std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards_;
    std::vector<std::thread> threads_;
    std::uint16_t port_ = 0;
};

}  // namespace tokenradar::gateway
