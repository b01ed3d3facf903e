#include "../../../src/net/sync_io.hpp"

#include <dlfcn.h>
#include <sys/socket.h>

#include <tokenradar/net/request_reader.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

// The recv() calls on one descriptor: this test binary's recv() counts them and calls the
// next definition (libc's, or a sanitizer's interceptor of it).
namespace {
std::atomic<int> g_counted_fd{-1};
std::atomic<int> g_recv_calls{0};
}  // namespace

extern "C" ssize_t recv(int fd, void* data, size_t size, int flags) {
    using Recv = ssize_t (*)(int, void*, size_t, int);
    static const auto next_recv = reinterpret_cast<Recv>(dlsym(RTLD_NEXT, "recv"));
    if (fd == g_counted_fd.load()) ++g_recv_calls;
    return next_recv(fd, data, size, flags);
}

namespace tokenradar::net::detail {
namespace {

// A coroutine's exception leaves io_context::run() and fails the test instead of vanishing.
void rethrow(const std::exception_ptr& e) {
    if (e) std::rethrow_exception(e);
}

namespace http = beast::http;
using asio::ip::tcp;

void put(beast::flat_buffer& buffer, std::string_view bytes) {
    auto room = buffer.prepare(bytes.size());
    std::memcpy(room.data(), bytes.data(), bytes.size());
    buffer.commit(bytes.size());
}

constexpr std::string_view kRequest =
    "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
    "GET /next HTTP/1.1\r\n";

TEST(ParseBuffered, WholeMessageNeedsNoRead) {
    beast::flat_buffer buffer;
    put(buffer, kRequest);
    RequestParser parser;
    boost::system::error_code ec;
    EXPECT_TRUE(parse_buffered(parser, buffer, ParseUntil::message, ec));
    EXPECT_FALSE(ec);
    ASSERT_TRUE(parser.is_done());
    EXPECT_EQ(parser.get().body(), "hello");
    EXPECT_EQ(std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()),
              "GET /next HTTP/1.1\r\n");  // the next request's bytes stay
}

TEST(ParseBuffered, HeaderOnlyStopsAtTheHeader) {
    beast::flat_buffer buffer;
    put(buffer, kRequest);
    RequestParser parser;
    boost::system::error_code ec;
    EXPECT_TRUE(parse_buffered(parser, buffer, ParseUntil::header, ec));
    EXPECT_TRUE(parser.is_header_done());
    EXPECT_FALSE(parser.is_done());
    EXPECT_EQ(parser.content_length().value_or(0), 5u);
}

TEST(ParseBuffered, PartialMessageAsksForARead) {
    beast::flat_buffer buffer;
    put(buffer, "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhe");
    RequestParser parser;
    boost::system::error_code ec;
    EXPECT_FALSE(parse_buffered(parser, buffer, ParseUntil::message, ec));
    EXPECT_FALSE(ec);
    EXPECT_TRUE(parser.is_header_done());
    put(buffer, "llo");  // what the asynchronous read would then bring
    EXPECT_TRUE(parse_buffered(parser, buffer, ParseUntil::message, ec));
    EXPECT_EQ(parser.get().body(), "hello");
}

TEST(ParseBuffered, EmptyBufferAsksForARead) {
    beast::flat_buffer buffer;
    RequestParser parser;
    boost::system::error_code ec;
    EXPECT_FALSE(parse_buffered(parser, buffer, ParseUntil::header, ec));
    EXPECT_FALSE(ec);
}

TEST(ParseBuffered, LimitsFailAsBeastsReadWould) {
    beast::flat_buffer buffer;
    put(buffer, "POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
    RequestParser parser;
    ServerLimits limits;
    limits.max_body_bytes = 10;
    configure_request_parser(parser, limits);
    boost::system::error_code ec;
    EXPECT_TRUE(parse_buffered(parser, buffer, ParseUntil::message, ec));
    EXPECT_EQ(ec, http::error::body_limit);
    EXPECT_EQ(classify_request_error(ec), Errc::payload_too_large);
}

struct SocketPair {
    asio::io_context ioc;
    tcp::socket a{ioc};
    tcp::socket b{ioc};
    SocketPair() {
        tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        a.connect(acceptor.local_endpoint());
        acceptor.accept(b);
        a.non_blocking(true);
    }
};

TEST(WriteNow, SmallWriteCompletesInline) {
    SocketPair p;
    const std::string bytes = "ping";
    auto buffer = asio::buffer(bytes);
    beast::buffers_suffix<asio::const_buffer> rest(buffer);
    boost::system::error_code ec;
    EXPECT_TRUE(write_now(p.a, rest, ec));
    EXPECT_FALSE(ec);
    std::string got(4, '\0');
    asio::read(p.b, asio::buffer(got));
    EXPECT_EQ(got, "ping");
}

TEST(WriteNow, WhatTheSocketCannotTakeIsLeftForTheAsyncWrite) {
    SocketPair p;
    const std::string bytes(16 * 1024 * 1024, 'x');  // more than any socket buffer holds
    auto buffer = asio::buffer(bytes);
    beast::buffers_suffix<asio::const_buffer> rest(buffer);
    boost::system::error_code ec;
    EXPECT_FALSE(write_now(p.a, rest, ec));
    EXPECT_FALSE(ec);
    const std::size_t left = beast::buffer_bytes(rest);
    EXPECT_GT(left, 0u);
    EXPECT_LT(left, bytes.size());
    // The rest goes out asynchronously from where the inline write stopped.
    std::size_t written = 0;
    asio::async_write(p.a, rest, [&](boost::system::error_code, std::size_t n) { written = n; });
    std::thread runner([&] { p.ioc.run(); });
    std::string got(bytes.size(), '\0');
    asio::read(p.b, asio::buffer(got));
    runner.join();
    EXPECT_EQ(written, left);
    EXPECT_EQ(got, bytes);
}

// The recv() calls of two reads in turn, each for bytes that are not there yet when it
// starts, as a server waits for a request: the first read, "abc" written, the second read
// started and polled before its bytes come, then "def" written. What the second read got
// goes to `second`.
template <class Buffer>
int recv_calls_for_two_reads(std::string& second) {
    SocketPair p;
    g_counted_fd = p.a.native_handle();
    g_recv_calls = 0;
    char data[64];
    std::size_t got = 0;
    auto read = [&] {
        p.a.async_read_some(Buffer(asio::buffer(data)),
                            [&](boost::system::error_code, std::size_t n) { got = n; });
    };
    read();
    p.b.write_some(asio::buffer(std::string_view("abc")));  // short of the 64 asked for
    p.ioc.run();
    EXPECT_EQ(got, 3u);
    p.ioc.restart();
    read();
    p.ioc.poll();  // the read is queued; nothing to read yet
    p.b.write_some(asio::buffer(std::string_view("def")));
    p.ioc.run();
    second.assign(data, got);
    g_counted_fd = -1;
    return g_recv_calls.load();
}

TEST(DrainingBuffer, AShortReadLeavesTheNextWaitToEpoll) {
    // Asio's receive: each read tries the socket first, and finds nothing (EAGAIN) before it
    // waits: 2 calls per read.
    std::string second;
    EXPECT_EQ(recv_calls_for_two_reads<asio::mutable_buffer>(second), 4);
    EXPECT_EQ(second, "def");
    // Draining: the short read marked the socket drained, so the second read waited for epoll
    // without a call; the first read's try was on a socket not yet marked.
    EXPECT_EQ(recv_calls_for_two_reads<DrainingBuffer>(second), 3);
    EXPECT_EQ(second, "def");
}

// One read from p.a, started after `before` (if any) was written to it and before `after` is:
// the bytes it got, its error, and the recv() calls it made.
struct OneRead {
    std::string got;
    boost::system::error_code ec;
    int recv_calls = 0;
};
template <class Buffer>
OneRead one_read(std::string_view before, std::string_view after, bool close_after) {
    SocketPair p;
    g_counted_fd = p.a.native_handle();
    g_recv_calls = 0;
    OneRead out;
    char data[64];
    if (!before.empty()) p.b.write_some(asio::buffer(before));
    p.a.async_read_some(Buffer(asio::buffer(data)),
                        [&](boost::system::error_code ec, std::size_t n) {
                            out.ec = ec;
                            out.got.assign(data, n);
                        });
    p.ioc.poll();  // the read starts, and waits unless its bytes are reported
    if (!after.empty()) p.b.write_some(asio::buffer(after));
    if (close_after) p.b.close();
    p.ioc.run();
    out.recv_calls = g_recv_calls.load();
    g_counted_fd = -1;
    return out;
}

TEST(AwaitedBuffer, TheReadWaitsForEpollWithoutTryingTheSocket) {
    // Asio's receive tries the socket as the read starts (EAGAIN), then again when epoll
    // reports the bytes; the awaited read makes only the second call.
    const auto asio_read = one_read<asio::mutable_buffer>("", "answer", false);
    EXPECT_EQ(asio_read.got, "answer");
    EXPECT_EQ(asio_read.recv_calls, 2);
    const auto awaited = one_read<AwaitedBuffer>("", "answer", false);
    EXPECT_EQ(awaited.got, "answer");
    EXPECT_FALSE(awaited.ec);
    EXPECT_EQ(awaited.recv_calls, 1);
}

TEST(AwaitedBuffer, BytesThatCameBeforeTheReadAreReadWhenEpollReportsThem) {
    // The answer came between the request and the read's start, with no poll in between (one
    // thread runs the io_context): epoll still holds its edge, so the read gets it.
    const auto awaited = one_read<AwaitedBuffer>("early", "", false);
    EXPECT_EQ(awaited.got, "early");
    EXPECT_FALSE(awaited.ec);
    EXPECT_EQ(awaited.recv_calls, 1);
}

TEST(AwaitedBuffer, ThePeersCloseIsEndOfFileAsWithAsiosReceive) {
    const auto awaited = one_read<AwaitedBuffer>("", "", true);
    EXPECT_EQ(awaited.ec, asio::error::eof);
    EXPECT_EQ(awaited.got, "");
    EXPECT_EQ(awaited.recv_calls, 1);
}

// read_until reads and parses straight from the socket what Beast's async_read_header and
// async_read would, with the same errors: both run on the same bytes, then the peer's close
// when the case says so, and must agree.
struct ReadCase {
    const char* name;
    std::string bytes;
    bool close_after;
    ParseUntil until;
    std::size_t max_buffer = 1 << 20;
    std::uint32_t header_limit = 8192;
    std::uint64_t body_limit = 1 << 20;
};

struct ReadOutcome {
    boost::system::error_code ec;
    bool header_done = false;
    bool done = false;
    std::string body;
    std::size_t left_in_buffer = 0;  // bytes after the message (the next one's)
};

template <class Reader>
ReadOutcome read_with(const ReadCase& c, Reader reader) {
    SocketPair p;
    p.b.write_some(asio::buffer(c.bytes));  // small: the socket buffer takes it at once
    if (c.close_after) p.b.shutdown(tcp::socket::shutdown_send);
    beast::flat_buffer buffer(c.max_buffer);
    http::response_parser<http::string_body> parser;
    parser.header_limit(c.header_limit);
    parser.body_limit(c.body_limit);
    ReadOutcome out;
    asio::co_spawn(p.ioc, reader(p.a, buffer, parser, out), rethrow);
    p.ioc.run();
    out.header_done = parser.is_header_done();
    out.done = parser.is_done();
    if (out.done) out.body = parser.get().body();
    out.left_in_buffer = buffer.size();
    return out;
}

asio::awaitable<void> read_ours(tcp::socket& socket, beast::flat_buffer& buffer,
                                http::response_parser<http::string_body>& parser, ParseUntil until,
                                ReadOutcome& out) {
    out.ec = co_await read_until(socket, buffer, parser, until, ShortRead::try_again);
}

asio::awaitable<void> read_beasts(tcp::socket& socket, beast::flat_buffer& buffer,
                                  http::response_parser<http::string_body>& parser,
                                  ParseUntil until, ReadOutcome& out) {
    if (until == ParseUntil::header) {
        auto [ec, n] = co_await http::async_read_header(socket, buffer, parser, use_nothrow);
        out.ec = ec;
    } else {
        auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_nothrow);
        out.ec = ec;
    }
}

TEST(ReadUntil, ReadsAndFailsAsBeastsReadDoes) {
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    const std::vector<ReadCase> cases = {
        {"whole response, head only", head + "hello", false, ParseUntil::header},
        {"whole response", head + "hello", false, ParseUntil::message},
        {"close before any byte", "", true, ParseUntil::header},
        {"close mid-head", "HTTP/1.1 200 OK\r\nContent-Le", true, ParseUntil::header},
        {"close mid-body", head + "hel", true, ParseUntil::message},
        {"body ended by the close", "HTTP/1.1 200 OK\r\n\r\nuntil close", true,
         ParseUntil::message},
        {"chunked body",
         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", false,
         ParseUntil::message},
        {"malformed status line", "HTTP/1.1 2x0 OK\r\n\r\n", false, ParseUntil::header},
        {"head larger than the buffer may grow",
         "HTTP/1.1 200 OK\r\nX-Long: " + std::string(300, 'a') + "\r\n\r\n", false,
         ParseUntil::header, 100},
        {"head over the header limit",
         "HTTP/1.1 200 OK\r\nX-Long: " + std::string(300, 'a') + "\r\n\r\n", false,
         ParseUntil::header, 1 << 20, 64},
        {"body over the body limit", head + "hello", false, ParseUntil::message, 1 << 20, 8192, 3},
        {"the next response's bytes stay buffered", head + "helloHTTP/1.1 204 No Content\r\n",
         false, ParseUntil::message},
    };
    for (const ReadCase& c : cases) {
        SCOPED_TRACE(c.name);
        const ReadOutcome ours =
            read_with(c, [&](tcp::socket& s, beast::flat_buffer& b,
                             http::response_parser<http::string_body>& parser,
                             ReadOutcome& out) { return read_ours(s, b, parser, c.until, out); });
        const ReadOutcome beasts =
            read_with(c, [&](tcp::socket& s, beast::flat_buffer& b,
                             http::response_parser<http::string_body>& parser,
                             ReadOutcome& out) { return read_beasts(s, b, parser, c.until, out); });
        EXPECT_EQ(ours.ec, beasts.ec) << ours.ec.message() << " vs " << beasts.ec.message();
        EXPECT_EQ(ours.header_done, beasts.header_done);
        EXPECT_EQ(ours.done, beasts.done);
        EXPECT_EQ(ours.body, beasts.body);
        EXPECT_EQ(ours.left_in_buffer, beasts.left_in_buffer);
    }
}

TEST(ReadUntil, TheErrorsAreTheOnesTheCallersMap) {
    // Spot checks of the table above against the errors by name, so that both readers being
    // wrong the same way would show.
    SocketPair p;
    p.b.shutdown(tcp::socket::shutdown_send);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    ReadOutcome out;
    asio::co_spawn(p.ioc, read_ours(p.a, buffer, parser, ParseUntil::header, out), rethrow);
    p.ioc.run();
    EXPECT_EQ(out.ec, http::error::end_of_stream);

    SocketPair q;
    const std::string bytes = "HTTP/1.1 200 OK\r\n\r\nuntil close";
    q.b.write_some(asio::buffer(bytes));
    q.b.shutdown(tcp::socket::shutdown_send);
    beast::flat_buffer buffer2;
    http::response_parser<http::string_body> parser2;
    ReadOutcome out2;
    asio::co_spawn(q.ioc, read_ours(q.a, buffer2, parser2, ParseUntil::message, out2), rethrow);
    q.ioc.run();
    EXPECT_FALSE(out2.ec) << out2.ec.message();
    ASSERT_TRUE(parser2.is_done());
    EXPECT_EQ(parser2.get().body(), "until close");
}

}  // namespace
}  // namespace tokenradar::net::detail
