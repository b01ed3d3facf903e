// The routing decision on the gateway's request path (route::Router::pick plus the attempt's
// start and first-token report), per strategy, over 4 upstreams with live estimates. The
// issue's bound is 2 us per request; prefix hashing of the prompt is measured on its own
// (it scales with the prompt, not with the decision).

#include <tokenradar/route/prefix_blocks.hpp>
#include <tokenradar/route/router.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace tokenradar::route;

std::vector<std::shared_ptr<UpstreamEstimate>> warm_members(std::size_t n) {
    std::vector<std::shared_ptr<UpstreamEstimate>> out;
    for (std::size_t i = 0; i < n; ++i) {
        auto e = std::make_shared<UpstreamEstimate>(EstimatePolicy{}, UpstreamLimits{});
        for (int k = 0; k < 200; ++k) {
            e->started(k);
            e->first_token(k, 200'000'000 + static_cast<std::int64_t>(i) * 10'000'000, 500);
            e->finished(k, 100, 20e6);
        }
        out.push_back(std::move(e));
    }
    return out;
}

// One request's routing work: pick, start, first token, finish.
void BM_Router_Decision(benchmark::State& state) {
    RoutingPolicy policy;
    policy.strategy = static_cast<Strategy>(state.range(0));
    policy.hedge.enabled = true;
    auto members = warm_members(4);
    Router router(policy, members, 1);
    const std::vector<std::uint64_t> prefix{1, 2, 3, 4, 5, 6, 7, 8};
    router.served(prefix, 2);
    std::int64_t now = 1'000'000'000;
    for (auto _ : state) {
        RouteQuery q;
        q.now_ns = now;
        q.prompt_tokens = 500;
        q.prefix = prefix;
        router.count_request();
        auto pick = router.pick(q);
        benchmark::DoNotOptimize(router.hedge_delay(pick->member, 500, false));
        UpstreamEstimate& e = router.member(pick->member);
        e.started(now);
        e.first_token(now + 1000, 200'000'000, 500);
        e.finished(now + 2000, 600, 20e6);
        now += 1'000'000;
    }
    state.SetLabel(std::string(to_string(policy.strategy)));
}
BENCHMARK(BM_Router_Decision)->DenseRange(0, 3);

// Hashing a prompt's blocks for affinity: 16 KB of system prompt plus a question.
void BM_Router_PrefixBlocks16K(benchmark::State& state) {
    tokenradar::dialect::ChatRequest chat;
    tokenradar::dialect::Message system;
    system.role = tokenradar::dialect::Role::system;
    system.content.push_back(tokenradar::dialect::ContentPart::make_text(std::string(16384, 's')));
    chat.messages.push_back(system);
    tokenradar::dialect::Message user;
    user.role = tokenradar::dialect::Role::user;
    user.content.push_back(tokenradar::dialect::ContentPart::make_text("what is new?"));
    chat.messages.push_back(user);
    for (auto _ : state) benchmark::DoNotOptimize(prefix_blocks(chat, 256, 512));
}
BENCHMARK(BM_Router_PrefixBlocks16K);

}  // namespace
