#include <tokenradar/core/request_status.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

TEST(RequestStatus, EveryKindRoundTripsThroughItsText) {
    for (std::size_t i = 0; i < RequestStatus::kKindNames.size(); ++i) {
        const auto kind = static_cast<RequestStatus::Kind>(i);
        const RequestStatus s =
            kind == RequestStatus::http_error ? RequestStatus::http(418) : RequestStatus(kind);
        const auto back = parse_request_status(to_string(s));
        ASSERT_TRUE(back) << to_string(s);
        EXPECT_EQ(*back, s);
        EXPECT_EQ(back->kind(), kind);
    }
    EXPECT_EQ(to_string(RequestStatus::ok), "ok");
    EXPECT_EQ(to_string(RequestStatus::timeout_first_token), "timeout_first_token");
    EXPECT_TRUE(RequestStatus().is_ok());
}

TEST(RequestStatus, HttpCodesAreWrittenAsHttpUnderscoreCode) {
    for (int code = RequestStatus::kMinHttpCode; code <= RequestStatus::kMaxHttpCode; ++code) {
        const RequestStatus s = RequestStatus::http(code);
        EXPECT_EQ(to_string(s), "http_" + std::to_string(code));
        EXPECT_EQ(parse_request_status(to_string(s)).value(), s);
        EXPECT_EQ(s.http_code(), code);
        EXPECT_FALSE(s.is_ok());
    }
    EXPECT_NE(RequestStatus::http(429), RequestStatus::http(503));
    EXPECT_NE(RequestStatus::http(429), RequestStatus(RequestStatus::http_error));
}

TEST(RequestStatus, UnknownTextIsAnErrorNamingTheField) {
    for (std::string_view bad : {"", "OK", "weird", "http_", "http_99", "http_600", "http_4290",
                                 "http_42x", "http_error", "timeout"}) {
        auto parsed = parse_request_status(bad);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_EQ(parsed.error().code, make_error_code(Errc::bad_request));
        EXPECT_EQ(parsed.error().message,
                  "status: expected ok, http_<code>, timeout_connect, timeout_first_token, "
                  "timeout_idle, timeout_total, connection_error, protocol_error or cancelled");
    }
}

TEST(RequestStatus, ErrorsMapToTheStatusOfMetricsSpec) {
    EXPECT_EQ(status_of({}), RequestStatus::ok);
    EXPECT_EQ(status_of(make_error_code(Errc::timeout_connect)), RequestStatus::timeout_connect);
    EXPECT_EQ(status_of(make_error_code(Errc::timeout_headers)),
              RequestStatus::timeout_first_token);
    EXPECT_EQ(status_of(make_error_code(Errc::timeout_idle)), RequestStatus::timeout_idle);
    EXPECT_EQ(status_of(make_error_code(Errc::timeout_total)), RequestStatus::timeout_total);
    EXPECT_EQ(status_of(make_error_code(Errc::protocol_error)), RequestStatus::protocol_error);
    EXPECT_EQ(status_of(make_error_code(Errc::cancelled)), RequestStatus::cancelled);
    EXPECT_EQ(status_of(make_error_code(Errc::tls_failed)), RequestStatus::connection_error);
    EXPECT_EQ(status_of(boost::system::error_code(104, boost::system::system_category())),
              RequestStatus::connection_error);
}

TEST(RequestStatus, PrintsAsItsText) {
    std::ostringstream os;
    os << RequestStatus::http(502) << ' ' << RequestStatus(RequestStatus::cancelled);
    EXPECT_EQ(os.str(), "http_502 cancelled");
}

}  // namespace
}  // namespace tokenradar
