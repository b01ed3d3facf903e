#include <tokenradar/sim/pacing.hpp>

#include <gtest/gtest.h>

namespace tokenradar::sim {
namespace {

TEST(Pacing, WithoutAQuantumAWriteWakesExactlyWhenDue) {
    EXPECT_EQ(pacing_wake_ns(1'234'567, 0), 1'234'567);
    EXPECT_EQ(pacing_wake_ns(1'234'567, -5), 1'234'567);
}

TEST(Pacing, DueTimesRoundUpToTheQuantumSoOneQuantumSharesOneWakeUp) {
    constexpr std::int64_t q = 250'000;
    EXPECT_EQ(pacing_wake_ns(1'000'000, q), 1'000'000);  // on the grid: not delayed
    EXPECT_EQ(pacing_wake_ns(1'000'001, q), 1'250'000);
    EXPECT_EQ(pacing_wake_ns(1'249'999, q), 1'250'000);
    EXPECT_EQ(pacing_wake_ns(1'250'001, q), 1'500'000);
    // Steady-clock times are positive, but the rounding holds below zero too.
    EXPECT_EQ(pacing_wake_ns(-1, q), 0);
    EXPECT_EQ(pacing_wake_ns(-250'001, q), -250'000);
}

TEST(Pacing, AWakeIsNeverEarlyAndLateByLessThanOneQuantum) {
    constexpr std::int64_t q = 333'333;
    for (std::int64_t due = 5'000'000'000; due < 5'000'000'000 + 3 * q; due += 9'973) {
        const std::int64_t wake = pacing_wake_ns(due, q);
        EXPECT_GE(wake, due);
        EXPECT_LT(wake - due, q);
        EXPECT_EQ(wake % q, 0);
    }
}

}  // namespace
}  // namespace tokenradar::sim
