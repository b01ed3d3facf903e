#include <tokenradar/net/forwarded.hpp>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <optional>

namespace tokenradar::net {
namespace {

namespace ip = boost::asio::ip;

// IPv4-mapped IPv6 (a dual-stack socket's view of an IPv4 peer) as the IPv4 address.
ip::address unmapped(const ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) {
        return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    }
    return a;
}

std::optional<ip::address> parse_address(std::string_view text) {
    boost::system::error_code ec;
    const ip::address a = ip::make_address(text, ec);
    if (ec) return std::nullopt;
    return unmapped(a);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// One X-Forwarded-For entry: an address, an IPv4 address with a port ("1.2.3.4:80"), or a
// bracketed IPv6 address with or without a port ("[::1]:80"), as some proxies write them.
std::optional<ip::address> parse_entry(std::string_view entry) {
    entry = trim(entry);
    if (auto plain = parse_address(entry)) return plain;
    if (!entry.empty() && entry.front() == '[') {
        const auto close = entry.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        const std::string_view rest = entry.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return std::nullopt;
        auto a = parse_address(entry.substr(1, close - 1));
        return a && a->is_v6() ? a : std::nullopt;
    }
    const auto colon = entry.rfind(':');
    if (colon == std::string_view::npos || entry.find(':') != colon) return std::nullopt;
    auto a = parse_address(entry.substr(0, colon));
    return a && a->is_v4() ? a : std::nullopt;
}

template <std::size_t N>
bool same_prefix(const std::array<unsigned char, N>& a, const std::array<unsigned char, N>& b,
                 unsigned prefix) {
    const unsigned whole = prefix / 8;
    for (unsigned i = 0; i < whole; ++i) {
        if (a[i] != b[i]) return false;
    }
    const unsigned bits = prefix % 8;
    if (bits == 0) return true;
    const auto mask = static_cast<unsigned char>(0xFF << (8 - bits));
    return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

Result<TrustedProxies> TrustedProxies::parse(const std::vector<std::string>& entries) {
    TrustedProxies out;
    for (const std::string& entry : entries) {
        const auto bad = [&] {
            return Error(Errc::bad_request,
                         fmt::format("'{}': expected an IP address or a CIDR network such as "
                                     "10.0.0.0/8 or fd00::/8",
                                     entry));
        };
        const auto slash = entry.find('/');
        auto base = parse_address(std::string_view(entry).substr(0, slash));
        if (!base) return bad();
        const unsigned width = base->is_v4() ? 32 : 128;
        unsigned prefix = width;
        if (slash != std::string::npos) {
            const char* first = entry.data() + slash + 1;
            const char* last = entry.data() + entry.size();
            const auto [end, ec] = std::from_chars(first, last, prefix);
            if (ec != std::errc() || end != last || first == last || prefix > width) return bad();
        }
        out.networks_.push_back({*base, prefix});
    }
    return out;
}

bool TrustedProxies::trusts(const ip::address& address) const noexcept {
    const ip::address a = unmapped(address);
    for (const Network& n : networks_) {
        if (a.is_v4() && n.base.is_v4() &&
            same_prefix(a.to_v4().to_bytes(), n.base.to_v4().to_bytes(), n.prefix)) {
            return true;
        }
        if (a.is_v6() && n.base.is_v6() &&
            same_prefix(a.to_v6().to_bytes(), n.base.to_v6().to_bytes(), n.prefix)) {
            return true;
        }
    }
    return false;
}

std::string TrustedProxies::client_address(std::string_view peer,
                                           std::string_view forwarded_for) const {
    const auto peer_address = parse_address(peer);
    if (!peer_address || !trusts(*peer_address)) return std::string(peer);
    ip::address client = *peer_address;
    // Right to left: each trusted hop vouches for the entry before it.
    while (!forwarded_for.empty()) {
        const auto comma = forwarded_for.rfind(',');
        const std::string_view entry =
            comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1);
        forwarded_for =
            comma == std::string_view::npos ? std::string_view() : forwarded_for.substr(0, comma);
        if (trim(entry).empty()) continue;  // "a, , b": an empty list element (RFC 9110 5.6.1)
        const auto hop = parse_entry(entry);
        if (!hop) break;  // not an address: nothing left of it can be believed
        client = *hop;
        if (!trusts(client)) break;
    }
    return client.to_string();
}

}  // namespace tokenradar::net
