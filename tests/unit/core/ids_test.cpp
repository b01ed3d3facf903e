#include <tokenradar/core/ids.hpp>

#include <gtest/gtest.h>

#include <set>

namespace tokenradar {
namespace {

TEST(Ids, RequestIdsAreHexAndUnique) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto id = new_request_id("chatcmpl-");
        ASSERT_EQ(id.size(), 9u + 32u);
        EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 9), std::string::npos);
        EXPECT_TRUE(seen.insert(id).second);
    }
}

TEST(Ids, Fnv1aMatchesReferenceVectors) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace tokenradar
