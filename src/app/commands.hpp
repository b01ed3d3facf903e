#pragma once
// Each subcommand registers its options on the CLI11 app and, when chosen, leaves the
// function to run in `runner`. main runs it inside the one try/catch for startup errors.

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/realtime.hpp>

#include <CLI/CLI.hpp>

#include <functional>

namespace tokenradar::app {

using Runner = std::function<int()>;

void register_sim(CLI::App& app, Runner& runner);
void register_serve(CLI::App& app, Runner& runner);
// `command_line` is recorded in bench's summary (with --header values redacted).
void register_bench(CLI::App& app, Runner& runner, const std::string& command_line);
void register_stats(CLI::App& app, Runner& runner);
void register_rollup(CLI::App& app, Runner& runner);
void register_demo(CLI::App& app, Runner& runner);
void register_keys(CLI::App& app, Runner& runner);

// `--realtime` of sim and bench: the calling thread switches to real-time scheduling before
// the command starts its threads, which inherit it. Throws ConfigError with the reason.
inline void use_realtime_for_timing() {
    if (auto rt = use_realtime_scheduling(kTimingRealtimePriority); !rt) {
        throw ConfigError("--realtime: " + rt.error().message);
    }
}

}  // namespace tokenradar::app
