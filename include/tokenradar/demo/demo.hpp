#pragma once
// `tokenradar demo`: everything a new user needs to see the dashboard live, with no keys.
// The four published-comparison sim profiles run in-process, and three replicas of one of them
// behind a virtual model with latency routing (one slows down now and then); a gateway on the
// embedded SQLite store sits in front of them; the store first gets `history` of simulated
// records (`source = "sim"`, drawn from the same profiles) so the heatmaps are full at once;
// then steady traffic of every task type, streamed and not, goes through the gateway.
//
// Threads: run_demo() blocks the calling thread until SIGINT/SIGTERM. Inside it: a thread
// waiting for signals, one I/O thread for all the sims, the gateway's I/O and store-writer
// threads (serve::Service), and one I/O thread for the traffic (bench's runner).

#include <tokenradar/bench/runner.hpp>
#include <tokenradar/bench/workload.hpp>
#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/route/router.hpp>
#include <tokenradar/serve/config.hpp>
#include <tokenradar/sim/history.hpp>
#include <tokenradar/sim/profile.hpp>
#include <tokenradar/store/measurement_store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::demo {

// Everything the demo serves listens on this loopback address (auth is off).
inline constexpr std::string_view kDemoHost = "127.0.0.1";
// The gateway's shutdown grace: the traffic stops first, so only its abandoned requests are
// left to end.
inline constexpr std::chrono::milliseconds kGatewayGrace{2000};

// One simulated provider as the demo runs and labels it. Providers naming the same `model`
// are that virtual model's upstreams, in this order; the model's settings (`fallback`,
// `cache`, `routing`) are its first provider's, and the others repeat them. Fields that may be
// left out have initializers (g++ 12 warns about designated initializers that skip others).
struct DemoProvider {
    std::string profile;                      // sim profile name (profiles/<profile>.toml)
    std::string provider;                     // the `provider` label: the gateway's provider name
    dialect::Api api = dialect::Api::openai;  // the wire format the gateway speaks to it
    std::string upstream_model;               // a model the profile serves: the `model` label
    std::string model;                        // the virtual model clients ask the gateway for
    std::string region;                       // the `upstream_region` label
    std::string fallback{};  // another model's provider tried before the first byte; "" = none
    // The virtual model's response cache (the faq traffic repeats questions, so the Gateway
    // page shows hit rates and time saved).
    gateway::ModelCache::Mode cache = gateway::ModelCache::Mode::exact;
    // How the virtual model spreads requests over its upstreams (README "Routing").
    route::RoutingPolicy routing{};
    // The virtual model's traffic is streamed requests only (a lane of its own). The router's
    // TTFT estimate takes a non-streamed answer's whole time (seconds of decode) as its TTFT:
    // under mixed traffic a replica 3x slower to its first token kept its share of the fleet
    // (measured, docs in src/demo/README.md), with streams alone the share visibly drops.
    bool streamed_only = false;
    // Scheduled slowdowns of this sim only, after the profile's own [[episodes]]; they count
    // from the sims' start, as the server's do. The history has none.
    std::vector<sim::Episode> episodes{};
    // Whether the store gets simulated history for it. The fleet's replicas get none: the week
    // compares providers (theirs would be llama-sim's profile again, without the episodes,
    // and would thin the others' at the same --history-rate), and a store written before they
    // existed could not give them a week anyway (a top-up adds only the time since its newest
    // sim record).
    bool history = true;
};

// gpt-4o-like (OpenAI API), claude-3.5-sonnet-like (Anthropic), gemini-1.5-pro-like (Gemini),
// llama-3-70b-like (OpenAI-compatible, as on Together), in that order, each its own virtual
// model; every model caches exact repeats, gpt-4o also reworded ones (semantic). Then
// `llama-3-70b-fleet`: three replicas of llama-3-70b-like (llama-replica-1..3, no history,
// streamed traffic only), routed by latency with a p95 hedge (budget 10%); replica 3 has
// kFleetEpisode.
const std::vector<DemoProvider>& demo_providers();

// Replica 3's slowdown: 3x TTFT for 2 minutes every 8 minutes, the first from minute 2 of the
// sims' run (2-4, 10-12, 18-20, ...), so someone watching the Gateway page for a few minutes
// sees the fleet's traffic leave the replica and come back.
inline constexpr sim::Episode kFleetEpisode{
    .after_ns = 120'000'000'000,
    .duration_ns = 120'000'000'000,
    .every_ns = 480'000'000'000,
    .condition = {.ttft_multiplier = 3},
};

// The distinct virtual models of demo_providers(), in the order they first appear there.
std::vector<std::string> demo_models();

// The sims' profiles (loaded from `profiles_dir`) in demo_providers() order, each with its
// provider's episodes added; `run_seed` (--seed) makes them reproducible. Replicas of one
// profile (llama-sim and the fleet's three) get seeds of their own, or they would draw alike
// request by request; the first keeps the profile's seed, so llama-sim's history is what it
// was before the fleet existed. Throws ConfigError.
struct DemoProfiles {
    std::vector<sim::Profile> profiles;
    std::vector<unsigned> replicas;  // which replica of its profile each is (0 = the first)
};
DemoProfiles demo_profiles(const std::filesystem::path& profiles_dir,
                           std::optional<std::uint64_t> run_seed);

// The task types of the traffic and of the history (workloads/*.toml).
const std::vector<std::string>& demo_tasks();

struct DemoOptions {
    std::uint16_t port = 8080;  // the gateway and dashboard on 127.0.0.1; 0 = any free port
    std::chrono::seconds history{std::chrono::hours(24 * 7)};  // 0 = none
    double history_rate = 0.4;  // history records per second, the providers with history together
    std::filesystem::path db = "tokenradar-demo.db";
    double rate = 4;  // live requests per second through the gateway, all models and tasks together
    std::optional<std::uint64_t> seed;    // sims, history and traffic; default: from the clock
    std::filesystem::path profiles_dir;   // "" = profiles/ found beside the binary
    std::filesystem::path workloads_dir;  // "" = workloads/ found beside the binary
    std::filesystem::path dashboard_dir;  // "" = web/dist found beside the binary
    // Told each line meant for standard output: `dashboard: http://127.0.0.1:PORT/` once
    // everything runs, a one-line summary at the end. Progress goes to the log (stderr).
    std::function<void(const std::string&)> announce;
};

// The gateway the demo runs: one provider per sim (its API, base URL on `sim_ports[i]`, the
// sims' key), one virtual model per distinct DemoProvider::model with its providers as
// upstreams in order, then its fallback's (gpt-4o falls back to llama-3-70b as in
// examples/gateway-sim.toml), its routing and its response cache (keyless: the demo's traffic
// is one tenant), auth none on 127.0.0.1, the store at options.db, the dashboard, the
// observatory with public ingestion.
serve::ServeConfig demo_serve_config(const DemoOptions& options,
                                     const std::vector<std::uint16_t>& sim_ports,
                                     const std::string& sim_key);

// The demo's traffic through the gateway on `gateway_port`: every task type (`workloads`,
// each streamed and not) to every virtual model as its target, open loop, Poisson arrivals,
// labelled with the task. One run (a lane, a thread of its own) per kind of traffic: the
// models with streamed and non-streamed requests first, then those with `streamed_only`.
// Each lane gets a share of options.rate in proportion to its models, so every model gets
// rate / models. Runs without end (until `stop`); records go to `on_record`, which the caller
// sets (from the lanes' I/O threads, concurrently).
std::vector<bench::RunOptions> demo_traffic(const DemoOptions& options, std::uint16_t gateway_port,
                                            const std::vector<bench::Workload>& workloads,
                                            std::uint64_t seed);

// History tasks with the prompt sizes of these workloads (measured on a few of their prompts,
// a shared system prefix counted apart so it goes through the prefix cache) and their
// max_tokens.
std::vector<sim::HistoryTask> history_tasks(const std::vector<bench::Workload>& workloads);

// The parts of [from_us, to_us) without sim history in the store: all of it when it holds
// none; else before its oldest and after its newest sim record, when longer than a minute.
struct TimeRange {
    std::int64_t from_us = 0;
    std::int64_t to_us = 0;
    friend bool operator==(const TimeRange&, const TimeRange&) = default;
};
Result<std::vector<TimeRange>> missing_history(store::MeasurementStore& store, std::int64_t from_us,
                                               std::int64_t to_us);

// Draws the history of every provider with `history` (`profiles` in demo_providers() order,
// labelled as the demo's gateway labels its records) over `range` at `rate_per_s` in total,
// and inserts it in batches, one transaction each. Returns how many records were written;
// stops between batches once `stop` is set. The records are drawn on worker threads (one per
// core, at most one per provider) and inserted from the calling thread, which blocks on disk
// I/O.
Result<std::size_t> write_history(store::MeasurementStore& store,
                                  const std::vector<sim::Profile>& profiles,
                                  const std::vector<sim::HistoryTask>& tasks, TimeRange range,
                                  double rate_per_s, std::uint64_t seed,
                                  const std::atomic<bool>& stop);

// Runs the demo until SIGINT/SIGTERM, then stops the traffic, the gateway (streams drained,
// store flushed) and the sims, announces the summary and returns 0. Throws ConfigError
// (one line) on bad options, a port in use, or a store that cannot be opened or written.
int run_demo(const DemoOptions& options);

}  // namespace tokenradar::demo
