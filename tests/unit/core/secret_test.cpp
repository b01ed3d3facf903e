#include <tokenradar/core/secret.hpp>

#include <gtest/gtest.h>

#include <sstream>

namespace tokenradar {
namespace {

TEST(Secret, NeverFormatsItsValue) {
    Secret key("sk-live-123456");
    EXPECT_EQ(fmt::format("key={}", key), "key=[redacted]");
    std::ostringstream os;
    os << key;
    EXPECT_EQ(os.str(), "[redacted]");
    EXPECT_EQ(key.reveal(), "sk-live-123456");
}

}  // namespace
}  // namespace tokenradar
