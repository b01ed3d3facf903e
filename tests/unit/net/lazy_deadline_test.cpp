#include "../../../src/net/lazy_deadline.hpp"

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <chrono>

namespace tokenradar::net::detail {
namespace {

using namespace std::chrono_literals;
using Clock = LazyDeadline::Clock;

struct Fixture {
    asio::io_context ioc{1};
    int expired = 0;
    Clock::time_point expired_at{};
    std::shared_ptr<LazyDeadline> deadline =
        std::make_shared<LazyDeadline>(ioc.get_executor(), [this] {
            ++expired;
            expired_at = Clock::now();
        });
};

TEST(LazyDeadline, RunsOnExpiryOnceTheDeadlinePassed) {
    Fixture f;
    const auto start = Clock::now();
    f.deadline->set(start + 20ms);
    f.ioc.run();
    EXPECT_EQ(f.expired, 1);
    EXPECT_TRUE(f.deadline->fired());
    EXPECT_GE(f.expired_at - start, 20ms);
}

TEST(LazyDeadline, MovingLaterKeepsThePendingWaitAndRearmsWhenItFires) {
    Fixture f;
    const auto start = Clock::now();
    f.deadline->set(start + 20ms);
    const auto armed = f.deadline->armed();
    f.deadline->set(start + 60ms);
    EXPECT_EQ(f.deadline->armed(), armed);  // no timer operation for a later deadline
    EXPECT_FALSE(f.deadline->fired());
    f.ioc.run();
    EXPECT_EQ(f.expired, 1);
    EXPECT_GE(f.expired_at - start, 60ms);
}

TEST(LazyDeadline, MovingEarlierRearms) {
    Fixture f;
    const auto start = Clock::now();
    f.deadline->set(start + 10s);
    f.deadline->set(start + 20ms);
    EXPECT_EQ(f.deadline->armed(), start + 20ms);
    f.ioc.run();
    EXPECT_EQ(f.expired, 1);
    EXPECT_LT(f.expired_at - start, 5s);
}

TEST(LazyDeadline, NoDeadlineWhenTheWaitFiresMeansNoExpiry) {
    Fixture f;
    f.deadline->set(Clock::now() + 20ms);
    f.deadline->set(LazyDeadline::kNone);  // the phase ended; the wait stays pending
    EXPECT_NE(f.deadline->armed(), LazyDeadline::kNone);
    f.ioc.run();  // returns once the wait fired and found nothing to do
    EXPECT_EQ(f.expired, 0);
    EXPECT_FALSE(f.deadline->fired());
    EXPECT_EQ(f.deadline->armed(), LazyDeadline::kNone);
}

TEST(LazyDeadline, ReleaseSoonLetsRunReturnAtOnce) {
    Fixture f;
    f.deadline->set(Clock::now() + 10s);
    f.deadline->set(LazyDeadline::kNone);
    f.deadline->release_soon();
    const auto start = Clock::now();
    f.ioc.run();
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_EQ(f.expired, 0);
}

TEST(LazyDeadline, ReleaseSoonKeepsTheWaitWhenANewPhaseStartsFirst) {
    Fixture f;
    const auto start = Clock::now();
    f.deadline->set(start + 20ms);
    f.deadline->set(LazyDeadline::kNone);
    f.deadline->release_soon();
    f.deadline->set(start + 30ms);  // before the posted check runs
    f.ioc.run();
    EXPECT_EQ(f.expired, 1);
    EXPECT_GE(f.expired_at - start, 30ms);
}

TEST(LazyDeadline, ClearCancelsThePendingWait) {
    Fixture f;
    f.deadline->set(Clock::now() + 10s);
    f.deadline->clear();
    EXPECT_EQ(f.deadline->armed(), LazyDeadline::kNone);
    const auto start = Clock::now();
    f.ioc.run();
    EXPECT_LT(Clock::now() - start, 5s);
    EXPECT_EQ(f.expired, 0);
}

TEST(LazyDeadline, DestroyedWithAWaitPendingDoesNothingLater) {
    Fixture f;
    f.deadline->set(Clock::now() + 20ms);
    f.deadline.reset();
    f.ioc.run();
    EXPECT_EQ(f.expired, 0);
}

}  // namespace
}  // namespace tokenradar::net::detail
