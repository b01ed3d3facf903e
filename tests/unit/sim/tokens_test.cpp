#include <tokenradar/sim/tokens.hpp>

#include <gtest/gtest.h>

namespace tokenradar::sim {
namespace {

TEST(Tokens, OutputIsDeterministicAndExact) {
    auto a = generate_output_tokens(42, 300);
    auto b = generate_output_tokens(42, 300);
    auto c = generate_output_tokens(43, 300);
    ASSERT_EQ(a.size(), 300u);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    auto shorter = generate_output_tokens(42, 10);
    EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), a.begin()));
    EXPECT_TRUE(generate_output_tokens(1, 0).empty());
    EXPECT_NE(a[0].front(), ' ');
    for (std::size_t i = 1; i < a.size(); ++i) EXPECT_FALSE(a[i].empty());
    const std::string text = join_tokens(a);
    EXPECT_NE(text.find(". "), std::string::npos);
    EXPECT_EQ(join_tokens(a, 0, 2), std::string(a[0]) + std::string(a[1]));
    EXPECT_EQ(join_tokens(a, 299, 5), std::string(a[299]));
}

}  // namespace
}  // namespace tokenradar::sim
