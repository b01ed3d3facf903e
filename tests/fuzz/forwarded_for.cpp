// Feeds arbitrary bytes as an X-Forwarded-For value (from a trusted peer, so the walk runs)
// and as trusted-proxy entries. The client address must always be an address.

#include <tokenradar/net/forwarded.hpp>

#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using tokenradar::net::TrustedProxies;
    static const TrustedProxies kTrusted =
        TrustedProxies::parse({"127.0.0.1", "10.0.0.0/8", "fd00::/8"}).value();
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::string client = kTrusted.client_address("127.0.0.1", bytes);
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address(client, ec);
    if (ec) std::abort();  // only ever an address read from the header or the peer
    (void)TrustedProxies::parse({std::string(bytes)});
    return 0;
}
