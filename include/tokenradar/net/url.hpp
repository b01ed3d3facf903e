#pragma once
// Absolute http/https URLs for the client. Pure parsing, no I/O.

#include <tokenradar/core/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tokenradar::net {

struct Url {
    std::string scheme;      // "http" or "https", lower case
    std::string host;        // without brackets for IPv6 literals
    std::uint16_t port = 0;  // explicit or the scheme's default
    std::string target;      // path + query, at least "/"

    bool tls() const noexcept { return scheme == "https"; }
    // "host:port" as used in error messages and the Host header ("[::1]:8080" for IPv6).
    std::string authority() const;
};

// Errc::bad_request with a message saying what is wrong ("url 'x': scheme must be http or
// https", "... missing host", "... bad port").
Result<Url> parse_url(std::string_view text);

}  // namespace tokenradar::net
