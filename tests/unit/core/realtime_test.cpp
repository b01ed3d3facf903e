#include <pthread.h>
#include <sched.h>

#include <tokenradar/core/realtime.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace tokenradar {
namespace {

TEST(Realtime, PrioritiesOutsideOneToNinetyNineAreRefusedWithTheRange) {
    for (int priority : {0, -1, 100}) {
        auto r = use_realtime_scheduling(priority);
        ASSERT_FALSE(r) << priority;
        EXPECT_EQ(r.error().code, Errc::bad_request);
        EXPECT_THAT(r.error().message, ::testing::HasSubstr("expected 1 to 99"));
    }
}

// On a thread of its own, so the test runner's thread keeps its policy.
TEST(Realtime, TheThreadRunsFifoAtThePriorityAndItsChildrenInheritIt) {
    std::thread([] {
        auto r = use_realtime_scheduling(7);
        if (!r) {
            // Allowed to fail only for want of the privilege (a container may drop
            // CAP_SYS_NICE even for root), and then it must say what is missing.
            EXPECT_THAT(r.error().message,
                        ::testing::HasSubstr("Operation not permitted (needs root, CAP_SYS_NICE"));
            return;
        }
        const auto policy_of_this_thread = [] {
            int policy = 0;
            sched_param param{};
            EXPECT_EQ(pthread_getschedparam(pthread_self(), &policy, &param), 0);
            return std::pair(policy, param.sched_priority);
        };
        EXPECT_EQ(policy_of_this_thread(), std::pair(SCHED_FIFO, 7));
        std::pair<int, int> child{};
        std::thread([&] { child = policy_of_this_thread(); }).join();
        EXPECT_EQ(child, std::pair(SCHED_FIFO, 7));
    }).join();
}

}  // namespace
}  // namespace tokenradar
