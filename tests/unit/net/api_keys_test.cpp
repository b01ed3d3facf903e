#include <tokenradar/net/api_keys.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace tokenradar::net {
namespace {

TEST(ApiKeys, DigestsAreSha256InLowercaseHex) {
    // FIPS 180-2's test vectors: a wrong digest would pass every test that hashes both sides.
    EXPECT_EQ(hash_api_key("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(hash_api_key(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(ApiKeys, ABearerKeyIsFoundByItsDigest) {
    const std::vector<ApiKey> keys{{"a", hash_api_key("key-a")}, {"b", hash_api_key("key-b")}};
    EXPECT_EQ(find_bearer_key("Bearer key-b", keys), 1U);
    EXPECT_EQ(find_bearer_key("Bearer key-c", keys), std::nullopt);
    EXPECT_EQ(find_bearer_key("Basic key-b", keys), std::nullopt);
    EXPECT_EQ(find_bearer_key("Bearer ", keys), std::nullopt);
    EXPECT_EQ(bearer_digest("Bearer key-a"), hash_api_key("key-a"));
    EXPECT_EQ(find_digest(hash_api_key("key-a"), keys), 0U);
    EXPECT_EQ(find_digest("short", keys), std::nullopt);
}

}  // namespace
}  // namespace tokenradar::net
