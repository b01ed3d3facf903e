#pragma once
// Each subcommand registers its options on the CLI11 app and, when chosen, leaves the
// function to run in `runner`. main runs it inside the one try/catch for startup errors.

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

}  // namespace tokenradar::app
