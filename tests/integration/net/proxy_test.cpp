// A server whose handler relays an upstream stream through HttpClient, as the gateway
// will: the downstream client leaving must cancel the handler and close the upstream
// socket; many concurrent streams must all complete.

#include "test_support.hpp"

#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/net/signals.hpp>

#include <gtest/gtest.h>

#include <csignal>

namespace tokenradar::net::test {
namespace {

namespace http = beast::http;

struct Relay {
    HttpClient* client = nullptr;
    Url upstream;
    std::atomic<int> upstream_error{0};  // Errc value the relay's upstream read ended with
    std::atomic<bool> handler_exited{false};
};
Relay& relay() {
    static Relay r;
    return r;
}

// Marks the handler's exit however it happens: a cancelled handler either sees
// Errc::cancelled from read_some or, if cancellation lands between operations, throws at
// its next co_await.
struct ExitMark {
    ~ExitMark() { relay().handler_exited = true; }
};

// Stops a server (joins its threads) before the objects declared after it on its io_context
// are destroyed, however the test ends.
struct StopFirst {
    TestServer& server;
    ~StopFirst() { server.stop(); }
};

asio::awaitable<void> relay_handler(Request& request, ResponseWriter& writer) {
    (void)request;
    ExitMark mark;
    const RequestHeaders headers{{"x-chunks", "2"}, {"x-stall", "10000"}};
    auto opened = co_await relay().client->open(http::verb::get, relay().upstream, headers, "");
    if (!opened) {
        co_await writer.send(http::status::bad_gateway, "text/plain", opened.error().message);
        co_return;
    }
    auto& upstream = **opened;
    co_await writer.start_stream(http::status::ok, "text/event-stream");
    for (;;) {
        auto piece = co_await upstream.read_some();
        if (!piece) {
            relay().upstream_error = piece.error().code.value();
            co_return;
        }
        if (piece->empty()) break;
        co_await writer.write_chunk(*piece);
    }
    co_await writer.finish();
}

asio::awaitable<Result<bool>> read_first_then_leave(HttpClient* client, Url url) {
    const RequestHeaders none;
    auto opened = co_await client->open(http::verb::get, url, none, "");
    if (!opened) co_return opened.error();
    auto piece = co_await (*opened)->read_some();
    if (!piece) co_return piece.error();
    (*opened)->cancel();
    co_return true;
}

TEST(RelayTest, ClientLeavingCancelsTheUpstreamRead) {
    observed().client_gone = false;
    relay().upstream_error = 0;
    relay().handler_exited = false;
    TestServer upstream;
    // HttpClient must be used from its executor's one thread (or strand): the relay's client
    // lives on the proxy's one I/O thread, as the gateway's clients do. Driving a client on
    // the upstream's two-thread io_context from the proxy's handler raced its deadline timer
    // across threads, and the upstream's io_context could be left with work that never
    // completed (a rare hang in ~TestServer).
    TestServer proxy({}, relay_handler, 1);
    HttpClient upstream_client(proxy.ioc().get_executor());
    const StopFirst stop_proxy_first{proxy};  // the client's sockets are on the proxy's thread
    relay().client = &upstream_client;
    relay().upstream = upstream.url();

    asio::io_context ioc;
    HttpClient client(ioc.get_executor());
    auto left = run(ioc, read_first_then_leave(&client, proxy.url()));
    ASSERT_TRUE(left) << left.error().message;
    EXPECT_TRUE(
        wait_for([] { return relay().handler_exited.load(); }, std::chrono::milliseconds(3000)));
    const int error = relay().upstream_error.load();
    EXPECT_TRUE(error == 0 || error == static_cast<int>(Errc::cancelled)) << error;
    // The upstream server saw its client (the relay) go away: the socket was closed.
    EXPECT_TRUE(
        wait_for([] { return observed().client_gone.load(); }, std::chrono::milliseconds(3000)));
}

struct Tally {
    std::atomic<int> ok{0};
    std::atomic<int> failed{0};
};

asio::awaitable<void> one_stream(HttpClient* client, Url url, Tally* tally) {
    const RequestHeaders headers{{"x-chunks", "5"}, {"x-chunk-delay", "10"}};
    StreamResult result = co_await stream_get(client, url, headers);
    if (!result.error && result.body() == "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n") {
        tally->ok.fetch_add(1);
    } else {
        tally->failed.fetch_add(1);
    }
}

TEST(ConcurrencyTest, FiveHundredConcurrentStreams) {
    constexpr int kStreams = 500;
    TestServer server;
    asio::io_context ioc;
    HttpClient client(ioc.get_executor());
    Tally tally;
    for (int i = 0; i < kStreams; ++i) {
        asio::co_spawn(ioc, one_stream(&client, server.url(), &tally),
                       [](const std::exception_ptr& e) {
                           if (e) std::rethrow_exception(e);
                       });
    }
    ioc.run();
    EXPECT_EQ(tally.ok.load(), kStreams);
    EXPECT_EQ(tally.failed.load(), 0);
    EXPECT_EQ(client.idle_connections(), 64u);  // max_idle_per_host
}

TEST(ShutdownSignalsTest, SigtermCallsTheCallbackOnce) {
    asio::io_context ioc;
    int received = 0;
    ShutdownSignals signals(ioc, [&](int signo) { received = signo; });
    std::raise(SIGTERM);
    ioc.run();
    EXPECT_EQ(received, SIGTERM);
}

}  // namespace
}  // namespace tokenradar::net::test
