#include <tokenradar/core/ids.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>

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

TEST(Ids, RequestIdsStartWithTheirMillisecondSoLaterIdsSortLater) {
    const auto now_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    const auto before = now_ms();
    const std::string first = new_request_id();
    const auto after = now_ms();
    const auto stamped = static_cast<std::int64_t>(std::stoull(first.substr(0, 12), nullptr, 16));
    EXPECT_GE(stamped, before);
    EXPECT_LE(stamped, after);

    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const std::string second = new_request_id();
    EXPECT_LT(first, second);
    // The rest is random: two ids of one millisecond still differ past the time field.
    EXPECT_NE(new_request_id().substr(12), new_request_id().substr(12));
}

TEST(Ids, Fnv1aMatchesReferenceVectors) {
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
}

}  // namespace
}  // namespace tokenradar
