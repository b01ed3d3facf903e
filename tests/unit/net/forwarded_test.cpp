#include <tokenradar/net/forwarded.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::net {
namespace {

using ::testing::HasSubstr;

TrustedProxies trusted(const std::vector<std::string>& entries) {
    auto parsed = TrustedProxies::parse(entries);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error().message);
    return parsed ? *parsed : TrustedProxies();
}

boost::asio::ip::address addr(const char* text) { return boost::asio::ip::make_address(text); }

TEST(TrustedProxies, NetworksMatchByPrefixInBothFamilies) {
    const auto t = trusted({"10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1", "172.16.0.0/12"});
    EXPECT_TRUE(t.trusts(addr("10.255.3.4")));
    EXPECT_FALSE(t.trusts(addr("11.0.0.1")));
    EXPECT_TRUE(t.trusts(addr("192.168.1.7")));
    EXPECT_FALSE(t.trusts(addr("192.168.1.8")));
    EXPECT_TRUE(t.trusts(addr("172.31.255.255")));  // /12 ends inside the second byte
    EXPECT_FALSE(t.trusts(addr("172.32.0.0")));
    EXPECT_TRUE(t.trusts(addr("fd12:3456::1")));
    EXPECT_FALSE(t.trusts(addr("fe80::1")));
    EXPECT_TRUE(t.trusts(addr("::1")));
    EXPECT_TRUE(t.trusts(addr("::ffff:10.1.2.3")));  // a dual-stack socket's IPv4 peer
    EXPECT_FALSE(TrustedProxies().trusts(addr("127.0.0.1")));
    EXPECT_TRUE(trusted({"0.0.0.0/0"}).trusts(addr("8.8.8.8")));
    EXPECT_FALSE(trusted({"0.0.0.0/0"}).trusts(addr("2001:db8::1")));
}

TEST(TrustedProxies, BadEntriesAreNamed) {
    for (const char* bad : {"10.0.0.0/33", "fd00::/129", "10.0.0/8", "localhost", "10.0.0.0/",
                            "10.0.0.0/8x", "", "/8", "10.0.0.0/-1"}) {
        auto parsed = TrustedProxies::parse({bad});
        ASSERT_FALSE(parsed) << bad;
        EXPECT_THAT(parsed.error().message,
                    HasSubstr(std::string("'") + bad + "': expected an IP address"));
    }
}

TEST(TrustedProxies, TheClientIsTheRightmostAddressThatIsNoTrustedProxy) {
    const auto t = trusted({"127.0.0.1", "10.0.0.0/8"});
    // An untrusted peer is the client, whatever it claims.
    EXPECT_EQ(t.client_address("203.0.113.9", "198.51.100.1"), "203.0.113.9");
    // A trusted proxy without the header: the proxy.
    EXPECT_EQ(t.client_address("127.0.0.1", ""), "127.0.0.1");
    // One proxy.
    EXPECT_EQ(t.client_address("127.0.0.1", "198.51.100.1"), "198.51.100.1");
    // Two proxies; the client's own forged entry, left of its address, is never read.
    EXPECT_EQ(t.client_address("127.0.0.1", "6.6.6.6, 198.51.100.1, 10.1.1.1"), "198.51.100.1");
    // Spaces, empty elements, ports and brackets as proxies write them.
    EXPECT_EQ(t.client_address("127.0.0.1", " 198.51.100.1:5123 ,, 10.1.1.1 "), "198.51.100.1");
    EXPECT_EQ(t.client_address("127.0.0.1", "[2001:db8::7]:443"), "2001:db8::7");
    EXPECT_EQ(t.client_address("127.0.0.1", "2001:db8::7"), "2001:db8::7");
    EXPECT_EQ(t.client_address("::ffff:127.0.0.1", "198.51.100.1"), "198.51.100.1");
    // Garbage stops the walk at the last address read, a trusted one.
    EXPECT_EQ(t.client_address("127.0.0.1", "198.51.100.1, not-an-ip, 10.1.1.1"), "10.1.1.1");
    EXPECT_EQ(t.client_address("127.0.0.1", "unknown"), "127.0.0.1");
    EXPECT_EQ(t.client_address("127.0.0.1", "1.2.3.4:5:6"), "127.0.0.1");
    EXPECT_EQ(t.client_address("127.0.0.1", "[1.2.3.4]:80"), "127.0.0.1");
    // Only trusted addresses: the left-most of them.
    EXPECT_EQ(t.client_address("127.0.0.1", "10.9.9.9, 10.1.1.1"), "10.9.9.9");
    // Trusting nobody: the peer.
    EXPECT_EQ(TrustedProxies().client_address("127.0.0.1", "198.51.100.1"), "127.0.0.1");
}

}  // namespace
}  // namespace tokenradar::net
