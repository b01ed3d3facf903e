#include <tokenradar/gateway/gateway_server.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/net/log_completion.hpp>

#include <algorithm>
#include <string>

namespace tokenradar::gateway {
namespace {

// A named coroutine (no capturing lambda coroutines: GCC 12).
net::asio::awaitable<void> dispatch(Gateway* gateway, net::Request& request,
                                    net::ResponseWriter& writer) {
    co_await gateway->handle(request, writer);
}

// Closes what the gateway keeps open (the response cache's shared tier) once the server's
// connections are gone: a stream that completes within the grace period still stores its
// answer in L2 (the local file has to keep it over the restart). Polls, like the server's own
// drain; `limit` bounds the wait should a connection linger.
net::asio::awaitable<void> close_when_drained(Gateway* gateway, net::HttpServer* server,
                                              std::chrono::milliseconds limit) {
    constexpr std::chrono::milliseconds kPoll{20};
    const auto deadline = std::chrono::steady_clock::now() + limit;
    net::asio::steady_timer timer(co_await net::asio::this_coro::executor);
    while (server->active_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
        timer.expires_after(kPoll);
        co_await timer.async_wait(net::use_nothrow);
    }
    gateway->close_background();
}

}  // namespace

GatewayServer::GatewayServer(GatewayConfig config, GatewayHooks hooks)
    : config_(std::move(config)) {
    std::vector<net::asio::any_io_executor> executors;
    std::vector<boost::asio::io_context*> workers;
    for (std::size_t i = 0; i < io_threads(config_); ++i) {
        // One thread runs each (start()): with the hint, handlers posted from that thread go
        // to its private queue instead of waking the reactor (an epoll_ctl per post otherwise).
        iocs_.push_back(std::make_unique<boost::asio::io_context>(1));
        executors.push_back(iocs_.back()->get_executor());
        workers.push_back(iocs_.back().get());
    }
    net::ServerLimits limits;
    // Ingestion takes larger bodies than chat requests; the head check gives each route its own.
    limits.max_body_bytes = std::max(config_.max_body_bytes, hooks.api_max_body_bytes);
    gateway_ = std::make_unique<Gateway>(executors, config_, std::move(hooks));
    limits.max_body_bytes_in_flight = config_.max_body_bytes_in_flight;
    limits.header_timeout = config_.header_timeout;
    limits.idle_timeout = config_.idle_timeout;
    limits.shutdown_grace = config_.shutdown_grace;
    limits.accept_per_worker = config_.accept_per_thread;
    Gateway* gw = gateway_.get();
    // Each worker io_context runs on one thread: connections need no strands.
    server_ = std::make_unique<net::HttpServer>(
        *iocs_.front(),
        [gw](net::Request& request, net::ResponseWriter& writer) {
            return dispatch(gw, request, writer);
        },
        limits, std::move(workers));
    server_->set_head_check(
        [gw](const net::Request& head, std::optional<std::uint64_t> content_length) {
            return gw->check_head(head, content_length);
        });
}

GatewayServer::~GatewayServer() { stop(std::chrono::milliseconds(0)); }

Result<std::uint16_t> GatewayServer::start() {
    if (!config_.tls_cert_file.empty()) {
        auto tls = net::ServerTls::load(config_.tls_cert_file, config_.tls_key_file);
        if (!tls) return tls.error();
        tls_ = std::move(*tls);
        server_->set_tls(tls_);
    }
    auto endpoint = server_->listen(config_.host, config_.port);
    if (!endpoint) return endpoint.error();
    port_ = endpoint->port();
    server_->start();
    for (std::size_t i = 0; i < iocs_.size(); ++i) {
        guards_.emplace_back(iocs_[i]->get_executor());
        threads_.emplace_back([this, i] {
            name_this_thread(i == 0 ? std::string("tr-io") : fmt::format("tr-io-{}", i));
            Gateway::set_io_thread(i);
            try {
                iocs_[i]->run();
            } catch (const std::exception& e) {
                spdlog::critical("gateway I/O thread {} stopped: {}", i, e.what());
            }
        });
    }
    return port_;
}

Result<bool> GatewayServer::reload_tls() {
    if (!tls_) return false;
    if (auto reloaded = tls_->reload(); !reloaded) return reloaded.error();
    return true;
}

void GatewayServer::stop(std::chrono::milliseconds grace) {
    if (threads_.empty()) return;
    server_->stop(grace);
    boost::asio::co_spawn(
        *iocs_.front(),
        close_when_drained(gateway_.get(), server_.get(), grace + std::chrono::seconds(1)),
        net::LogCompletion{"gateway: close"});
    // The first thread accepts and deals connections to the others, and close_when_drained
    // keeps it running until they have ended. The others run until it returns: a connection
    // dealt to a context whose thread had already returned would be destroyed with that
    // context, and its ServerState with it, freeing the other contexts' timers after their
    // services are gone (docs/NOTES.md "Asio and coroutine traps").
    guards_.front().reset();
    threads_.front().join();
    guards_.clear();
    for (auto& thread : threads_) {
        if (thread.joinable()) thread.join();
    }
    threads_.clear();
}

}  // namespace tokenradar::gateway
