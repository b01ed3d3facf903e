#pragma once
// The client's address behind reverse proxies. A server behind nginx or a load balancer sees
// the proxy as its peer; the proxy names the client in X-Forwarded-For ("client, proxy1,
// proxy2", each proxy appending the address it received from). Only proxies the operator
// lists are believed: walking the list from the right, every address that is a trusted
// proxy is skipped and the first one that is not is the client. Anything a client writes
// into the header itself lies left of that point and is never read.
//
// Sans-IO; the object is immutable after parse, so any thread may use it.

#include <tokenradar/core/error.hpp>

#include <boost/asio/ip/address.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::net {

class TrustedProxies {
  public:
    TrustedProxies() = default;  // trusts nobody: the peer is always the client

    // Addresses ("10.0.0.7", "::1") and networks in CIDR form ("10.0.0.0/8", "fd00::/8").
    // The error names the entry and what is expected.
    static Result<TrustedProxies> parse(const std::vector<std::string>& entries);

    [[nodiscard]] bool empty() const noexcept { return networks_.empty(); }
    // True when `address` (an IPv4-mapped IPv6 address counts as its IPv4 one) lies in one of
    // the trusted networks.
    [[nodiscard]] bool trusts(const boost::asio::ip::address& address) const noexcept;

    // The client's address for a request from `peer` that carried `forwarded_for` (the
    // X-Forwarded-For values, several headers joined with ","; "" when absent). The peer
    // itself when it is not trusted, the header is absent, or it names nobody untrusted
    // before an entry that is not an address (then the last address read, a trusted proxy).
    [[nodiscard]] std::string client_address(std::string_view peer,
                                             std::string_view forwarded_for) const;

  private:
    struct Network {
        boost::asio::ip::address base;  // IPv4 or IPv6, host bits cleared
        unsigned prefix = 0;
    };
    std::vector<Network> networks_;
};

}  // namespace tokenradar::net
