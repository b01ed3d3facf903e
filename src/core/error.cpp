#include <tokenradar/core/error.hpp>
#include <tokenradar/core/utf8.hpp>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <stdexcept>

namespace tokenradar {
namespace {

// boost::system::error_category has a protected non-virtual destructor by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class ErrorCategory final : public boost::system::error_category {
  public:
    const char* name() const noexcept override { return "tokenradar"; }

    std::string message(int ev) const override {
        switch (static_cast<Errc>(ev)) {
            case Errc::bad_request:
                return "bad request";
            case Errc::unauthorized:
                return "unauthorized";
            case Errc::forbidden:
                return "forbidden";
            case Errc::not_found:
                return "not found";
            case Errc::method_not_allowed:
                return "method not allowed";
            case Errc::payload_too_large:
                return "payload too large";
            case Errc::headers_too_large:
                return "request header fields too large";
            case Errc::unsupported:
                return "unsupported";
            case Errc::rate_limited:
                return "rate limited";
            case Errc::overloaded:
                return "overloaded";
            case Errc::upstream_http_error:
                return "upstream returned an error status";
            case Errc::connect_failed:
                return "connect failed";
            case Errc::tls_failed:
                return "TLS handshake failed";
            case Errc::timeout_connect:
                return "timed out connecting";
            case Errc::timeout_headers:
                return "timed out waiting for response headers";
            case Errc::timeout_first_byte:
                return "timed out waiting for the first body byte";
            case Errc::timeout_first_token:
                return "timed out waiting for the first token";
            case Errc::timeout_idle:
                return "timed out: stream idle too long";
            case Errc::timeout_total:
                return "timed out: total time exceeded";
            case Errc::connection_error:
                return "connection error";
            case Errc::protocol_error:
                return "protocol error";
            case Errc::cancelled:
                return "cancelled";
            case Errc::internal:
                return "internal error";
            case Errc::request_timeout:
                return "request timeout";
            case Errc::not_implemented:
                return "not implemented";
            case Errc::unsupported_media_type:
                return "unsupported media type";
        }
        return "unknown tokenradar error";
    }
};
#pragma GCC diagnostic pop

const ErrorCategory kCategory;

}  // namespace

const boost::system::error_category& error_category() noexcept { return kCategory; }

void throw_exception_from_error(const Error& e, const boost::source_location&) {
    throw std::runtime_error(e.message.empty() ? e.code.message() : e.message);
}

Errc errc_of(const Error& e, Errc otherwise) noexcept {
    return e.code.category() == error_category() ? static_cast<Errc>(e.code.value()) : otherwise;
}

int http_status(Errc e) noexcept {
    switch (e) {
        case Errc::bad_request:
            return 400;
        case Errc::unauthorized:
            return 401;
        case Errc::forbidden:
            return 403;
        case Errc::not_found:
            return 404;
        case Errc::method_not_allowed:
            return 405;
        case Errc::payload_too_large:
            return 413;
        case Errc::headers_too_large:
            return 431;
        case Errc::unsupported:
            return 400;
        case Errc::rate_limited:
            return 429;
        case Errc::overloaded:
            return 503;
        case Errc::upstream_http_error:
        case Errc::connect_failed:
        case Errc::tls_failed:
        case Errc::connection_error:
        case Errc::protocol_error:
            return 502;
        case Errc::timeout_connect:
        case Errc::timeout_headers:
        case Errc::timeout_first_byte:
        case Errc::timeout_first_token:
        case Errc::timeout_idle:
        case Errc::timeout_total:
            return 504;
        case Errc::cancelled:
            return 499;
        case Errc::internal:
            return 500;
        case Errc::request_timeout:
            return 408;
        case Errc::not_implemented:
            return 501;
        case Errc::unsupported_media_type:
            return 415;
    }
    return 500;
}

int http_status(const boost::system::error_code& ec) noexcept {
    if (ec.category() == error_category()) return http_status(static_cast<Errc>(ec.value()));
    return 502;
}

std::string_view openai_error_type(Errc e) noexcept {
    switch (e) {
        case Errc::bad_request:
        case Errc::not_found:
        case Errc::method_not_allowed:
        case Errc::payload_too_large:
        case Errc::headers_too_large:
        case Errc::unsupported:
        case Errc::request_timeout:
        case Errc::not_implemented:
        case Errc::unsupported_media_type:
            return "invalid_request_error";
        case Errc::unauthorized:
        case Errc::forbidden:
            return "authentication_error";
        case Errc::rate_limited:
            return "rate_limit_error";
        case Errc::overloaded:
            return "overloaded_error";
        case Errc::timeout_connect:
        case Errc::timeout_headers:
        case Errc::timeout_first_byte:
        case Errc::timeout_first_token:
        case Errc::timeout_idle:
        case Errc::timeout_total:
            return "timeout_error";
        case Errc::upstream_http_error:
        case Errc::connect_failed:
        case Errc::tls_failed:
        case Errc::connection_error:
        case Errc::protocol_error:
            return "upstream_error";
        case Errc::cancelled:
        case Errc::internal:
            return "server_error";
    }
    return "server_error";
}

std::string openai_error_body(Errc e, std::string_view message, std::string_view param,
                              std::string_view code) {
    boost::json::object error;
    error["message"] = valid_utf8(message);
    error["type"] = openai_error_type(e);
    if (param.empty())
        error["param"] = nullptr;
    else
        error["param"] = valid_utf8(param);
    if (code.empty())
        error["code"] = nullptr;
    else
        error["code"] = valid_utf8(code);
    boost::json::object body;
    body["error"] = std::move(error);
    return boost::json::serialize(body);
}

}  // namespace tokenradar
