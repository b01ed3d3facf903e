#pragma once
// Private to net: the parts of an absolute URL that every URL this project reads shares
// (net::Url's http(s), RedisUrl's redis): the scheme lowercased, the host without brackets
// and percent-decoded, the port checked.

#include <boost/url/url_view.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::net::detail {

inline std::string lowercase_scheme(const boost::urls::url_view& u) {
    std::string scheme(u.scheme());
    std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return scheme;
}

// IPv6 literals without their brackets; a registered name percent-decoded.
inline std::string url_host(const boost::urls::url_view& u) {
    switch (u.host_type()) {
        case boost::urls::host_type::ipv6:
            return u.host_ipv6_address().to_string();
        case boost::urls::host_type::ipv4:
            return u.host_ipv4_address().to_string();
        default:
            return u.host();
    }
}

// The URL's port when it has one and it is 1-65535; nullopt for a bad one. `fallback` when
// the URL has none.
inline std::optional<std::uint16_t> url_port(const boost::urls::url_view& u,
                                             std::uint16_t fallback) {
    if (!u.has_port()) return fallback;
    const std::string_view p = u.port();
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
    if (p.empty() || ec != std::errc() || ptr != p.data() + p.size() || value == 0 ||
        value > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

}  // namespace tokenradar::net::detail
