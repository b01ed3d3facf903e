#include <tokenradar/cache/cache_control.hpp>

#include <gtest/gtest.h>

namespace tokenradar::cache {
namespace {

TEST(CacheControl, ReadsTheRequestDirectivesCaseInsensitively) {
    const CacheControl cc = parse_cache_control("No-Cache, max-age=60 ,ONLY-IF-CACHED");
    EXPECT_TRUE(cc.no_cache);
    EXPECT_FALSE(cc.no_store);
    EXPECT_TRUE(cc.only_if_cached);
    ASSERT_TRUE(cc.max_age_s);
    EXPECT_EQ(*cc.max_age_s, 60);
    EXPECT_TRUE(parse_cache_control("no-store").no_store);
}

TEST(CacheControl, IgnoresWhatItDoesNotUnderstand) {
    const CacheControl cc = parse_cache_control("max-age=abc, max-age=, private, no-transform");
    EXPECT_FALSE(cc.max_age_s);
    EXPECT_FALSE(cc.no_cache);
    EXPECT_FALSE(cc.no_store);
    EXPECT_FALSE(parse_cache_control("").max_age_s);
    EXPECT_FALSE(parse_cache_control(",,,").no_store);
    // A directive name is the whole token: "no-store-x" is not no-store.
    EXPECT_FALSE(parse_cache_control("no-store-x").no_store);
}

TEST(CacheControl, QuotedAgesAreReadAndHugeOnesClamped) {
    EXPECT_EQ(parse_cache_control("max-age=\"30\"").max_age_s, 30);
    EXPECT_EQ(parse_cache_control("max-age=99999999999999999999").max_age_s, 2147483647);
    // Two max-ages: the stricter one.
    EXPECT_EQ(parse_cache_control("max-age=600, max-age=5").max_age_s, 5);
    EXPECT_EQ(parse_cache_control("max-age=0").max_age_s, 0);
}

}  // namespace
}  // namespace tokenradar::cache
