#include "test_support.hpp"

#include <tokenradar/core/clock.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <stdexcept>
#include <string>

namespace tokenradar::net::test {

namespace http = beast::http;

Observed& observed() {
    static Observed o;
    return o;
}

namespace {

int header_int(const Request& request, std::string_view name, int fallback) {
    auto it = request.find(name);
    if (it == request.end()) return fallback;
    return std::stoi(std::string(it->value()));
}

std::string_view header(const Request& request, std::string_view name) {
    auto it = request.find(name);
    return it == request.end() ? std::string_view{} : std::string_view(it->value());
}

asio::awaitable<void> sleep_ms(int ms) {
    if (ms <= 0) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await timer.async_wait(use_nothrow);
}

}  // namespace

asio::awaitable<void> steered_handler(Request& request, ResponseWriter& writer) {
    Observed& seen = observed();
    seen.requests.fetch_add(1);
    const auto status = static_cast<http::status>(header_int(request, "x-status", 200));
    co_await sleep_ms(header_int(request, "x-delay-headers", 0));
    if (header(request, "x-throw") == "before") throw std::runtime_error("steered throw");
    const int chunks = header_int(request, "x-chunks", -1);
    if (chunks < 0) {
        HeaderList extra{{"x-echo-method", std::string(request.method_string())},
                         {"x-echo-target", std::string(request.target())}};
        // Computed outside the co_await expression: GCC 12 mishandles temporaries from ?:
        // inside one.
        std::string body = request.body().empty() ? std::string("ok") : request.body();
        co_await writer.send(status, "text/plain", std::move(body), extra);
        seen.handlers_done.fetch_add(1);
        co_return;
    }
    // x-first-with-head: chunk 0 leaves in the head's write.
    const bool first_with_head = header(request, "x-first-with-head") == "1" && chunks > 0;
    const std::string first_chunk = first_with_head ? std::string("chunk-0\n") : std::string();
    const HeaderList no_headers;  // named: no braced temporaries in co_await arguments
    co_await writer.start_stream(status, "text/event-stream", no_headers, first_chunk);
    if (header(request, "x-throw") == "after") throw std::runtime_error("steered throw");
    co_await sleep_ms(header_int(request, "x-delay-first", 0));
    const int chunk_delay = header_int(request, "x-chunk-delay", 0);
    const int stall = header_int(request, "x-stall", 0);
    // x-last-with-end: the last chunk leaves in finish()'s write.
    const bool last_with_end =
        header(request, "x-last-with-end") == "1" && chunks > (first_with_head ? 1 : 0);
    const int written_chunks = last_with_end ? chunks - 1 : chunks;
    for (int i = first_with_head ? 1 : 0; i < written_chunks; ++i) {
        if (i > 0) co_await sleep_ms(chunk_delay);
        auto ec = co_await writer.write_chunk("chunk-" + std::to_string(i) + "\n");
        if (ec) break;
        if (i == 0 && header(request, "x-abort") == "1") {
            writer.abort();
            break;
        }
        if (i == 0 && stall > 0) {
            const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(stall);
            while (!writer.client_gone() && std::chrono::steady_clock::now() < until) {
                // Cancellation (client gone) makes this throw or return early; either way
                // client_gone() is recorded below by the server's watcher.
                try {
                    co_await sleep_ms(10);
                } catch (...) {
                    seen.client_gone.store(writer.client_gone());
                    throw;
                }
            }
            seen.client_gone.store(writer.client_gone());
        }
    }
    if (!writer.client_gone()) {
        const std::string last =
            last_with_end ? "chunk-" + std::to_string(chunks - 1) + "\n" : std::string();
        co_await writer.finish(last);
    }
    seen.handlers_done.fetch_add(1);
}

TestServer::TestServer(ServerLimits limits, Handler handler, int threads,
                       std::shared_ptr<ServerTls> tls)
    : ioc_(threads),
      guard_(ioc_.get_executor()),
      server_(
          ioc_, std::move(handler), limits,
          threads == 1 ? std::vector<asio::io_context*>{&ioc_} : std::vector<asio::io_context*>{}) {
    auto bound = server_.listen("127.0.0.1", 0);
    if (!bound) throw std::runtime_error(bound.error().message);
    tls_ = tls != nullptr;
    if (tls) server_.set_tls(std::move(tls));
    server_.start();
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
}

TestServer::~TestServer() { stop(); }

void TestServer::stop() {
    if (threads_.empty()) return;
    server_.stop(std::chrono::milliseconds(0));
    guard_.reset();
    for (auto& t : threads_) t.join();
    threads_.clear();
}

Url TestServer::url(std::string_view target) const {
    if (tls_) return Url{"https", "localhost", server_.port(), std::string(target)};
    return Url{"http", "127.0.0.1", server_.port(), std::string(target)};
}

asio::awaitable<Result<HttpClient::Response>> get(HttpClient* client, Url url,
                                                  RequestHeaders headers) {
    co_return co_await client->request(http::verb::get, url, headers, "");
}

std::string StreamResult::body() const {
    std::string out;
    for (const auto& p : pieces) out += p.bytes;
    return out;
}

asio::awaitable<StreamResult> stream_get(HttpClient* client, Url url, RequestHeaders headers) {
    StreamResult out;
    auto opened = co_await client->open(http::verb::get, url, headers, "");
    if (!opened) {
        out.error = opened.error();
        co_return out;
    }
    auto& response = **opened;
    out.status = response.status();
    for (;;) {
        auto piece = co_await response.read_some();
        if (!piece) {
            out.error = piece.error();
            break;
        }
        if (piece->empty()) break;
        out.pieces.push_back(Piece{std::string(*piece), steady_now_ns()});
    }
    out.timings = response.timings();
    co_return out;
}

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!pred() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
}

}  // namespace tokenradar::net::test
