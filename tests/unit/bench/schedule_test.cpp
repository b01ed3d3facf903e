#include <tokenradar/bench/schedule.hpp>

#include <gtest/gtest.h>

#include <map>

namespace tokenradar::bench {
namespace {

using std::chrono::seconds;

TEST(Schedule, ConstantArrivalsAreEvenlySpaced) {
    auto s = open_loop_schedule(100, Arrival::constant, 5, {}, 1);
    EXPECT_EQ(s, (std::vector<std::int64_t>{0, 10'000'000, 20'000'000, 30'000'000, 40'000'000}));
}

TEST(Schedule, PoissonHasTheRequestedRateAndIsSeeded) {
    auto s = open_loop_schedule(200, Arrival::poisson, 0, seconds(100), 42);
    EXPECT_NEAR(static_cast<double>(s.size()), 20000, 3 * std::sqrt(20000.0));
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    EXPECT_LT(s.back(), seconds(100).count() * 1'000'000'000LL);
    EXPECT_EQ(s, open_loop_schedule(200, Arrival::poisson, 0, seconds(100), 42));
    EXPECT_NE(s, open_loop_schedule(200, Arrival::poisson, 0, seconds(100), 43));
}

TEST(Schedule, AnArrivalSequenceGivesTheScheduleOneOffsetAtATime) {
    for (const Arrival arrival : {Arrival::poisson, Arrival::constant}) {
        const auto planned = open_loop_schedule(50, arrival, 1000, {}, 7);
        ArrivalSequence sequence(50, arrival, 7);
        std::vector<std::int64_t> one_by_one;
        for (int i = 0; i < 1000; ++i) one_by_one.push_back(sequence.next());
        EXPECT_EQ(one_by_one, planned);
    }
}

TEST(Schedule, TargetsInterleaveInRandomisedRounds) {
    TargetOrder order(3, 9);
    std::map<std::size_t, int> counts;
    std::vector<std::size_t> first_rounds;
    for (int i = 0; i < 300; ++i) {
        auto t = order.next();
        ++counts[t];
        first_rounds.push_back(t);
    }
    for (std::size_t round = 0; round < 100; ++round) {
        std::vector<std::size_t> r(first_rounds.begin() + round * 3,
                                   first_rounds.begin() + round * 3 + 3);
        std::sort(r.begin(), r.end());
        EXPECT_EQ(r, (std::vector<std::size_t>{0, 1, 2}));
    }
    EXPECT_EQ(counts[0], 100);
    // Not always the same order.
    EXPECT_NE(std::vector(first_rounds.begin(), first_rounds.begin() + 3),
              std::vector(first_rounds.begin() + 3, first_rounds.begin() + 6))
        << "seed-dependent; pick another seed";
}

TEST(Schedule, ParsesArrival) {
    EXPECT_EQ(parse_arrival("poisson"), Arrival::poisson);
    EXPECT_EQ(parse_arrival("constant"), Arrival::constant);
    EXPECT_FALSE(parse_arrival("uniform"));
}

}  // namespace
}  // namespace tokenradar::bench
