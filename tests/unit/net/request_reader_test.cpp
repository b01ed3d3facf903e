#include <tokenradar/net/request_reader.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::net {
namespace {

TEST(ParseRequest, ContentLengthBody) {
    auto r = parse_request(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        "Content-Length: 5\r\n\r\nhello",
        {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->target(), "/v1/chat/completions");
    EXPECT_EQ(r->body(), "hello");
}

TEST(ParseRequest, ChunkedBodySplitAcrossPieces) {
    std::string big(3000, 'z');
    char size[16];
    std::snprintf(size, sizeof size, "%zx", big.size());
    std::string text = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                       std::string(size) + "\r\n" + big + "\r\n0\r\n\r\n";
    auto r = parse_request(text, {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->body(), big);
}

TEST(ParseRequest, HeaderOverLimitIs431) {
    ServerLimits limits;
    limits.max_header_bytes = 256;
    auto r = parse_request("GET / HTTP/1.1\r\nX: " + std::string(1000, 'a') + "\r\n\r\n", limits);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::headers_too_large));
    EXPECT_EQ(http_status(r.error().code), 431);
}

TEST(ParseRequest, BodyOverLimitIs413) {
    ServerLimits limits;
    limits.max_body_bytes = 10;
    auto r = parse_request("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world", limits);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::payload_too_large));
}

TEST(ParseRequest, GarbageAndTruncationAreBadRequest) {
    for (std::string text : {"NOT HTTP\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n",
                             "POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc", ""}) {
        auto r = parse_request(text, {});
        ASSERT_FALSE(r) << text;
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request)) << text;
    }
}

// RFC 9112 6.1: a coding the server does not understand is 501, not decoded as chunked with
// the rest ignored.
TEST(ParseRequest, ATransferCodingOtherThanChunkedIs501) {
    auto r = parse_request(
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::not_implemented));
    EXPECT_EQ(http_status(r.error().code), 501);
    EXPECT_NE(r.error().message.find("gzip"), std::string::npos);
    auto chunked = parse_request(
        "POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", {});
    ASSERT_TRUE(chunked) << chunked.error().message;
    EXPECT_EQ(chunked->body(), "hello");
}

TEST(ClassifyRequestError, PeerErrorsCloseSilently) {
    EXPECT_FALSE(classify_request_error(boost::asio::error::eof));
    EXPECT_FALSE(classify_request_error(beast::http::error::end_of_stream));
    EXPECT_EQ(classify_request_error(beast::http::error::bad_method), Errc::bad_request);
}

}  // namespace
}  // namespace tokenradar::net
