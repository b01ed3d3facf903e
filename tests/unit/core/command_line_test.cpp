#include <tokenradar/core/command_line.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TEST(CommandLine, HeaderValuesAndUrlPasswordsAreRedacted) {
    const char* argv[] = {"tokenradar",  "bench",
                          "--target",    "a=openai:https://user:pw@host/v1#m",
                          "--header",    "Authorization: Bearer sk-1",
                          "x-b: secret", "--header=x-c: 2",
                          "--requests",  "5"};
    EXPECT_EQ(redacted_command_line(10, argv),
              "tokenradar bench --target a=openai:https://[redacted]@host/v1#m --header [redacted] "
              "[redacted] "
              "--header=[redacted] --requests 5");
}

TEST(CommandLine, OrdinaryArgumentsAreKept) {
    const char* argv[] = {"tokenradar", "bench", "--target",
                          "a=openai:http://127.0.0.1:8101/v1#m@x"};
    EXPECT_EQ(redacted_command_line(4, argv),
              "tokenradar bench --target a=openai:http://127.0.0.1:8101/v1#m@x");
}

}  // namespace
}  // namespace tokenradar
