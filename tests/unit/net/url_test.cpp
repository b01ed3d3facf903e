#include <tokenradar/net/url.hpp>

#include <gtest/gtest.h>

namespace tokenradar::net {
namespace {

TEST(ParseUrl, DefaultsPortAndTarget) {
    auto u = parse_url("https://api.openai.com");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->scheme, "https");
    EXPECT_EQ(u->host, "api.openai.com");
    EXPECT_EQ(u->port, 443);
    EXPECT_EQ(u->target, "/");
    EXPECT_TRUE(u->tls());
    EXPECT_EQ(u->authority(), "api.openai.com:443");
}

TEST(ParseUrl, ExplicitPortPathAndQuery) {
    auto u = parse_url("HTTP://127.0.0.1:8080/v1/models?x=1&y=2");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->scheme, "http");
    EXPECT_EQ(u->port, 8080);
    EXPECT_EQ(u->target, "/v1/models?x=1&y=2");
    EXPECT_FALSE(u->tls());
}

TEST(ParseUrl, Ipv6Literal) {
    auto u = parse_url("http://[::1]:9000/x");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->authority(), "[::1]:9000");
}

TEST(ParseUrl, RejectsWithReasons) {
    struct Case {
        const char* text;
        const char* why;
    };
    for (auto c : {Case{"ftp://x/", "scheme"}, Case{"http://", "missing host"},
                   Case{"http://h:0/", "bad port"}, Case{"http://h:70000/", "bad port"},
                   Case{"/relative", "not an absolute URL"}, Case{"http://u:p@h/", "user info"}}) {
        auto u = parse_url(c.text);
        ASSERT_FALSE(u) << c.text;
        EXPECT_EQ(u.error().code, make_error_code(Errc::bad_request));
        EXPECT_NE(u.error().message.find(c.why), std::string::npos) << u.error().message;
    }
}

}  // namespace
}  // namespace tokenradar::net
