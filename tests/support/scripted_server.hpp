#pragma once
// A server that answers every request with one scripted response: status, headers, then
// body pieces each written after its delay, optionally cutting the connection at the end.
// For crafted-stream tests (role-only first chunk, malformed chunk, disconnect...); it keeps
// the request bodies it received.

#include <tokenradar/net/http_server.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::testing {

struct ScriptedPiece {
    std::chrono::milliseconds delay{0};
    std::string bytes;
};

struct Script {
    unsigned status = 200;
    std::string content_type = "text/event-stream";
    net::HeaderList headers;
    std::vector<ScriptedPiece> pieces;
    bool abort_at_end = false;  // close the socket instead of finishing the body
};

// A 200 event stream of these pieces.
inline Script sse_script(std::vector<ScriptedPiece> pieces, bool abort_at_end = false) {
    Script script;
    script.pieces = std::move(pieces);
    script.abort_at_end = abort_at_end;
    return script;
}

inline boost::asio::awaitable<void> play_script(const Script* script, net::Request&,
                                                net::ResponseWriter& writer) {
    namespace asio = boost::asio;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    const auto status = static_cast<boost::beast::http::status>(script->status);
    if (co_await writer.start_stream(status, script->content_type, script->headers)) co_return;
    for (const auto& piece : script->pieces) {
        timer.expires_after(piece.delay);
        co_await timer.async_wait(net::use_nothrow);
        if (co_await writer.write_chunk(piece.bytes)) co_return;
    }
    if (script->abort_at_end) {
        writer.abort();
        co_return;
    }
    co_await writer.finish();
}

class ScriptedServer {
  public:
    explicit ScriptedServer(Script script)
        : script_(std::move(script)),
          server_(ioc_, [this](net::Request& r, net::ResponseWriter& w) {
              {
                  std::lock_guard lock(mu_);
                  received_bodies_.push_back(r.body());
              }
              return play_script(&script_, r, w);
          }) {
        port_ = server_.listen("127.0.0.1", 0).value().port();
        server_.start();
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~ScriptedServer() {
        server_.stop(std::chrono::milliseconds(0));
        guard_.reset();
        thread_.join();
    }
    ScriptedServer(const ScriptedServer&) = delete;
    ScriptedServer& operator=(const ScriptedServer&) = delete;

    [[nodiscard]] std::string base_url() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }
    // The bodies of the requests answered so far, in arrival order.
    [[nodiscard]] std::vector<std::string> received_bodies() const {
        std::lock_guard lock(mu_);
        return received_bodies_;
    }

  private:
    mutable std::mutex mu_;
    std::vector<std::string> received_bodies_;
    Script script_;
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
        boost::asio::make_work_guard(ioc_);
    net::HttpServer server_;
    std::uint16_t port_ = 0;
    std::thread thread_;
};

}  // namespace tokenradar::testing
