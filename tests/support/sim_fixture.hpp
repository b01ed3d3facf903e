#pragma once
// An in-process simulated provider on 127.0.0.1 (ephemeral port), served by its own I/O
// thread, stopped and joined by the destructor.

#include <tokenradar/sim/profile.hpp>
#include <tokenradar/sim/sim_server.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <filesystem>
#include <string>
#include <thread>

namespace tokenradar::testing {

inline std::filesystem::path profiles_dir() {
    return std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "profiles";
}

class SimFixture {
  public:
    explicit SimFixture(sim::Profile profile, sim::SimServerOptions options = {},
                        unsigned threads = 1)
        : server_(ioc_, std::move(profile), std::move(options)) {
        auto port = server_.listen("127.0.0.1", 0);
        if (!port) throw std::runtime_error(port.error().message);
        port_ = *port;
        server_.start();
        for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    }
    explicit SimFixture(const std::string& profile_name, sim::SimServerOptions options = {},
                        unsigned threads = 1)
        : SimFixture(sim::load_profile(profile_name, profiles_dir()), std::move(options), threads) {
    }

    ~SimFixture() {
        server_.stop(std::chrono::milliseconds(0));
        guard_.reset();
        for (auto& t : threads_) t.join();
    }
    SimFixture(const SimFixture&) = delete;
    SimFixture& operator=(const SimFixture&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    [[nodiscard]] std::string base_url() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }
    [[nodiscard]] sim::SimServer& server() { return server_; }

  private:
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
        boost::asio::make_work_guard(ioc_);
    sim::SimServer server_;
    std::uint16_t port_ = 0;
    std::vector<std::thread> threads_;
};

}  // namespace tokenradar::testing
