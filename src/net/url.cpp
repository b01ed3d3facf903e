#include <tokenradar/net/url.hpp>

#include "url_parts.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tokenradar::net {

// Built by hand: once per upstream request, where fmt::format cost ~500 instructions.
std::string Url::authority() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    char digits[8];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, port);
    std::string out;
    out.reserve(host.size() + 3 + static_cast<std::size_t>(end - digits));
    if (ipv6) out += '[';
    out += host;
    if (ipv6) out += ']';
    out += ':';
    out.append(digits, end);
    return out;
}

Result<Url> parse_url(std::string_view text) {
    auto fail = [&](std::string_view why) {
        return Error(Errc::bad_request, fmt::format("url '{}': {}", text, why));
    };
    auto parsed = boost::urls::parse_uri(text);
    if (!parsed) return fail(fmt::format("not an absolute URL ({})", parsed.error().message()));
    const boost::urls::url_view& u = *parsed;

    Url out;
    out.scheme = detail::lowercase_scheme(u);
    if (out.scheme != "http" && out.scheme != "https") {
        return fail("scheme must be http or https");
    }
    if (!u.has_authority() || u.encoded_host().empty()) return fail("missing host");
    if (u.has_userinfo()) return fail("user info in URLs is not supported");
    out.host = detail::url_host(u);
    const auto port = detail::url_port(u, out.tls() ? 443 : 80);
    if (!port) return fail("bad port");
    out.port = *port;
    // fmt rather than `+= '?'`: GCC 12 -O2 reports a false -Wrestrict on the latter.
    std::string_view path = u.encoded_path();
    if (path.empty()) path = "/";
    out.target = u.has_query() ? fmt::format("{}?{}", path, std::string_view(u.encoded_query()))
                               : std::string(path);
    return out;
}

}  // namespace tokenradar::net
