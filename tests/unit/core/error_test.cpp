#include <tokenradar/core/error.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TEST(Error, MapsToHttpStatus) {
    EXPECT_EQ(http_status(Errc::bad_request), 400);
    EXPECT_EQ(http_status(Errc::payload_too_large), 413);
    EXPECT_EQ(http_status(Errc::headers_too_large), 431);
    EXPECT_EQ(http_status(Errc::rate_limited), 429);
    EXPECT_EQ(http_status(Errc::timeout_idle), 504);
    EXPECT_EQ(http_status(make_error_code(Errc::connect_failed)), 502);
}

TEST(Error, OpenAiBodyIsValidJsonWithEscapedMessage) {
    auto body = openai_error_body(Errc::rate_limited, "slow \"down\"\n");
    auto v = boost::json::parse(body);
    EXPECT_EQ(v.at("error").at("message").as_string(), "slow \"down\"\n");
    EXPECT_EQ(v.at("error").at("type").as_string(), "rate_limit_error");
    EXPECT_TRUE(v.at("error").at("param").is_null());
    EXPECT_TRUE(v.at("error").at("code").is_null());
}

TEST(Error, OpenAiBodyNamesParamAndCodeWhenGiven) {
    auto v = boost::json::parse(openai_error_body(Errc::unsupported, "n: 2", "n", "unsupported_n"));
    EXPECT_EQ(v.at("error").at("type").as_string(), "invalid_request_error");
    EXPECT_EQ(v.at("error").at("param").as_string(), "n");
    EXPECT_EQ(v.at("error").at("code").as_string(), "unsupported_n");
}

TEST(Error, OpenAiBodyStaysJsonWhenTheMessageQuotesInvalidUtf8) {
    // A peer's HTML page cut inside a multi-byte character, a lone continuation byte, an
    // overlong encoding and a surrogate: each invalid byte becomes U+FFFD.
    const std::string message =
        std::string("caf\xC3") + "|\x80|\xC0\xAF|\xED\xA0\x80|\xF0\x9F\x98\x80";
    auto body = openai_error_body(Errc::upstream_http_error, message);
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    ASSERT_FALSE(ec) << body;
    EXPECT_EQ(v.at("error").at("message").as_string(),
              "caf\uFFFD|\uFFFD|\uFFFD\uFFFD|\uFFFD\uFFFD\uFFFD|\U0001F600");
}

TEST(Error, ErrcOfTakesTheEnumOrTheCallersReadingOfAForeignCode) {
    EXPECT_EQ(errc_of(Error(Errc::payload_too_large, "x"), Errc::bad_request),
              Errc::payload_too_large);
    const Error reset(make_error_code(boost::system::errc::connection_reset), "reset");
    EXPECT_EQ(errc_of(reset, Errc::bad_request), Errc::bad_request);
    EXPECT_EQ(errc_of(reset, Errc::connection_error), Errc::connection_error);
}

TEST(Error, ResultCarriesDetail) {
    Result<int> r = Error(Errc::bad_request, "field x: expected a number");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
    EXPECT_THROW((void)r.value(), std::runtime_error);
}

}  // namespace
}  // namespace tokenradar
