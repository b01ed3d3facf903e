// `tokenradar demo`: parses the options and runs demo::run_demo, which prints the dashboard
// URL once everything is up and a summary after Ctrl-C.

#include "commands.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/duration.hpp>
#include <tokenradar/demo/demo.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace tokenradar::app {
namespace {

struct DemoArgs {
    std::uint16_t port = 8080;
    std::string history = "7d";
    double history_rate = 0.4;
    std::string db = "tokenradar-demo.db";
    double rate = 4;
    std::optional<std::uint64_t> seed;
};

int run(const DemoArgs& args) {
    demo::DemoOptions options;
    options.port = args.port;
    auto history = parse_duration(args.history);
    if (!history) throw ConfigError(fmt::format("--history: {}", history.error().message));
    options.history = std::chrono::duration_cast<std::chrono::seconds>(*history);
    options.history_rate = args.history_rate;
    options.db = args.db;
    options.rate = args.rate;
    options.seed = args.seed;
    options.announce = [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    };
    return demo::run_demo(options);
}

}  // namespace

void register_demo(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<DemoArgs>();
    CLI::App* sub = app.add_subcommand("demo",
                                       "Four simulated providers, a gateway, a week of history and "
                                       "live traffic: the dashboard at once");
    sub->add_option("--port", args->port,
                    "Gateway and dashboard port on 127.0.0.1 (0: any free port)")
        ->capture_default_str();
    sub->add_option("--history", args->history,
                    "Simulated history written first (e.g. 7d, 24h; 0s: none)")
        ->capture_default_str();
    sub->add_option("--history-rate", args->history_rate,
                    "History records per second, all providers together")
        ->capture_default_str();
    sub->add_option("--db", args->db,
                    "SQLite store (created when missing; history is written once)")
        ->capture_default_str();
    sub->add_option("--rate", args->rate,
                    "Live requests per second through the gateway, all models and tasks")
        ->capture_default_str();
    sub->add_option("--seed", args->seed,
                    "Seed of the sims, the history and the traffic (default: the clock)");
    sub->callback([args, &runner] { runner = [args] { return run(*args); }; });
}

}  // namespace tokenradar::app
