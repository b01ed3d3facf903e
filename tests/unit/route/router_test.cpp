#include <tokenradar/route/router.hpp>

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <optional>

namespace tokenradar::route {
namespace {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kS = 1'000 * kMs;

std::vector<std::shared_ptr<UpstreamEstimate>> members(std::size_t n, UpstreamLimits limits = {}) {
    std::vector<std::shared_ptr<UpstreamEstimate>> out;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(std::make_shared<UpstreamEstimate>(EstimatePolicy{}, limits));
    }
    return out;
}

RoutingPolicy with(Strategy strategy) {
    RoutingPolicy p;
    p.strategy = strategy;
    return p;
}

void observe(UpstreamEstimate& e, std::int64_t now, std::int64_t ttft) {
    e.started(now);
    e.first_token(now, ttft, 0);
    e.finished(now, 1, 0);
}

RouteQuery at(std::int64_t now, std::uint64_t tried = 0) {
    RouteQuery q;
    q.now_ns = now;
    q.tried = tried;
    return q;
}

RouteQuery with_prefix(const std::vector<std::uint64_t>& prefix) {
    RouteQuery q;
    q.prefix = prefix;
    return q;
}

RouteQuery request(std::int64_t prompt_tokens, std::optional<std::int64_t> max_tokens,
                   std::string_view task, std::int64_t now = 0) {
    RouteQuery q;
    q.now_ns = now;
    q.prompt_tokens = prompt_tokens;
    q.max_tokens = max_tokens;
    q.task = task;
    return q;
}

UpstreamLimits limits(double weight, std::int64_t max_in_flight = 0) {
    UpstreamLimits l;
    l.weight = weight;
    l.max_in_flight = max_in_flight;
    return l;
}

TEST(Router, PriorityTakesTheFirstAvailableAndSaysWhy) {
    auto m = members(3);
    Router router(with(Strategy::priority), m, 1);
    auto pick = router.pick(at(0));
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->member, 0u);
    EXPECT_EQ(pick->route, Route::primary);
    pick = router.pick(at(0, 1));
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->member, 1u);
    EXPECT_EQ(pick->route, Route::fallback);
    EXPECT_FALSE(router.pick(at(0, 7)));
    // The primary's breaker is open: the first attempt goes to the next, as a fallback.
    for (int i = 0; i < 5; ++i) {
        m[0]->started(0);
        m[0]->failed(0, 1);
    }
    pick = router.pick(at(1));
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->member, 1u);
    EXPECT_EQ(pick->route, Route::fallback);
}

TEST(Router, RoundRobinTakesTurnsAndSkipsWhatIsOut) {
    auto m = members(3);
    Router router(with(Strategy::round_robin), m, 1);
    std::map<std::size_t, int> turns;
    for (int i = 0; i < 9; ++i) ++turns[router.pick(at(0))->member];
    EXPECT_EQ(turns, (std::map<std::size_t, int>{{0, 3}, {1, 3}, {2, 3}}));
    for (int i = 0; i < 5; ++i) {
        m[1]->started(0);
        m[1]->failed(0, 1);
    }
    turns.clear();
    for (int i = 0; i < 8; ++i) ++turns[router.pick(at(1))->member];
    EXPECT_EQ(turns.count(1), 0u);
}

TEST(Router, TheNearestRegionIsPreferredWhileItCanTakeTheRequest) {
    auto m = members(4);  // 0, 1 in the far region; 2, 3 in the near one
    Router router(with(Strategy::latency), m, 9);
    for (auto& e : m) observe(*e, 0, 100 * kMs);
    RouteQuery q = at(1);
    q.elsewhere = 0b0011;
    std::map<std::size_t, int> picks;
    for (int i = 0; i < 100; ++i) {
        auto pick = router.pick(q);
        ASSERT_TRUE(pick);
        EXPECT_EQ(pick->route, Route::region);
        ++picks[pick->member];
    }
    EXPECT_EQ(picks[0] + picks[1], 0);
    EXPECT_GT(picks[2], 20);
    EXPECT_GT(picks[3], 20);
    // Both near members out (breakers open): the far region takes it.
    for (std::size_t near : {2U, 3U}) {
        for (int i = 0; i < 5; ++i) {
            m[near]->started(1);
            m[near]->failed(1, 1);
        }
    }
    auto far = router.pick(q);
    ASSERT_TRUE(far);
    EXPECT_LT(far->member, 2u);
    EXPECT_EQ(far->route, Route::latency);
}

TEST(Router, WhenNoneIsAvailableTheBestStillGetsTheRequest) {
    auto m = members(2, limits(1.0, 1));
    Router router(with(Strategy::priority), m, 1);
    m[0]->started(0);
    m[1]->started(0);
    auto pick = router.pick(at(0));
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->member, 0u);
}

// A little event simulation: a request every 20 ms, each in flight for its replica's TTFT.
TEST(Router, LatencyMovesTrafficAwayFromASlowReplicaAndBalancesEqualOnes) {
    auto m = members(3);
    Router router(with(Strategy::latency), m, 7);
    const std::array<std::int64_t, 3> ttft{200 * kMs, 200 * kMs, 600 * kMs};  // the last 3x
    std::multimap<std::int64_t, std::size_t> ends;  // completion time -> member
    std::map<std::size_t, int> share;
    for (int i = 0; i < 3000; ++i) {
        const std::int64_t now = i * 20 * kMs;
        while (!ends.empty() && ends.begin()->first <= now) {
            const auto [at, member] = *ends.begin();
            ends.erase(ends.begin());
            m[member]->first_token(at, ttft[member], 0);
            m[member]->finished(at, 1, 0);
        }
        auto pick = router.pick(at(now));
        ASSERT_TRUE(pick);
        EXPECT_EQ(pick->route, Route::latency);
        if (i >= 100) ++share[pick->member];  // after the first estimates
        m[pick->member]->started(now);
        ends.emplace(now + ttft[pick->member], pick->member);
    }
    EXPECT_LT(share[2], 2900 / 10);  // under 10% to the slow one
    EXPECT_NEAR(share[0], share[1], 2900 / 10);
}

TEST(Router, LatencyRespectsWeights) {
    std::vector<std::shared_ptr<UpstreamEstimate>> m{
        std::make_shared<UpstreamEstimate>(EstimatePolicy{}, limits(3.0)),
        std::make_shared<UpstreamEstimate>(EstimatePolicy{}, limits(1.0))};
    Router router(with(Strategy::latency), m, 3);
    for (auto& e : m) observe(*e, 0, 100 * kMs);
    std::map<std::size_t, int> share;
    for (int i = 0; i < 4000; ++i) {
        auto pick = router.pick(at(100 * kMs));
        ++share[pick->member];
        m[pick->member]->started(0);
        if (i % 4 == 3) {
            for (auto& e : m) {
                while (e->in_flight() > 0) e->abandoned();
            }
        }
    }
    EXPECT_GT(share[0], 2 * share[1]);  // 3:1 weights
}

TEST(Router, AffinityFollowsTheReplicaThatServedThePrefixUntilTheLoadGuard) {
    RoutingPolicy policy = with(Strategy::affinity);
    policy.affinity.load_slack = 2;
    policy.affinity.load_ratio = 1.5;
    auto m = members(4);
    Router router(policy, m, 5);
    const std::vector<std::uint64_t> turn1{11, 12, 13, 14};
    const std::vector<std::uint64_t> turn2{11, 12, 13, 14, 15, 16};
    auto first = router.pick(with_prefix(turn1));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->route, Route::affinity);
    // Placed by the prompt's hash: the same choice every time (and on every node).
    Router other(policy, members(4), 99);
    EXPECT_EQ(other.pick(with_prefix(turn1))->member, first->member);
    router.served(turn1, first->member);
    auto second = router.pick(with_prefix(turn2));
    ASSERT_TRUE(second);
    EXPECT_EQ(second->member, first->member);
    EXPECT_EQ(second->route, Route::affinity);
    // Overloaded: 4 in flight there, none elsewhere: the latency choice takes it.
    for (int i = 0; i < 4; ++i) m[first->member]->started(0);
    auto guarded = router.pick(with_prefix(turn2));
    ASSERT_TRUE(guarded);
    EXPECT_NE(guarded->member, first->member);
    EXPECT_EQ(guarded->route, Route::latency);
}

TEST(Router, AffinityNeedsAMatchOfMostOfThePrompt) {
    RoutingPolicy policy = with(Strategy::affinity);
    auto m = members(8);
    Router router(policy, m, 5);
    // Only a shared system prompt (1 of 4 blocks) was seen: the prompt's own hash places it,
    // so conversations that share just a system prompt spread over the replicas.
    router.served(std::vector<std::uint64_t>{1}, 0);
    std::map<std::size_t, int> placed;
    for (std::uint64_t q = 0; q < 200; ++q) {
        const std::vector<std::uint64_t> prompt{1, 100 + q, 1000 + q, 5000 + q};
        ++placed[router.pick(with_prefix(prompt))->member];
    }
    EXPECT_GE(placed.size(), 6u);
}

TEST(Router, OffloadSendsShortSimpleRequestsLocalAndOverflowsWhenBusy) {
    RoutingPolicy policy = with(Strategy::priority);
    policy.offload.enabled = true;
    policy.offload.max_prompt_tokens = 500;
    policy.offload.max_tokens = 200;
    policy.offload.tasks = {"chat"};
    policy.offload.max_in_flight = 1;
    policy.offload.max_ttft_ns = 300 * kMs;
    auto m = members(3);  // two cloud upstreams, the local server last
    Router router(policy, m, 1);
    const RouteQuery simple = request(100, 100, "chat");
    auto pick = router.pick(simple);
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->member, 2u);
    EXPECT_EQ(pick->route, Route::local);
    for (const RouteQuery& q : {request(900, 100, "chat"), request(100, std::nullopt, "chat"),
                                request(100, 100, "code")}) {
        EXPECT_EQ(router.pick(q)->member, 0u);
    }
    m[2]->started(0);  // busy
    EXPECT_EQ(router.pick(simple)->member, 0u);
    m[2]->first_token(0, 900 * kMs, 0);  // and slow
    m[2]->finished(0, 1, 0);
    EXPECT_EQ(router.pick(request(100, 100, "chat", 1))->member, 0u);
    // The local server is never a cloud choice, but it is the last resort.
    EXPECT_EQ(router.pick(at(0, 3))->member, 2u);
}

TEST(Router, HedgeDelayIsTheRecentP95AndTheBudgetCapsHedges) {
    RoutingPolicy policy = with(Strategy::priority);
    policy.hedge.enabled = true;
    policy.hedge.min_delay_ns = 50 * kMs;
    policy.hedge.min_samples = 20;
    policy.hedge.budget = 0.1;
    auto m = members(2);
    Router router(policy, m, 1);
    EXPECT_FALSE(router.hedge_delay(0, 0, false));  // no samples yet
    for (int i = 1; i <= 100; ++i) observe(*m[0], i, i * kMs);
    EXPECT_EQ(router.hedge_delay(0, 0, false), 95 * kMs);
    RoutingPolicy p90 = policy;
    p90.hedge.quantile = 0.9;
    EXPECT_EQ(Router(p90, m, 1).hedge_delay(0, 0, false), 90 * kMs);
    EXPECT_FALSE(router.hedge_delay(0, 0, true));  // tools: opted out by default
    int hedges = 0;
    for (int i = 0; i < 1000; ++i) {
        router.count_request();
        if (router.take_hedge()) ++hedges;
    }
    EXPECT_EQ(hedges, 100);
    // Unused budget banks at most 10 hedges.
    for (int i = 0; i < 1000; ++i) router.count_request();
    hedges = 0;
    while (router.take_hedge()) ++hedges;
    EXPECT_EQ(hedges, 10);
    policy.hedge.delay_ns = 30 * kMs;
    policy.hedge.tools = true;
    Router fixed(policy, m, 1);
    EXPECT_EQ(fixed.hedge_delay(1, 0, true), 30 * kMs);
}

}  // namespace
}  // namespace tokenradar::route
