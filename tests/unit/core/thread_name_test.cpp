#include <tokenradar/core/thread_name.hpp>

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace tokenradar {
namespace {

std::string name_in_thread(std::string_view name) {
    std::string seen;
    std::thread([&] {
        name_this_thread(name);
        seen = this_thread_name();
    }).join();
    return seen;
}

TEST(ThreadName, NamesTheCallingThreadOnly) {
    const std::string before = this_thread_name();
    EXPECT_EQ(name_in_thread("tr-store"), "tr-store");
    EXPECT_EQ(this_thread_name(), before);
}

TEST(ThreadName, CutsALongNameAtFifteenBytes) {
    EXPECT_EQ(name_in_thread("tr-a-very-long-thread-name"), "tr-a-very-long-");
}

}  // namespace
}  // namespace tokenradar
