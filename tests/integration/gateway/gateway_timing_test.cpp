// What the gateway measures agrees with what a client measures through it: bench's TTFT of
// a request through the gateway equals the gateway's own upstream TTFT plus the gateway's
// overhead, to within 1 ms. Optimised build only (label `timing`).

#include <tokenradar/bench/probe.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/bench/target.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace tokenradar::gateway {
namespace {

TEST(GatewayTiming, BenchTtftThroughTheGatewayMatchesTheGatewaysRecord) {
    testing::SimFixture sim("fixed");  // 250 ms TTFT, 20 ms per token
    testing::GatewayFixture gw(R"(
[auth]
mode = "none"
[store]
path = ""
[[providers]]
name = "sim"
api = "openai"
base_url = ")" + sim.base_url() +
                               R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "fixed"
upstreams = ["sim/gpt-4o"]
)");
    const bench::EnvLookup no_env = [](std::string_view) { return std::optional<std::string>(); };
    auto target =
        bench::parse_target("gw=openai:" + gw.base_url() + "/v1#fixed", {}, no_env).value();

    // One batch: kRequests sequential streams; returns whether it agreed, printing each
    // request that did not.
    //  - Causality holds for every request: the client cannot see the first token before
    //    the gateway got it (50 us for the two clocks' reads).
    //  - The client's TTFT holds the gateway's plus the gateway's own time (the overhead
    //    header) plus loopback transit both ways: under 1 ms at the median, and for all but
    //    one request of the batch. A shared 2-core VM stalls a process for milliseconds now
    //    and then (CI once saw 2-2.6 ms on one request in eight, batch after batch); a
    //    gateway that stamps the first token in the wrong place moves them all.
    constexpr int kRequests = 8;
    auto batch_agrees = [&](int batch) {
        std::map<std::string, Measurement> client_side;  // by response id
        boost::asio::io_context ioc;
        net::HttpClient client(ioc.get_executor());
        for (int i = 0; i < kRequests; ++i) {
            bench::ProbeRequest request;
            request.prompt.user =
                "Batch " + std::to_string(batch) + " request " + std::to_string(i);
            request.prompt.max_tokens = 5;
            request.prompt.stream = true;
            request.task = "chat";
            request.request_id = "r" + std::to_string(i);
            auto result = testing::run_sync(ioc, bench::run_probe(client, target, request));
            EXPECT_EQ(result.record.status, RequestStatus::ok) << result.error;
            client_side[result.record.response_id] = result.record;
        }
        auto records = gw.records().wait_for(static_cast<std::size_t>(kRequests * (batch + 1)));
        EXPECT_EQ(records.size(), static_cast<std::size_t>(kRequests * (batch + 1)));
        int acausal = 0;
        int late = 0;
        std::vector<double> excess_ms;  // bench TTFT - gateway TTFT - overhead
        for (std::size_t r = static_cast<std::size_t>(kRequests * batch); r < records.size(); ++r) {
            const Measurement& gateway_side = records[r];
            if (!client_side.count(gateway_side.response_id)) {
                ADD_FAILURE() << "no client record for " << gateway_side.response_id;
                continue;
            }
            const auto& bench_side = client_side[gateway_side.response_id];
            EXPECT_EQ(gateway_side.output_tokens, bench_side.output_tokens);
            const double bench_ttft = *derive(bench_side).ttft_ms;
            const double gateway_ttft = *derive(gateway_side).ttft_ms;
            const double overhead_ms = static_cast<double>(*gateway_side.overhead_ns) / 1e6;
            excess_ms.push_back(bench_ttft - gateway_ttft - overhead_ms);
            const bool is_acausal = bench_ttft < gateway_ttft - 0.05;
            const bool is_late = excess_ms.back() > 1.0;
            acausal += is_acausal ? 1 : 0;
            late += is_late ? 1 : 0;
            if (is_acausal || is_late) {
                std::printf(
                    "batch %d: bench TTFT %.3f ms, gateway TTFT %.3f ms, overhead %.3f ms\n", batch,
                    bench_ttft, gateway_ttft, overhead_ms);
            }
        }
        EXPECT_EQ(acausal, 0) << "the client saw the first token before the gateway did";
        if (excess_ms.empty()) return false;
        std::sort(excess_ms.begin(), excess_ms.end());
        const double median_ms = excess_ms[excess_ms.size() / 2];
        return acausal == 0 && median_ms <= 1.0 && late <= 1;
    };
    // Up to three batches: one that agrees passes.
    bool agreed = false;
    for (int batch = 0; batch < 3 && !agreed; ++batch) agreed = batch_agrees(batch);
    EXPECT_TRUE(agreed) << "three batches of " << kRequests << " disagreed (each printed above)";
}

}  // namespace
}  // namespace tokenradar::gateway
