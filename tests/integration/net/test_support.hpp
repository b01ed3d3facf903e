#pragma once
// Shared by the net integration tests: a server on 127.0.0.1:0 running its io_context on
// its own threads, a fake upstream handler steered by request headers (after Envoy's
// autonomous upstream), and a helper that runs a client coroutine to completion.

#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/net/server_tls.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace tokenradar::net::test {

// What the steered handler saw; reset per test.
struct Observed {
    std::atomic<int> requests{0};
    std::atomic<int> handlers_done{0};
    std::atomic<bool> client_gone{false};
};
Observed& observed();

// Request headers that steer it (all optional; delays in ms):
//   x-status            response status (default 200)
//   x-delay-headers     wait before the response head
//   x-chunks            stream N chunks "chunk-<i>\n" (chunked); absent: a whole "ok" body
//   x-first-with-head   "1": chunk 0 leaves in the same write as the head
//   x-delay-first       wait after the head before the first chunk
//   x-chunk-delay       wait before each following chunk
//   x-stall             after the first chunk, wait up to this long (watching client_gone)
//   x-throw             throw before writing ("before") or after the head ("after")
//   x-abort             abort() after the first chunk
// Any other request: echoes the body with the method and target in x-echo-* headers.
asio::awaitable<void> steered_handler(Request& request, ResponseWriter& writer);

class TestServer {
  public:
    // threads == 1: the io_context is the server's one worker (no strands), as in the gateway.
    // With `tls` it serves HTTPS, and url() is https://localhost:port.
    explicit TestServer(ServerLimits limits = {}, Handler handler = steered_handler,
                        int threads = 2, std::shared_ptr<ServerTls> tls = nullptr);
    ~TestServer();
    // Stops the server and joins its threads (the destructor does it too). Objects on ioc()
    // (a client, a timer) must be destroyed after this and before the TestServer.
    void stop();
    Url url(std::string_view target = "/") const;
    HttpServer& server() { return server_; }
    std::uint16_t port() const { return server_.port(); }
    asio::io_context& ioc() { return ioc_; }

  private:
    asio::io_context ioc_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    HttpServer server_;
    bool tls_ = false;
    std::vector<std::thread> threads_;
};

// Runs `aw` on `ioc` (in this thread) until it completes; rethrows its exception.
template <class T>
T run(asio::io_context& ioc, asio::awaitable<T> aw) {
    std::optional<T> out;
    std::exception_ptr failure;
    asio::co_spawn(ioc, std::move(aw), [&](std::exception_ptr e, T value) {
        failure = e;
        if (!e) out.emplace(std::move(value));
    });
    ioc.restart();
    ioc.run();
    if (failure) std::rethrow_exception(failure);
    return std::move(*out);
}

// One client call, as a named coroutine (no lambdas as coroutines).
asio::awaitable<Result<HttpClient::Response>> get(HttpClient* client, Url url,
                                                  RequestHeaders headers);

// Reads the whole streamed body, stamping each piece with steady_now_ns().
struct Piece {
    std::string bytes;
    std::int64_t at_ns;
};
struct StreamResult {
    std::optional<Error> error;  // set when opening or reading failed
    unsigned status = 0;
    RequestTimings timings;
    std::vector<Piece> pieces;
    std::string body() const;
};
asio::awaitable<StreamResult> stream_get(HttpClient* client, Url url, RequestHeaders headers);

// Waits until pred() holds or `timeout` passes; returns pred().
bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

}  // namespace tokenradar::net::test
