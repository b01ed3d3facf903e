// What a scheduled probe costs the gateway (issue target: under 1 ms of CPU per probe request):
// serve's Prober sends `requests` probe requests per run to an instant sim on another thread
// (the workloads/probe.toml workload, streamed, 16 tokens) and the probe thread's CPU is read
// per recorded request. The sim's CPU is not counted; the record's store write (a few us on
// the writer thread, bench/README.md "store insert") is not included.
#include <tokenradar/bench/workload.hpp>
#include <tokenradar/net/url.hpp>
#include <tokenradar/serve/prober.hpp>
#include <tokenradar/sim/profile.hpp>
#include <tokenradar/sim/sim_server.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <thread>

namespace {

using namespace tokenradar;

const std::filesystem::path kSource = TOKENRADAR_SOURCE_DIR;

void BM_ProbeRequest_Cpu(benchmark::State& state) {
    boost::asio::io_context sim_io;
    auto guard = boost::asio::make_work_guard(sim_io);
    sim::SimServer sim(sim_io, sim::load_profile("instant", kSource / "profiles"), {});
    const std::uint16_t port = sim.listen("127.0.0.1", 0).value();
    sim.start();
    std::thread sim_thread([&] { sim_io.run(); });

    gateway::ProviderConfig provider;
    provider.name = "sim";
    provider.key = Secret("sk-probe-bench");  // the sim wants a key's header, any key
    provider.base = *net::parse_url("http://127.0.0.1:" + std::to_string(port) + "/v1");
    serve::ProbeConfig config;
    config.workload = bench::load_workload("probe", kSource / "workloads");
    config.interval = std::chrono::seconds(3600);  // one run of `requests`
    config.jitter = std::chrono::seconds(0);
    config.requests = state.range(0);
    config.targets.push_back({0, "gpt-4o"});
    const auto n = static_cast<std::uint64_t>(state.range(0));
    std::atomic<std::uint64_t> recorded{0};
    double cpu = 0;
    for (auto _ : state) {
        recorded = 0;
        serve::Prober prober(config, {provider}, [&](Measurement&&) { ++recorded; });
        prober.start();
        while (recorded.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        cpu = prober.cpu_seconds();
        prober.stop();
        if (prober.counters()[0].failures != 0) state.SkipWithError("a probe failed");
    }
    state.counters["cpu_us_per_probe"] = cpu * 1e6 / static_cast<double>(n);
    sim.stop(std::chrono::milliseconds(0));
    guard.reset();
    sim_thread.join();
}
BENCHMARK(BM_ProbeRequest_Cpu)->Arg(2000)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
