#include <tokenradar/net/header_list.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace tokenradar::net {
namespace {

constexpr std::string_view kLong = "x-tokenradar-overhead-us";  // over the 15-byte inline buffer

TEST(HeaderName, ConstantViewsItsStorageThroughCopiesAndMoves) {
    const HeaderName name = HeaderName::constant(kLong);
    EXPECT_EQ(name.view(), "x-tokenradar-overhead-us");
    EXPECT_EQ(name.view().data(), kLong.data());  // not copied: no allocation
    EXPECT_EQ(name.size(), 24u);
    HeaderName copy = name;
    EXPECT_EQ(copy.view().data(), kLong.data());
    const HeaderName moved = std::move(copy);
    EXPECT_EQ(moved.view().data(), kLong.data());

    HeaderList headers;
    headers.emplace_back(name, "7");
    ASSERT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers[0].first.view().data(), kLong.data());
    EXPECT_EQ(headers[0].second, "7");
}

TEST(HeaderName, StringsAreOwnedCopies) {
    std::string source(kLong);
    const HeaderName from_string = source;
    const HeaderName from_view = std::string_view(source);
    const HeaderName from_literal = "etag";
    source.assign("changed");  // the names kept their own bytes
    EXPECT_EQ(from_string.view(), "x-tokenradar-overhead-us");
    EXPECT_EQ(from_view.view(), "x-tokenradar-overhead-us");
    EXPECT_NE(from_view.view().data(), source.data());
    EXPECT_EQ(from_literal.view(), "etag");
    EXPECT_TRUE(from_literal == "etag");
    EXPECT_FALSE(from_literal == "etags");
    EXPECT_EQ(HeaderName().view(), "");
}

TEST(HeaderList, BuildsLikeAListOfStringPairs) {
    HeaderList headers{{"cache-control", "no-cache"}, {HeaderName::constant(kLong), "12"}};
    headers.emplace_back("retry-after", "1");
    headers.resize(2);  // the relay drops an attempt's headers this way
    ASSERT_EQ(headers.size(), 2u);
    const std::string_view first = headers[0].first;
    EXPECT_EQ(first, "cache-control");
    EXPECT_EQ(headers[1].first.view(), kLong);
    EXPECT_EQ(headers[1].second, "12");
}

}  // namespace
}  // namespace tokenradar::net
