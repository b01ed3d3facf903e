#include <tokenradar/core/request_status.hpp>

#include <fmt/format.h>

#include <ostream>

namespace tokenradar {
namespace {

constexpr std::size_t kHttpCodes = RequestStatus::kMaxHttpCode - RequestStatus::kMinHttpCode + 1;

// "http_100" .. "http_599", so to_string() of an HTTP status is a view like the others.
constexpr auto kHttpNames = [] {
    std::array<std::array<char, 8>, kHttpCodes> names{};
    for (std::size_t i = 0; i < kHttpCodes; ++i) {
        const std::size_t code = RequestStatus::kMinHttpCode + i;
        names[i] = {'h',
                    't',
                    't',
                    'p',
                    '_',
                    static_cast<char>('0' + code / 100),
                    static_cast<char>('0' + code / 10 % 10),
                    static_cast<char>('0' + code % 10)};
    }
    return names;
}();

constexpr std::string_view kHttpPrefix = "http_";
constexpr std::size_t kHttpKind = RequestStatus::http_error;

}  // namespace

std::string_view to_string(RequestStatus s) noexcept {
    if (s.kind() != RequestStatus::http_error) return RequestStatus::kKindNames[s.kind()];
    const int code = s.http_code();
    if (code < RequestStatus::kMinHttpCode || code > RequestStatus::kMaxHttpCode) {
        return "http_error";  // not made by RequestStatus::http(100..599)
    }
    const auto& name = kHttpNames[static_cast<std::size_t>(code - RequestStatus::kMinHttpCode)];
    return {name.data(), name.size()};
}

Result<RequestStatus> parse_request_status(std::string_view text) {
    if (text.size() == kHttpPrefix.size() + 3 &&
        text.substr(0, kHttpPrefix.size()) == kHttpPrefix &&
        text.find_first_not_of("0123456789", kHttpPrefix.size()) == std::string_view::npos) {
        const int code = (text[5] - '0') * 100 + (text[6] - '0') * 10 + (text[7] - '0');
        if (code >= RequestStatus::kMinHttpCode && code <= RequestStatus::kMaxHttpCode) {
            return RequestStatus::http(code);
        }
    }
    for (std::size_t i = 0; i < RequestStatus::kKindNames.size(); ++i) {
        if (i != kHttpKind && RequestStatus::kKindNames[i] == text) {
            return RequestStatus(static_cast<RequestStatus::Kind>(i));
        }
    }
    // "ok, http_<code>, timeout_connect, ... or cancelled"
    std::string expected;
    for (std::size_t i = 0; i < RequestStatus::kKindNames.size(); ++i) {
        if (i > 0) expected += i + 1 == RequestStatus::kKindNames.size() ? " or " : ", ";
        expected += i == kHttpKind ? std::string_view("http_<code>") : RequestStatus::kKindNames[i];
    }
    return Error(Errc::bad_request, fmt::format("status: expected {}", expected));
}

std::ostream& operator<<(std::ostream& os, RequestStatus s) { return os << to_string(s); }

RequestStatus status_of(const boost::system::error_code& ec) noexcept {
    if (!ec) return RequestStatus::ok;
    if (ec.category() != error_category()) return RequestStatus::connection_error;
    switch (static_cast<Errc>(ec.value())) {
        case Errc::timeout_connect:
            return RequestStatus::timeout_connect;
        case Errc::timeout_headers:
        case Errc::timeout_first_byte:
        case Errc::timeout_first_token:
            return RequestStatus::timeout_first_token;
        case Errc::timeout_idle:
            return RequestStatus::timeout_idle;
        case Errc::timeout_total:
            return RequestStatus::timeout_total;
        case Errc::cancelled:
            return RequestStatus::cancelled;
        case Errc::protocol_error:
            return RequestStatus::protocol_error;
        default:
            return RequestStatus::connection_error;
    }
}

}  // namespace tokenradar
