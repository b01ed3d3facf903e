// Client and server against each other on 127.0.0.1 (no timing assertions here; those are
// in http_timing_test.cpp under the `timing` label).

#include "../../support/raw_http_server.hpp"
#include "test_support.hpp"
#include <sys/socket.h>
#include <sys/time.h>

#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

namespace tokenradar::net::test {
namespace {

namespace http = beast::http;
using asio::ip::tcp;

// Every test runs against a server on one I/O thread (the io_context as the server's one
// worker: no strands, as the gateway runs) and on two (a strand per connection). The client's
// io_context is made for the one thread that runs it, as the gateway's, bench's and the
// prober's are: its first read of each answer waits for epoll (sync_io.hpp, AwaitedBuffer).
class HttpTest : public ::testing::TestWithParam<int> {
  protected:
    void SetUp() override {
        observed().requests = 0;
        observed().handlers_done = 0;
        observed().client_gone = false;
    }
    asio::io_context ioc{1};
};

TEST_P(HttpTest, KeepAliveReusesTheConnection) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto first = run(ioc, get(&client, server.url("/a"), {}));
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(first->status, 200u);
    EXPECT_EQ(first->body, "ok");
    EXPECT_FALSE(first->timings.reused_connection);
    EXPECT_GT(first->timings.connect_ns, 0);
    EXPECT_EQ(client.idle_connections(), 1u);

    auto second = run(ioc, get(&client, server.url("/b"), {}));
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_TRUE(second->timings.reused_connection);
    EXPECT_EQ(second->timings.connect_ns, 0);
    EXPECT_EQ(second->headers["x-echo-target"], "/b");
    EXPECT_EQ(server.server().active_connections(), 1u);
    EXPECT_LE(second->timings.t_send, second->timings.t_headers);
}

TEST_P(HttpTest, PostBodyIsEchoed) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response =
        run(ioc, client.request(http::verb::post, server.url("/echo"),
                                {{"content-type", "application/json"}}, R"({"model":"m"})"));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->body, R"({"model":"m"})");
    EXPECT_EQ(response->headers["x-echo-method"], "POST");
}

TEST_P(HttpTest, ChunkedStreamArrivesWholeAndConnectionIsPooled) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto result = run(ioc, stream_get(&client, server.url("/stream"), {{"x-chunks", "50"}}));
    ASSERT_FALSE(result.error) << result.error->message;
    std::string expected;
    for (int i = 0; i < 50; ++i) expected += "chunk-" + std::to_string(i) + "\n";
    EXPECT_EQ(result.body(), expected);
    EXPECT_EQ(client.idle_connections(), 1u);  // fully read + keep-alive -> pooled
}

TEST_P(HttpTest, HeaderBlockOverLimitGets431) {
    ServerLimits limits;
    limits.max_header_bytes = 1024;
    TestServer server(limits, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, server.url(), {{"x-big", std::string(4000, 'a')}}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 431u);
    EXPECT_NE(response->body.find("\"error\""), std::string::npos);
}

TEST_P(HttpTest, BodyOverLimitGets413WithJsonError) {
    ServerLimits limits;
    limits.max_body_bytes = 1024;
    TestServer server(limits, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response =
        run(ioc, client.request(http::verb::post, server.url(), {}, std::string(64 * 1024, 'x')));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 413u);
    EXPECT_NE(response->body.find("invalid_request_error"), std::string::npos);
}

TEST_P(HttpTest, HandlerThrowingBeforeWritingGives500) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, server.url(), {{"x-throw", "before"}}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 500u);
}

TEST_P(HttpTest, HandlerThrowingMidStreamClosesTheConnection) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "3"}, {"x-throw", "after"}}));
    EXPECT_EQ(result.status, 200u);
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::connection_error));
}

TEST_P(HttpTest, AbortMidStreamIsAConnectionErrorForTheClient) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "3"}, {"x-abort", "1"}}));
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::connection_error));
    EXPECT_EQ(result.body(), "chunk-0\n");
    EXPECT_EQ(client.idle_connections(), 0u);
}

asio::awaitable<Result<std::size_t>> read_one_then_cancel(HttpClient* client, Url url) {
    // A named list: GCC 12 rejects braced temporaries inside a co_await expression.
    const RequestHeaders headers{{"x-chunks", "2"}, {"x-stall", "5000"}};
    auto opened = co_await client->open(http::verb::get, url, headers, "");
    if (!opened) co_return opened.error();
    auto& response = **opened;
    auto piece = co_await response.read_some();
    if (!piece) co_return piece.error();
    std::size_t n = piece->size();
    response.cancel();
    auto after = co_await response.read_some();
    if (after) co_return Error(Errc::internal, "read after cancel succeeded");
    if (after.error().code != make_error_code(Errc::cancelled)) co_return after.error();
    co_return n;
}

TEST_P(HttpTest, CancelClosesTheSocketAndTheServerSeesTheClientGo) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto start = std::chrono::steady_clock::now();
    auto n = run(ioc, read_one_then_cancel(&client, server.url()));
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(*n, std::string("chunk-0\n").size());
    EXPECT_TRUE(
        wait_for([] { return observed().client_gone.load(); }, std::chrono::milliseconds(3000)));
    // The handler was cancelled, not left to sit out its 5 s stall.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(4000));
    EXPECT_TRUE(wait_for([&] { return server.server().active_connections() == 0; },
                         std::chrono::milliseconds(3000)));
}

// The peer watch costs a syscall, so only handlers that run past the sweep period (10-20 ms)
// get one (the test above: a client leaving such a handler is noticed at once).
TEST_P(HttpTest, OnlyHandlersThatRunLongHaveTheirPeerWatched) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    for (int i = 0; i < 20; ++i) {
        auto quick = run(ioc, get(&client, server.url("/quick"), {}));
        ASSERT_TRUE(quick) << quick.error().message;
    }
    // Each takes well under a millisecond; a loaded machine may stall one past a period.
    EXPECT_LT(server.server().peer_watches_started(), 3u);
    // A stalled one may still be due at the next tick: let two periods pass first.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const auto before = server.server().peer_watches_started();
    auto slow = run(ioc, get(&client, server.url("/slow"), {{"x-delay-headers", "300"}}));
    ASSERT_TRUE(slow) << slow.error().message;
    EXPECT_EQ(server.server().peer_watches_started(), before + 1);
}

// A server handler's client that hangs up while the handler is not waiting on a socket (its
// read just completed, or it has not started one) emits terminal cancellation with nothing
// pending to cancel. The next read must still see it: read_all went on reading the upstream
// body to its end (docs/NOTES.md "Asio and coroutine traps").
asio::awaitable<Result<std::string>> cancelled_between_reads(HttpClient* client, Url url,
                                                             asio::cancellation_signal* signal) {
    co_await asio::this_coro::throw_if_cancelled(false);  // as Gateway::handle
    const RequestHeaders headers{{"x-chunks", "2"}, {"x-stall", "3000"}};
    auto opened = co_await client->open(http::verb::get, url, headers, "");
    if (!opened) co_return opened.error();
    signal->emit(asio::cancellation_type::terminal);  // nothing is pending right now
    co_return co_await (*opened)->read_all(1 << 20);
}

TEST_P(HttpTest, TerminalCancellationBetweenReadsEndsReadAll) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    asio::cancellation_signal signal;
    std::optional<Result<std::string>> result;
    const auto start = std::chrono::steady_clock::now();
    asio::co_spawn(ioc, cancelled_between_reads(&client, server.url(), &signal),
                   asio::bind_cancellation_slot(signal.slot(),
                                                [&](std::exception_ptr e, Result<std::string> r) {
                                                    if (e) std::rethrow_exception(e);
                                                    result.emplace(std::move(r));
                                                }));
    ioc.run();
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(*result) << "read the whole body: " << **result;
    EXPECT_EQ(result->error().code, make_error_code(Errc::cancelled));
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::milliseconds(2000));  // not the 3 s stall
    EXPECT_EQ(client.idle_connections(), 0u);    // a half-read connection is not pooled
    EXPECT_TRUE(
        wait_for([] { return observed().client_gone.load(); }, std::chrono::milliseconds(3000)));
}

TEST_P(HttpTest, ConnectionRefusedIsConnectFailed) {
    std::uint16_t port = 0;
    {
        tcp::acceptor probe(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        port = probe.local_endpoint().port();
    }
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, Url{"http", "127.0.0.1", port, "/"}, {}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::connect_failed));
    EXPECT_NE(response.error().message.find("127.0.0.1:" + std::to_string(port)),
              std::string::npos);
}

TEST_P(HttpTest, StalePooledConnectionIsReplacedByAFreshOne) {
    ServerLimits limits;
    limits.idle_timeout = std::chrono::milliseconds(50);
    TestServer server(limits, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto first = run(ioc, get(&client, server.url(), {}));
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_TRUE(wait_for([&] { return server.server().active_connections() == 0; },
                         std::chrono::milliseconds(3000)));
    auto second = run(ioc, get(&client, server.url(), {}));
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(second->status, 200u);
    EXPECT_FALSE(second->timings.reused_connection);
}

// A peer that answers garbage: the client reports a protocol error.
asio::awaitable<Result<HttpClient::Response>> post(HttpClient* client, Url url) {
    co_return co_await client->request(http::verb::post, url, {}, "body");
}

// A connection idle for a second or more is peeked before reuse (kTrustedIdle): one the
// server closed is replaced before the POST is written, without a retry.
TEST_P(HttpTest, PooledConnectionIdleOverASecondIsCheckedBeforeAPost) {
    ServerLimits limits;
    limits.idle_timeout = std::chrono::milliseconds(50);
    TestServer server(limits, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto first = run(ioc, post(&client, server.url()));
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_EQ(client.idle_connections(), 1u);
    ASSERT_TRUE(wait_for([&] { return server.server().active_connections() == 0; },
                         std::chrono::milliseconds(3000)));
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    auto second = run(ioc, post(&client, server.url()));
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_EQ(second->status, 200u);
    EXPECT_FALSE(second->timings.reused_connection);
}

// A reused connection the server closed before answering (it closes after every response,
// while announcing keep-alive, as llama-server does after a stream) never carried the
// request: a POST is retried once on a fresh connection, and the host's later reuses are
// checked first.
TEST_P(HttpTest, APostOnAConnectionClosedBeforeAnsweringIsRetriedOnce) {
    testing::RawServerPolicy policy;
    policy.close_after_response = true;
    testing::RawHttpServer server(policy, [](const testing::RawRequest&) {
        return testing::RawResponse{
            "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Type: text/plain\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" +
            testing::chunked({"data: a\n\n", "data: b\n\n"})};
    });
    const Url url{"http", "127.0.0.1", server.port(), "/v1/chat/completions"};
    HttpClient client(ioc.get_executor());
    for (int i = 0; i < 10; ++i) {
        auto response = run(ioc, post(&client, url));
        ASSERT_TRUE(response) << "request " << i << ": " << response.error().message;
        EXPECT_EQ(response->body, "data: a\n\ndata: b\n\n");
    }
    EXPECT_EQ(server.requests(), 10);
    EXPECT_EQ(server.connections(), 10);
}

// A connection idle for less than a second is reused unchecked: a server that closed it
// (an idle timeout of a few hundred ms) costs a retry, never a failed POST.
TEST_P(HttpTest, APostOnAConnectionClosedWhileIdleIsRetried) {
    testing::RawServerPolicy policy;
    policy.idle_close = std::chrono::milliseconds(100);
    testing::RawHttpServer server(policy, [](const testing::RawRequest&) {
        return testing::RawResponse{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    });
    const Url url{"http", "127.0.0.1", server.port(), "/"};
    HttpClient client(ioc.get_executor());
    for (int i = 0; i < 3; ++i) {
        auto response = run(ioc, post(&client, url));
        ASSERT_TRUE(response) << "request " << i << ": " << response.error().message;
        EXPECT_EQ(response->body, "ok");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(server.requests(), 3);
}

// A server that half-closes a connection idle in the pool and goes on reading (Apache's
// lingering close) sends no reset when the connection is reused within kTrustedIdle: the
// request's first read, waiting for epoll (AwaitedBuffer), ends at the headers timeout. That
// host's later reuses are then peeked, which sees the FIN: a fresh connection serves them.
TEST_P(HttpTest, AReuseHalfClosedWhileIdleTimesOutOnceThenReusesArePeeked) {
    testing::RawServerPolicy policy;
    policy.idle_close = std::chrono::milliseconds(100);
    policy.idle_close_lingers = true;
    testing::RawHttpServer server(policy, [](const testing::RawRequest&) {
        return testing::RawResponse{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
    });
    const Url url{"http", "127.0.0.1", server.port(), "/"};
    ClientOptions options;
    options.headers_timeout = std::chrono::milliseconds(1000);
    HttpClient client(ioc.get_executor(), options);
    // Sits in the pool until the server half-closes it; the reactor then takes the FIN's
    // edge with no read pending, as a busy gateway's does.
    const auto pool_one_and_let_it_be_half_closed = [&](int closes) {
        auto response = run(ioc, post(&client, url));
        ASSERT_TRUE(response) << response.error().message;
        EXPECT_EQ(response->body, "ok");
        ASSERT_TRUE(wait_for([&] { return server.lingering_closes() == closes; },
                             std::chrono::milliseconds(3000)));
        const auto work = asio::make_work_guard(ioc);  // poll() polls epoll only with work
        ioc.restart();
        ioc.poll();
    };
    pool_one_and_let_it_be_half_closed(1);
    auto stalled = run(ioc, post(&client, url));
    ASSERT_FALSE(stalled);
    EXPECT_EQ(stalled.error().code, make_error_code(Errc::timeout_headers))
        << stalled.error().message;

    pool_one_and_let_it_be_half_closed(2);
    auto peeked = run(ioc, post(&client, url));
    ASSERT_TRUE(peeked) << peeked.error().message;
    EXPECT_FALSE(peeked->timings.reused_connection);
    EXPECT_EQ(server.requests(), 3);  // not the stalled one, which the lingering server dropped
}

// An attempt that got response bytes is a failure of that request, never retried: the
// server may have acted on it.
TEST_P(HttpTest, AConnectionClosedMidAnswerIsNotRetried) {
    std::atomic<int> answered{0};
    testing::RawHttpServer server({}, [&](const testing::RawRequest&) {
        if (answered++ == 0)
            return testing::RawResponse{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"};
        return testing::RawResponse{"HTTP/1.1 200 OK\r\nContent-Le", true};
    });
    const Url url{"http", "127.0.0.1", server.port(), "/"};
    HttpClient client(ioc.get_executor());
    auto first = run(ioc, post(&client, url));
    ASSERT_TRUE(first) << first.error().message;
    auto second = run(ioc, post(&client, url));
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().code, make_error_code(Errc::connection_error))
        << second.error().message;
    EXPECT_EQ(server.requests(), 2);
}

TEST_P(HttpTest, MalformedResponseIsProtocolError) {
    asio::io_context server_ioc;
    tcp::acceptor acceptor(server_ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = acceptor.local_endpoint().port();
    std::thread peer([&] {
        tcp::socket socket = acceptor.accept();
        char buf[1024];
        boost::system::error_code ec;
        socket.read_some(asio::buffer(buf), ec);
        asio::write(socket, asio::buffer(std::string_view("HTTP/1.1 2x0 OK\r\n\r\n")), ec);
        socket.shutdown(tcp::socket::shutdown_both, ec);
    });
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, Url{"http", "127.0.0.1", port, "/"}, {}));
    peer.join();
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::protocol_error));
}

// Reads from a raw socket until the peer closes; a peer that has not closed within 3 s fails
// the test (plain recv() with a receive timeout: Asio's blocking read polls past it).
std::string read_until_close(tcp::socket& socket) {
    const int fd = socket.native_handle();
    const timeval three_seconds{3, 0};
    EXPECT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &three_seconds, sizeof three_seconds), 0);
    std::string out;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<std::size_t>(n));
    EXPECT_EQ(n, 0) << "the peer did not close the connection: " << std::strerror(errno);
    return out;
}

TEST_P(HttpTest, PipelinedRequestsAreAnsweredInOrder) {
    TestServer server({}, steered_handler, GetParam());
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(std::string_view(
                            "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
                            "GET /second HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
    const std::string all = read_until_close(socket);
    const auto first = all.find("x-echo-target: /first");
    const auto second = all.find("x-echo-target: /second");
    ASSERT_NE(first, std::string::npos) << all;
    ASSERT_NE(second, std::string::npos) << all;
    EXPECT_LT(first, second);
}

TEST_P(HttpTest, Http10ClientGetsAnUnframedStreamEndedByClose) {
    TestServer server({}, steered_handler, GetParam());
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(std::string_view("GET / HTTP/1.0\r\nx-chunks: 3\r\n\r\n")));
    const std::string all = read_until_close(socket);
    EXPECT_EQ(all.find("chunked"), std::string::npos) << all;
    EXPECT_NE(all.find("\r\n\r\nchunk-0\nchunk-1\nchunk-2\n"), std::string::npos) << all;
}

// A client that half-closes after its request (the FIN often comes with the request's bytes)
// gets its whole response, and its connection is closed: at once or, where a short read
// drained the socket before the FIN was seen, at the idle timeout (src/net/README.md).
TEST_P(HttpTest, HalfClosedClientGetsItsResponseAndItsConnectionClosed) {
    ServerLimits limits;
    limits.idle_timeout = std::chrono::milliseconds(100);
    TestServer server(limits, steered_handler, GetParam());
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(std::string_view("GET /half HTTP/1.1\r\nHost: x\r\n\r\n")));
    socket.shutdown(tcp::socket::shutdown_send);
    const std::string all = read_until_close(socket);  // fails if the server never closes
    EXPECT_TRUE(all.starts_with("HTTP/1.1 200")) << all;
    EXPECT_NE(all.find("x-echo-target: /half"), std::string::npos) << all;
    EXPECT_TRUE(all.ends_with("\r\n\r\nok")) << all;
}

TEST_P(HttpTest, ExpectContinueGetsA100BeforeTheBody) {
    TestServer server({}, steered_handler, GetParam());
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(std::string_view(
                            "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                            "Content-Length: 4\r\nConnection: close\r\n\r\n")));
    char buf[64];
    const std::size_t n = socket.read_some(asio::buffer(buf));
    EXPECT_EQ(std::string_view(buf, n).substr(0, 12), "HTTP/1.1 100");
    asio::write(socket, asio::buffer(std::string_view("body")));
    const std::string rest = read_until_close(socket);
    EXPECT_NE(rest.find("\r\n\r\nbody"), std::string::npos) << rest;
}

// A body framed by connection close (no Content-Length, not chunked) is read to the end
// and the connection is not pooled.
TEST_P(HttpTest, UntilCloseBodyIsReadToTheEnd) {
    asio::io_context server_ioc;
    tcp::acceptor acceptor(server_ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = acceptor.local_endpoint().port();
    std::thread peer([&] {
        tcp::socket socket = acceptor.accept();
        char buf[1024];
        boost::system::error_code ec;
        socket.read_some(asio::buffer(buf), ec);
        asio::write(
            socket,
            asio::buffer(std::string_view("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello ")),
            ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        asio::write(socket, asio::buffer(std::string_view("world")), ec);
        socket.shutdown(tcp::socket::shutdown_both, ec);
    });
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, Url{"http", "127.0.0.1", port, "/"}, {}));
    peer.join();
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->body, "hello world");
    EXPECT_EQ(client.idle_connections(), 0u);
}

TEST_P(HttpTest, HeadGetsTheHeadOnlyAndKeepsTheConnection) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    for (const char* chunks : {"", "3"}) {
        RequestHeaders headers;
        if (*chunks) headers.emplace_back("x-chunks", chunks);
        auto response = run(ioc, client.request(http::verb::head, server.url("/h"), headers, ""));
        ASSERT_TRUE(response) << response.error().message;
        EXPECT_EQ(response->status, 200u);
        EXPECT_TRUE(response->body.empty());
    }
    auto after = run(ioc, get(&client, server.url("/after"), {}));
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_EQ(after->body, "ok");
    EXPECT_TRUE(after->timings.reused_connection);
}

TEST_P(HttpTest, GracefulShutdownLetsAnInFlightStreamFinish) {
    auto server = std::make_unique<TestServer>(ServerLimits{}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    StreamResult result;
    std::thread reader([&] {
        asio::io_context own;
        HttpClient c(own.get_executor());
        result =
            run(own, stream_get(&c, server->url(), {{"x-chunks", "10"}, {"x-chunk-delay", "30"}}));
    });
    ASSERT_TRUE(
        wait_for([] { return observed().requests.load() == 1; }, std::chrono::milliseconds(3000)));
    server->server().stop(std::chrono::milliseconds(5000));
    reader.join();
    ASSERT_FALSE(result.error) << result.error->message;
    EXPECT_EQ(result.pieces.size() >= 1, true);
    EXPECT_NE(result.body().find("chunk-9\n"), std::string::npos);
    // No longer accepting.
    auto after = run(ioc, get(&client, server->url(), {}));
    EXPECT_FALSE(after);
}

TEST_P(HttpTest, ShutdownGraceEndsALongStream) {
    auto server = std::make_unique<TestServer>(ServerLimits{}, steered_handler, GetParam());
    StreamResult result;
    std::thread reader([&] {
        asio::io_context own;
        HttpClient c(own.get_executor());
        result = run(own, stream_get(&c, server->url(), {{"x-chunks", "2"}, {"x-stall", "20000"}}));
    });
    ASSERT_TRUE(
        wait_for([] { return observed().requests.load() == 1; }, std::chrono::milliseconds(3000)));
    auto start = std::chrono::steady_clock::now();
    server->server().stop(std::chrono::milliseconds(100));
    reader.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5000));
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::connection_error));
}

TEST_P(HttpTest, FirstChunkLeavesWithTheHead) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response =
        run(ioc, get(&client, server.url("/"), {{"x-chunks", "3"}, {"x-first-with-head", "1"}}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->status, 200u);
    EXPECT_EQ(response->body, "chunk-0\nchunk-1\nchunk-2\n");
    EXPECT_EQ(client.idle_connections(), 1u);  // the chunked framing ended cleanly
}

TEST_P(HttpTest, LastChunkLeavesWithTheEndOfTheBody) {
    TestServer server({}, steered_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto response =
        run(ioc, get(&client, server.url("/"), {{"x-chunks", "3"}, {"x-last-with-end", "1"}}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->body, "chunk-0\nchunk-1\nchunk-2\n");
    EXPECT_EQ(client.idle_connections(), 1u);  // the chunked framing ended cleanly

    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket,
                asio::buffer(std::string_view("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                              "x-chunks: 2\r\nx-last-with-end: 1\r\n\r\n")));
    const std::string all = read_until_close(socket);
    EXPECT_TRUE(all.ends_with("\r\n8\r\nchunk-0\n\r\n8\r\nchunk-1\n\r\n0\r\n\r\n")) << all;

    tcp::socket old_client(ioc);
    old_client.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(old_client, asio::buffer(std::string_view(
                                "GET / HTTP/1.0\r\nx-chunks: 2\r\nx-last-with-end: 1\r\n\r\n")));
    const std::string unframed = read_until_close(old_client);
    EXPECT_TRUE(unframed.ends_with("\r\n\r\nchunk-0\nchunk-1\n")) << unframed;
}

TEST_P(HttpTest, FirstChunkLeavesWithTheHeadForHttp10Too) {
    TestServer server({}, steered_handler, GetParam());
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(std::string_view(
                            "GET / HTTP/1.0\r\nx-chunks: 2\r\nx-first-with-head: 1\r\n\r\n")));
    const std::string all = read_until_close(socket);
    EXPECT_EQ(all.find("chunked"), std::string::npos) << all;
    EXPECT_NE(all.find("\r\n\r\nchunk-0\nchunk-1\n"), std::string::npos) << all;
}

// A chunk far larger than the loopback socket's send buffer: write_chunk's non-blocking
// sendmsg takes part of it and the async write must continue exactly where it stopped.
std::string big_pattern() {
    std::string bytes(8 << 20, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return bytes;
}

asio::awaitable<void> big_chunk_handler(Request&, ResponseWriter& writer) {
    co_await writer.start_stream(http::status::ok, "application/octet-stream");
    const std::string bytes = big_pattern();
    co_await writer.write_chunk("head-");  // small: written whole by the fast path
    co_await writer.write_chunk(bytes);
    co_await writer.finish();
}

TEST_P(HttpTest, ChunkLargerThanTheSocketBufferArrivesWhole) {
    TestServer server({}, big_chunk_handler, GetParam());
    HttpClient client(ioc.get_executor());
    auto result = run(ioc, stream_get(&client, server.url("/big"), {}));
    ASSERT_FALSE(result.error) << result.error->message;
    const std::string body = result.body();
    ASSERT_EQ(body.size(), 5 + (8u << 20));
    EXPECT_EQ(body.substr(0, 5), "head-");
    EXPECT_TRUE(body.substr(5) == big_pattern());  // not EXPECT_EQ: 8 MiB in a failure message
    EXPECT_EQ(client.idle_connections(), 1u);      // the chunked framing ended cleanly
}

std::mutex handler_threads_mutex;
std::set<std::thread::id> handler_threads;

asio::awaitable<void> thread_recording_handler(Request& request, ResponseWriter& writer) {
    {
        std::lock_guard lock(handler_threads_mutex);
        handler_threads.insert(std::this_thread::get_id());
    }
    co_await steered_handler(request, writer);
}

// Two workers of one thread each serve `connections` connections, one after another; the
// threads that ran the handler are left in handler_threads. After stop(), the port refuses.
void serve_on_two_workers(ServerLimits limits, int connections) {
    asio::io_context ioc;
    handler_threads.clear();
    asio::io_context first(1);
    asio::io_context second(1);
    auto guard_first = asio::make_work_guard(first);
    auto guard_second = asio::make_work_guard(second);
    HttpServer server(first, thread_recording_handler, limits, {&first, &second});
    ASSERT_TRUE(server.listen("127.0.0.1", 0));
    server.start();
    std::thread first_thread([&] { first.run(); });
    std::thread second_thread([&] { second.run(); });

    std::string expected;
    for (int i = 0; i < 20; ++i) expected += "chunk-" + std::to_string(i) + "\n";
    for (int connection = 0; connection < connections; ++connection) {
        HttpClient client(ioc.get_executor());  // a new client: a new connection each time
        auto result = run(ioc, stream_get(&client, Url{"http", "127.0.0.1", server.port(), "/s"},
                                          {{"x-chunks", "20"}, {"x-chunk-delay", "1"}}));
        ASSERT_FALSE(result.error) << result.error->message;
        EXPECT_EQ(result.body(), expected);
    }
    server.stop(std::chrono::milliseconds(0));
    guard_first.reset();
    guard_second.reset();
    first_thread.join();
    second_thread.join();
    EXPECT_EQ(server.active_connections(), 0u);
    HttpClient late(ioc.get_executor());
    auto refused = run(ioc, stream_get(&late, Url{"http", "127.0.0.1", server.port(), "/s"}, {}));
    ASSERT_TRUE(refused.error) << "every acceptor is closed after stop()";
    EXPECT_EQ(refused.error->code, make_error_code(Errc::connect_failed));
}

// Its own servers: not one of the parameterised HttpTest cases.
TEST(HttpWorkers, ConnectionsGoRoundRobinToTheWorkersOwnThreads) {
    serve_on_two_workers({}, 4);
    std::lock_guard lock(handler_threads_mutex);
    EXPECT_EQ(handler_threads.size(), 2u);  // both workers, neither the test's thread
    EXPECT_EQ(handler_threads.count(std::this_thread::get_id()), 0u);
}

TEST(HttpWorkers, EachWorkerAcceptsOnItsOwnReusePortSocket) {
    ServerLimits limits;
    limits.accept_per_worker = true;
    // The kernel picks the socket by the connection's address hash: 24 connections all on
    // one of two sockets would happen once in 2^23 runs.
    serve_on_two_workers(limits, 24);
    std::lock_guard lock(handler_threads_mutex);
    EXPECT_EQ(handler_threads.size(), 2u);
    EXPECT_EQ(handler_threads.count(std::this_thread::get_id()), 0u);
}

INSTANTIATE_TEST_SUITE_P(Threads, HttpTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& case_info) {
                             return case_info.param == 1 ? std::string("One") : std::string("Two");
                         });

}  // namespace
}  // namespace tokenradar::net::test
