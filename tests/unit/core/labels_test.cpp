#include <tokenradar/core/labels.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar {
namespace {

TEST(Labels, SimpleNames) {
    EXPECT_TRUE(is_simple_name("gen-500"));
    EXPECT_TRUE(is_simple_name("us_east.1"));
    EXPECT_TRUE(is_simple_name(std::string(64, 'a')));
    EXPECT_FALSE(is_simple_name(std::string(65, 'a')));
    EXPECT_FALSE(is_simple_name(""));
    EXPECT_FALSE(is_simple_name("a b"));
    EXPECT_FALSE(is_simple_name("a/b"));
    EXPECT_FALSE(is_simple_name("é"));
}

}  // namespace
}  // namespace tokenradar
