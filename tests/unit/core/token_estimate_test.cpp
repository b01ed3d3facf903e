#include <tokenradar/core/token_estimate.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TEST(TokenEstimate, IsCeilBytesOverFour) {
    static_assert(estimate_tokens("abcde") == 2);
    EXPECT_EQ(estimate_tokens(""), 0);
    EXPECT_EQ(estimate_tokens("a"), 1);
    EXPECT_EQ(estimate_tokens("abcd"), 1);
    EXPECT_EQ(estimate_tokens("h\xc3\xa9llo"), 2);  // 6 UTF-8 bytes
}

}  // namespace
}  // namespace tokenradar
