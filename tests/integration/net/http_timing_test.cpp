// Timing-sensitive client/server tests (ctest label `timing`, skipped under ASan): chunk
// gaps, every client timeout phase, the server's slow-header and keep-alive timeouts.

#include "test_support.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/http_server.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tokenradar::net::test {
namespace {

namespace http = beast::http;
using asio::ip::tcp;
using std::chrono::milliseconds;

class HttpTimingTest : public ::testing::Test {
  protected:
    asio::io_context ioc;
};

TEST_F(HttpTimingTest, ChunksReachTheClientAsTheServerWritesThem) {
    TestServer server;
    HttpClient client(ioc.get_executor());
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "4"}, {"x-chunk-delay", "100"}}));
    ASSERT_FALSE(result.error) << result.error->message;
    ASSERT_EQ(result.pieces.size(), 4u);  // one piece per chunk: nothing was coalesced
    for (std::size_t i = 1; i < result.pieces.size(); ++i) {
        const auto gap = result.pieces[i].at_ns - result.pieces[i - 1].at_ns;
        EXPECT_GE(gap, 80'000'000) << "piece " << i;
    }
    EXPECT_LT(result.pieces[0].at_ns - result.timings.t_headers, 50'000'000);
}

TEST_F(HttpTimingTest, ConnectTimeoutAgainstAFullBacklog) {
    // A listener that never accepts, with its accept queue filled: further SYNs are dropped.
    tcp::acceptor listener(ioc);
    listener.open(tcp::v4());
    listener.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    listener.listen(0);
    const auto port = listener.local_endpoint().port();
    // Raw non-blocking connects: Asio's synchronous connect would wait for completion.
    std::vector<tcp::socket> fillers;
    for (int i = 0; i < 4; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        ASSERT_GE(fd, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
        fillers.emplace_back(ioc, tcp::v4(), fd);  // owns (and closes) the descriptor
    }
    std::this_thread::sleep_for(milliseconds(50));
    ClientOptions options;
    options.connect_timeout = milliseconds(300);
    options.headers_timeout = milliseconds(2000);
    HttpClient client(ioc.get_executor(), options);
    const auto start = std::chrono::steady_clock::now();
    auto response = run(ioc, get(&client, Url{"http", "127.0.0.1", port, "/"}, {}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::timeout_connect))
        << response.error().message;
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
}

TEST_F(HttpTimingTest, HeadersTimeout) {
    TestServer server;
    ClientOptions options;
    options.headers_timeout = milliseconds(200);
    HttpClient client(ioc.get_executor(), options);
    auto response = run(ioc, get(&client, server.url(), {{"x-delay-headers", "3000"}}));
    ASSERT_FALSE(response);
    EXPECT_EQ(response.error().code, make_error_code(Errc::timeout_headers))
        << response.error().message;
}

TEST_F(HttpTimingTest, FirstByteTimeout) {
    TestServer server;
    ClientOptions options;
    options.first_byte_timeout = milliseconds(200);
    HttpClient client(ioc.get_executor(), options);
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "2"}, {"x-delay-first", "3000"}}));
    EXPECT_EQ(result.status, 200u);
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::timeout_first_byte))
        << result.error->message;
    EXPECT_TRUE(result.pieces.empty());
}

TEST_F(HttpTimingTest, IdleTimeoutBetweenChunks) {
    TestServer server;
    ClientOptions options;
    options.idle_timeout = milliseconds(200);
    HttpClient client(ioc.get_executor(), options);
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "3"}, {"x-chunk-delay", "3000"}}));
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::timeout_idle)) << result.error->message;
    EXPECT_EQ(result.body(), "chunk-0\n");
}

TEST_F(HttpTimingTest, TotalTimeoutOnAStreamThatNeverGoesIdle) {
    TestServer server;
    ClientOptions options;
    options.total_timeout = milliseconds(300);
    HttpClient client(ioc.get_executor(), options);
    auto result =
        run(ioc, stream_get(&client, server.url(), {{"x-chunks", "200"}, {"x-chunk-delay", "20"}}));
    ASSERT_TRUE(result.error);
    EXPECT_EQ(result.error->code, make_error_code(Errc::timeout_total)) << result.error->message;
    EXPECT_GT(result.pieces.size(), 3u);
}

TEST_F(HttpTimingTest, SlowHeaderClientIsDisconnected) {
    ServerLimits limits;
    limits.header_timeout = milliseconds(300);
    TestServer server(limits);
    tcp::socket socket(ioc);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    const auto start = std::chrono::steady_clock::now();
    asio::write(socket, asio::buffer(std::string_view("GET / HTTP/1.1\r\n")));
    boost::system::error_code ec;
    // One header byte every 50 ms: never completes, must be cut at ~300 ms.
    while (!ec && std::chrono::steady_clock::now() - start < milliseconds(3000)) {
        asio::write(socket, asio::buffer(std::string_view("a")), ec);
        std::this_thread::sleep_for(milliseconds(50));
        if (server.server().active_connections() == 0) break;
    }
    EXPECT_EQ(server.server().active_connections(), 0u);
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
}

TEST_F(HttpTimingTest, IdleKeepAliveConnectionIsClosed) {
    ServerLimits limits;
    limits.idle_timeout = milliseconds(200);
    TestServer server(limits);
    HttpClient client(ioc.get_executor());
    auto response = run(ioc, get(&client, server.url(), {}));
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(server.server().active_connections(), 1u);
    EXPECT_TRUE(
        wait_for([&] { return server.server().active_connections() == 0; }, milliseconds(1500)));
}

}  // namespace
}  // namespace tokenradar::net::test
