#include "../../../src/net/sync_io.hpp"

#include <tokenradar/net/request_reader.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

namespace tokenradar::net::detail {
namespace {

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

}  // namespace
}  // namespace tokenradar::net::detail
