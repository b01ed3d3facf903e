#pragma once
// An in-process gateway on 127.0.0.1 (ephemeral port) with a recording sink, configured
// from TOML text (read as `tokenradar serve` reads its file: the gateway's part is used, a
// [store] or [observatory] is checked and left out), plus a small client to talk to it.

#include "run_sync.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/gateway/gateway_server.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/serve/config.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tokenradar::testing {

// Every record the gateway wrote, safe to read from the test thread.
class RecordLog {
  public:
    void add(Measurement&& m) {
        std::lock_guard lock(mu_);
        records_.push_back(std::move(m));
    }
    std::vector<Measurement> snapshot() const {
        std::lock_guard lock(mu_);
        return records_;
    }
    // Waits until at least n records arrived (records are written after the response ends).
    std::vector<Measurement> wait_for(
        std::size_t n, std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            {
                std::lock_guard lock(mu_);
                if (records_.size() >= n) return records_;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return snapshot();
    }

  private:
    mutable std::mutex mu_;
    std::vector<Measurement> records_;
};

inline serve::ServeConfig serve_config(const std::string& toml) {
    const auto table = ConfigTable::parse(toml, "test.toml");
    return serve::load_serve_config(table, [](const char* name) -> const char* {
        return std::string_view(name) == "TEST_UPSTREAM_KEY" ? "sk-upstream-secret-1234" : nullptr;
    });
}

inline gateway::GatewayConfig gateway_config(const std::string& toml) {
    return serve_config(toml).gateway;
}

// A keyless gateway without a store in front of one server that speaks all three dialects
// (the sim): providers sim-openai (region "local"), sim-anthropic and sim-gemini, and a
// virtual model on each, via-openai, via-anthropic and via-gemini. `anthropic_keys`:
// via-anthropic's further keys; `extra`: TOML appended.
inline std::string three_dialects_config(std::string_view sim_url, std::string_view extra = "",
                                         std::string_view anthropic_keys = R"(task = "code")") {
    const std::string url(sim_url);
    return R"(
[auth]
mode = "none"
[store]
path = ""
[[providers]]
name = "sim-openai"
api = "openai"
base_url = ")" +
           url + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
region = "local"
[[providers]]
name = "sim-anthropic"
api = "anthropic"
base_url = ")" +
           url + R"("
key_env = "TEST_UPSTREAM_KEY"
[[providers]]
name = "sim-gemini"
api = "gemini"
base_url = ")" +
           url + R"("
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "via-openai"
upstreams = ["sim-openai/gpt-4o"]
[[models]]
name = "via-anthropic"
upstreams = ["sim-anthropic/claude-3-5-sonnet-latest"]
)" + std::string(anthropic_keys) +
           R"(
[[models]]
name = "via-gemini"
upstreams = ["sim-gemini/gemini-1.5-pro"]
)" + std::string(extra);
}

class GatewayFixture {
  public:
    explicit GatewayFixture(const std::string& toml, gateway::GatewayHooks hooks = {})
        : server_(with_port0(gateway_config(toml)), with_sink(std::move(hooks), &records_)) {
        port_ = server_.start().value();
    }
    [[nodiscard]] std::string base_url() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }
    [[nodiscard]] net::Url url(const std::string& path) const {
        return net::parse_url(base_url() + path).value();
    }
    [[nodiscard]] RecordLog& records() { return records_; }
    [[nodiscard]] gateway::GatewayServer& server() { return server_; }

  private:
    static gateway::GatewayConfig with_port0(gateway::GatewayConfig c) {
        c.port = 0;
        return c;
    }
    static gateway::GatewayHooks with_sink(gateway::GatewayHooks h, RecordLog* log) {
        h.sink = [log](Measurement&& m) { log->add(std::move(m)); };
        return h;
    }
    RecordLog records_;
    gateway::GatewayServer server_;
    std::uint16_t port_ = 0;
};

// A whole response with the steady time each body piece arrived.
struct Fetched {
    unsigned status = 0;
    boost::beast::http::fields headers;
    std::string body;
    std::vector<std::pair<std::int64_t, std::string>> pieces;
    net::RequestTimings timings{};
    std::string error;  // a transport failure
};

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

inline boost::asio::awaitable<Fetched> fetch_task(net::HttpClient* client,
                                                  boost::beast::http::verb method, net::Url url,
                                                  HeaderPairs headers, std::string body) {
    Fetched f;
    auto opened = co_await client->open(method, url, headers, std::move(body));
    if (!opened) {
        f.error = opened.error().message;
        co_return f;
    }
    auto& response = **opened;
    f.status = response.status();
    f.headers = response.headers();
    f.timings = response.timings();
    while (true) {
        auto piece = co_await response.read_some();
        if (!piece) {
            f.error = piece.error().message;
            break;
        }
        if (piece->empty()) break;
        f.pieces.emplace_back(steady_now_ns(), std::string(*piece));
        f.body += *piece;
    }
    co_return f;
}

inline Fetched fetch(boost::beast::http::verb method, const net::Url& url, HeaderPairs headers = {},
                     std::string body = {}) {
    boost::asio::io_context ioc;
    net::HttpClient client(ioc.get_executor());
    return run_sync(ioc, fetch_task(&client, method, url, std::move(headers), std::move(body)));
}

inline Fetched post_json(const net::Url& url, std::string body, HeaderPairs headers = {}) {
    headers.emplace_back("content-type", "application/json");
    return fetch(boost::beast::http::verb::post, url, std::move(headers), std::move(body));
}

// The value of one series in a Prometheus text (`series` as written, labels included, e.g.
// "tokenradar_active_requests"); -1 when the text does not have it.
inline std::int64_t metric_value(std::string_view metrics, std::string_view series) {
    for (std::size_t at = metrics.find(series); at != std::string_view::npos;
         at = metrics.find(series, at + 1)) {
        const std::size_t end = at + series.size();
        if ((at == 0 || metrics[at - 1] == '\n') && end < metrics.size() && metrics[end] == ' ') {
            return std::strtoll(metrics.data() + end + 1, nullptr, 10);
        }
    }
    return -1;
}

}  // namespace tokenradar::testing
