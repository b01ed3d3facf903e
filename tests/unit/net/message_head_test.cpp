#include "../../../src/net/message_head.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <gtest/gtest.h>

#include <string>

namespace tokenradar::net {
namespace {

namespace http = boost::beast::http;
using Headers = std::vector<std::pair<std::string, std::string>>;

TEST(RequestHead, PostWithBodyInOrderWithDefaultsAndLength) {
    const Headers headers{{"content-type", "application/json"}, {"authorization", "Bearer k"}};
    auto head =
        request_head(http::verb::post, "/v1/chat/completions", "127.0.0.1:8080", headers, 42);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(*head,
              "POST /v1/chat/completions HTTP/1.1\r\n"
              "Host: 127.0.0.1:8080\r\n"
              "content-type: application/json\r\n"
              "authorization: Bearer k\r\n"
              "User-Agent: tokenradar\r\n"
              "Content-Length: 42\r\n"
              "\r\n");
}

TEST(RequestHead, ParsesAsTheSameRequestWithItsBody) {
    const Headers headers{{"x-sim-tpot-ms", "5"}, {"User-Agent", "probe/1"}};
    const std::string body = R"({"model":"m"})";
    auto head = request_head(http::verb::post, "/v1/x?y=1", "example.com", headers, body.size());
    ASSERT_TRUE(head) << head.error().message;
    http::request_parser<http::string_body> parser;
    boost::system::error_code ec;
    const std::string wire = *head + body;
    std::size_t used = 0;
    while (!parser.is_done() && used < wire.size()) {  // put() takes the head, then the body
        const std::size_t n =
            parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
        ASSERT_FALSE(ec) << ec.message();
        ASSERT_GT(n, 0u);
        used += n;
    }
    EXPECT_EQ(used, wire.size());
    ASSERT_TRUE(parser.is_done());
    const auto& req = parser.get();
    EXPECT_EQ(req.method(), http::verb::post);
    EXPECT_EQ(req.target(), "/v1/x?y=1");
    EXPECT_EQ(req[http::field::host], "example.com");
    EXPECT_EQ(req["x-sim-tpot-ms"], "5");
    EXPECT_EQ(req[http::field::user_agent], "probe/1");  // the caller's, not a second one
    EXPECT_EQ(std::distance(req.equal_range(http::field::user_agent).first,
                            req.equal_range(http::field::user_agent).second),
              1);
    EXPECT_EQ(req.body(), body);
    EXPECT_TRUE(req.keep_alive());
}

TEST(RequestHead, GetWithoutBodyHasNoLengthAndPostWithoutBodyHasZero) {
    auto get = request_head(http::verb::get, "/healthz", "h", {}, 0);
    ASSERT_TRUE(get);
    EXPECT_EQ(*get, "GET /healthz HTTP/1.1\r\nHost: h\r\nUser-Agent: tokenradar\r\n\r\n");
    auto post = request_head(http::verb::post, "/", "h", {}, 0);
    ASSERT_TRUE(post);
    EXPECT_NE(post->find("\r\nContent-Length: 0\r\n"), std::string::npos);
}

TEST(RequestHead, DropsTheCallersFramingHeaders) {
    const Headers headers{
        {"Content-Length", "999"}, {"transfer-encoding", "chunked"}, {"accept", "*/*"}};
    auto head = request_head(http::verb::post, "/", "h", headers, 3);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->find("999"), std::string::npos);
    EXPECT_EQ(head->find("chunked"), std::string::npos);
    EXPECT_NE(head->find("\r\nContent-Length: 3\r\n"), std::string::npos);
    EXPECT_NE(head->find("\r\naccept: */*\r\n"), std::string::npos);
}

TEST(RequestHead, RefusesValuesThatWouldSmuggleAHeaderAndBadNames) {
    auto injected = request_head(http::verb::post, "/", "h", {{"x-key", "a\r\nx-evil: 1"}}, 0);
    ASSERT_FALSE(injected);
    EXPECT_EQ(injected.error().code, Errc::bad_request);
    EXPECT_NE(injected.error().message.find("x-key"), std::string::npos);
    EXPECT_FALSE(request_head(http::verb::post, "/", "h", {{"x-key", std::string("a\0b", 3)}}, 0));
    auto bad_name = request_head(http::verb::post, "/", "h", {{"bad name", "v"}}, 0);
    ASSERT_FALSE(bad_name);
    EXPECT_NE(bad_name.error().message.find("bad name"), std::string::npos);
    EXPECT_FALSE(request_head(http::verb::post, "/", "h", {{"", "v"}}, 0));
    EXPECT_FALSE(request_head(http::verb::get, "/a b", "h", {}, 0));
    EXPECT_FALSE(request_head(http::verb::get, "/", "h\r\nx: 1", {}, 0));
}

// Values are scanned without an early exit: a CR, LF or NUL is found at every offset of a
// long value, and every other byte passes.
TEST(RequestHead, FindsAForbiddenByteAtEveryOffsetAndOnlyThose) {
    for (const char bad : {'\r', '\n', '\0'}) {
        for (std::size_t at = 0; at < 24; ++at) {
            std::string value(24, 'v');
            value[at] = bad;
            EXPECT_FALSE(request_head(http::verb::post, "/", "h", {{"x-key", value}}, 0))
                << static_cast<int>(bad) << " at " << at;
        }
    }
    std::string every_other_byte;
    for (int c = 1; c < 256; ++c) {
        if (c != '\r' && c != '\n') every_other_byte.push_back(static_cast<char>(c));
    }
    for (std::size_t shift = 0; shift < 8; ++shift) {
        const std::string value = std::string(shift, 'v') + every_other_byte;
        EXPECT_TRUE(request_head(http::verb::post, "/", "h", {{"x-key", value}}, 0)) << shift;
    }
}

TEST(ResponseHead, WholeResponseInOrderWithLength) {
    // One constant name and one owned name: both written the same way.
    const HeaderList headers{{HeaderName::constant("x-tokenradar-request-id"), "r-1"},
                             {"x-tokenradar-upstream", "sim/gpt-4o"}};
    auto head = response_head(http::status::ok, 11, true, "application/json", headers,
                              ResponseBody::content_length, 42);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(*head,
              "HTTP/1.1 200 OK\r\n"
              "Content-Type: application/json\r\n"
              "x-tokenradar-request-id: r-1\r\n"
              "x-tokenradar-upstream: sim/gpt-4o\r\n"
              "Content-Length: 42\r\n"
              "\r\n");
}

TEST(ResponseHead, StreamWithoutKeepAliveIsChunkedAndCloses) {
    auto head = response_head(http::status::ok, 11, false, "text/event-stream",
                              {{"cache-control", "no-cache"}}, ResponseBody::chunked);
    ASSERT_TRUE(head) << head.error().message;
    EXPECT_EQ(*head,
              "HTTP/1.1 200 OK\r\n"
              "Content-Type: text/event-stream\r\n"
              "cache-control: no-cache\r\n"
              "Connection: close\r\n"
              "Transfer-Encoding: chunked\r\n"
              "\r\n");
}

TEST(ResponseHead, Http10KeepsAliveOnlyWhenAskedAndStreamsUnframed) {
    auto kept =
        response_head(http::status::not_found, 10, true, "", {}, ResponseBody::content_length, 0);
    ASSERT_TRUE(kept);
    EXPECT_EQ(*kept,
              "HTTP/1.0 404 Not Found\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n");
    auto stream =
        response_head(http::status::ok, 10, false, "text/event-stream", {}, ResponseBody::chunked);
    ASSERT_TRUE(stream);
    EXPECT_EQ(*stream, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
}

TEST(ResponseHead, StatusesWithoutBodyHaveNoLength) {
    for (const auto status :
         {http::status::not_modified, http::status::no_content, http::status::continue_}) {
        auto head = response_head(status, 11, true, "", {{"etag", "\"e\""}},
                                  ResponseBody::content_length, 0);
        ASSERT_TRUE(head);
        EXPECT_EQ(head->find("Content-Length"), std::string::npos) << *head;
        EXPECT_NE(head->find("\r\netag: \"e\"\r\n"), std::string::npos) << *head;
    }
    auto busy = response_head(http::status::too_many_requests, 11, true, "", {{"retry-after", "1"}},
                              ResponseBody::content_length, 5);
    ASSERT_TRUE(busy);
    EXPECT_EQ(*busy,
              "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\nContent-Length: 5\r\n\r\n");
}

TEST(ResponseHead, DropsTheCallersFramingAndConnectionHeaders) {
    const HeaderList headers{{"Content-Length", "999"},
                             {"transfer-encoding", "chunked"},
                             {"connection", "keep-alive"},
                             {"etag", "x"}};
    auto head = response_head(http::status::ok, 11, false, "text/plain", headers,
                              ResponseBody::content_length, 3);
    ASSERT_TRUE(head);
    EXPECT_EQ(*head,
              "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\netag: x\r\nConnection: close\r\n"
              "Content-Length: 3\r\n\r\n");
}

TEST(ResponseHead, ParsesAsTheSameResponseWithItsBody) {
    const std::string body = R"({"id":"x"})";
    auto head = response_head(http::status::bad_gateway, 11, false, "application/json",
                              {{"x-a", "1"}, {"X-B", "two words"}}, ResponseBody::content_length,
                              body.size());
    ASSERT_TRUE(head);
    http::response_parser<http::string_body> parser;
    boost::system::error_code ec;
    const std::string wire = *head + body;
    std::size_t used = 0;
    while (!parser.is_done() && used < wire.size()) {
        used += parser.put(boost::asio::buffer(wire.data() + used, wire.size() - used), ec);
        ASSERT_FALSE(ec) << ec.message();
    }
    ASSERT_TRUE(parser.is_done());
    EXPECT_EQ(used, wire.size());
    const auto& res = parser.get();
    EXPECT_EQ(res.result(), http::status::bad_gateway);
    EXPECT_FALSE(res.keep_alive());
    EXPECT_EQ(res[http::field::content_type], "application/json");
    EXPECT_EQ(res["x-a"], "1");
    EXPECT_EQ(res["x-b"], "two words");
    EXPECT_EQ(res.body(), body);
}

TEST(ResponseHead, RefusesValuesThatWouldSplitTheResponse) {
    auto injected = response_head(http::status::ok, 11, true, "",
                                  {{"x-tokenradar-upstream", "a\r\nSet-Cookie: s"}},
                                  ResponseBody::content_length, 0);
    ASSERT_FALSE(injected);
    EXPECT_EQ(injected.error().code, Errc::bad_request);
    EXPECT_NE(injected.error().message.find("x-tokenradar-upstream"), std::string::npos);
    EXPECT_FALSE(
        response_head(http::status::ok, 11, true, "text/plain\r\nx: 1", {}, ResponseBody::chunked));
    EXPECT_FALSE(
        response_head(http::status::ok, 11, true, "", {{"bad name", "v"}}, ResponseBody::chunked));
}

}  // namespace
}  // namespace tokenradar::net
