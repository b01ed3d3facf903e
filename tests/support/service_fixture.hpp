#pragma once
// An in-process serve::Service (what `tokenradar serve` runs: the store, the observatory's
// /api/v1 and the gateway) on 127.0.0.1 (ephemeral port), configured from TOML text.
// stop() drains it as serve does at SIGTERM (rollups saved); the destructor stops it too.

#include "gateway_fixture.hpp"

#include <tokenradar/serve/service.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace tokenradar::testing {

class ServiceFixture {
  public:
    explicit ServiceFixture(const std::string& toml) : service_(with_port0(serve_config(toml))) {
        port_ = service_.start().value();
    }
    [[nodiscard]] std::string base_url() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }
    [[nodiscard]] net::Url url(const std::string& path) const {
        return net::parse_url(base_url() + path).value();
    }
    [[nodiscard]] serve::Service& service() { return service_; }
    void stop() { service_.stop(); }

    // GET /readyz until it answers 200 (true) or `limit` passes (false).
    bool wait_ready(std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (fetch(boost::beast::http::verb::get, url("/readyz")).status == 200) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return false;
    }

  private:
    static serve::ServeConfig with_port0(serve::ServeConfig c) {
        c.gateway.port = 0;
        return c;
    }
    serve::Service service_;
    std::uint16_t port_ = 0;
};

}  // namespace tokenradar::testing
