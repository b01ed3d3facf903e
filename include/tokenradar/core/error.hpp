#pragma once
// One error enum for every expected failure in TokenRadar, one category for it, one
// mapping to an HTTP status and one writer for the OpenAI-style error body.

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

#include <string>
#include <string_view>
#include <type_traits>

namespace tokenradar {

enum class Errc {
    bad_request = 1,  // malformed or invalid client input
    unauthorized,     // missing or wrong key
    forbidden,
    not_found,  // unknown path or model
    method_not_allowed,
    payload_too_large,    // body over the limit (413)
    headers_too_large,    // header block over the limit (431)
    unsupported,          // valid input we cannot serve or translate
    rate_limited,         // 429
    overloaded,           // 503 / 529
    upstream_http_error,  // upstream answered with an error status
    connect_failed,
    tls_failed,
    timeout_connect,
    timeout_headers,
    timeout_first_byte,
    timeout_first_token,
    timeout_idle,
    timeout_total,
    connection_error,  // reset, closed or truncated mid-response
    protocol_error,    // malformed HTTP, SSE or JSON from a peer
    cancelled,
    internal,
    request_timeout,         // the request did not arrive in time (408)
    not_implemented,         // a transfer coding or method we do not implement (501)
    unsupported_media_type,  // a body that is not the media type the endpoint takes (415)
};

const boost::system::error_category& error_category() noexcept;

inline boost::system::error_code make_error_code(Errc e) noexcept {
    return {static_cast<int>(e), error_category()};
}

// An error code with a human-readable detail that names what was wrong and what was
// expected ("messages[2].role: expected one of system, user, assistant, tool").
struct Error {
    boost::system::error_code code;
    std::string message;

    Error() = default;
    Error(boost::system::error_code c, std::string m) : code(c), message(std::move(m)) {}
    Error(Errc e, std::string m) : code(make_error_code(e)), message(std::move(m)) {}
};

template <class T>
using Result = boost::system::result<T, Error>;

// Used by Result<T>::value() when it holds an error.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

// The Errc that `e` carries, or `otherwise` when its code is of another category (an Asio or
// system error, which each caller reads in its own way: a bad request, a connection error).
Errc errc_of(const Error& e, Errc otherwise) noexcept;

// HTTP status a server answers with for this error (400, 401, 404, 413, 429, 502, 504...).
int http_status(Errc e) noexcept;
int http_status(const boost::system::error_code& ec) noexcept;

// OpenAI error `type` for this error ("invalid_request_error", "rate_limit_error"...).
std::string_view openai_error_type(Errc e) noexcept;

// {"error":{"message":...,"type":...,"param":...,"code":...}}; an empty param or code is
// written as null. `param` names the offending request field; `code` is a machine-readable
// detail (for a translated upstream error, the upstream's own error type).
std::string openai_error_body(Errc e, std::string_view message, std::string_view param = {},
                              std::string_view code = {});

}  // namespace tokenradar

template <>
struct boost::system::is_error_code_enum<tokenradar::Errc> : std::true_type {};
