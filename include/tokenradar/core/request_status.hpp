#pragma once
// How a request attempt ended (metrics.md "Failures"): `ok`, `http_<code>`, `timeout_connect`,
// `timeout_first_token`, `timeout_idle`, `timeout_total`, `connection_error`,
// `protocol_error` or `cancelled`. Code compares the value; the text exists only where JSON,
// CSV, SQL or Prometheus is written (to_string) and is parsed back where read
// (parse_request_status). Adding a kind is one line in TOKENRADAR_STATUSES.

#include <tokenradar/core/enum_table.hpp>
#include <tokenradar/core/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace tokenradar {

// `http_error` is written "http_<code>"; the others by their name.
// clang-format off
#define TOKENRADAR_STATUSES(X) \
    X(ok)                      \
    X(http_error)              \
    X(timeout_connect)         \
    X(timeout_first_token)     \
    X(timeout_idle)            \
    X(timeout_total)           \
    X(connection_error)        \
    X(protocol_error)          \
    X(cancelled)
// clang-format on

class RequestStatus {
  public:
    // Unscoped inside the class, so `RequestStatus::cancelled` reads as a status.
    enum Kind : std::uint8_t { TOKENRADAR_STATUSES(TOKENRADAR_ENUMERATOR) };
    static constexpr std::array kKindNames = {TOKENRADAR_STATUSES(TOKENRADAR_ENUM_NAME)};
    static constexpr int kMinHttpCode = 100;
    static constexpr int kMaxHttpCode = 599;

    constexpr RequestStatus(Kind kind = ok) noexcept : kind_(kind) {}  // NOLINT: implicit
    // An HTTP error status, `code` in 100..599 (the HTTP code the request ended with: an
    // upstream's error status, or the one an in-stream error event stands for).
    static constexpr RequestStatus http(int code) noexcept {
        RequestStatus s(http_error);
        s.http_code_ = static_cast<std::uint16_t>(code);
        return s;
    }

    [[nodiscard]] constexpr Kind kind() const noexcept { return kind_; }
    [[nodiscard]] constexpr int http_code() const noexcept { return http_code_; }  // 0 unless HTTP
    [[nodiscard]] constexpr bool is_ok() const noexcept { return kind_ == ok; }

    friend constexpr bool operator==(RequestStatus, RequestStatus) noexcept = default;

  private:
    Kind kind_ = ok;
    std::uint16_t http_code_ = 0;
};

// "ok", "http_429", "timeout_idle"...: a view of static text, no allocation (the gateway
// writes it per attempt).
std::string_view to_string(RequestStatus s) noexcept;
// The text of to_string back; Errc::bad_request naming `status` and listing the forms
// otherwise. http_<code> takes three digits from 100 to 599.
Result<RequestStatus> parse_request_status(std::string_view text);
std::ostream& operator<<(std::ostream& os, RequestStatus s);  // for test failure messages

// The status an error ends a request with. Errors with no status of their own become
// connection_error or protocol_error; no error is ok.
RequestStatus status_of(const boost::system::error_code& ec) noexcept;

}  // namespace tokenradar
