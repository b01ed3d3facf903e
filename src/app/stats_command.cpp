// `tokenradar stats`: the table of stored measurements over a recent window, grouped by
// labels. Parsing and printing only; the report is store::build_stats_report.

#include "commands.hpp"
#include "existing_store.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/config.hpp>
#include <tokenradar/core/duration.hpp>
#include <tokenradar/store/stats_report.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace tokenradar::app {
namespace {

struct StatsArgs {
    std::string db;
    std::string window = "1h";
    std::string by = "provider,model";
    std::string format = "table";
};

int run(const StatsArgs& a) {
    // Every argument is checked before the file is touched.
    std::int64_t window_us = 0;  // 0: everything
    if (a.window != "all") {
        auto window = parse_duration(a.window);
        if (!window) throw ConfigError(fmt::format("--window: {}", window.error().message));
        if (window->count() <= 0)
            throw ConfigError("--window: expected a positive duration or 'all'");
        window_us = std::chrono::duration_cast<std::chrono::microseconds>(*window).count();
    }
    auto by = store::parse_labels(a.by);
    if (!by) throw ConfigError(fmt::format("--by: {}", by.error().message));
    auto format = store::parse_report_format(a.format);
    if (!format) throw ConfigError(fmt::format("--format: {}", format.error().message));

    auto db = open_existing_store(a.db, false);
    const std::int64_t to_us = wall_now_us() + 1;  // include a record stamped this microsecond
    const std::int64_t from_us = window_us == 0 ? 0 : to_us - window_us;
    auto report = store::build_stats_report(*db, from_us, to_us, std::move(*by));
    if (!report) throw std::runtime_error(report.error().message);
    std::fputs(store::render_stats_report(*report, *format).c_str(), stdout);
    return 0;
}

}  // namespace

void register_stats(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<StatsArgs>();
    CLI::App* sub = app.add_subcommand(
        "stats",
        "Latency table of stored measurements (a gateway's database) over a recent window");
    sub->add_option("--db", args->db,
                    "The store tokenradar serve writes: a SQLite file, a postgresql:// or a "
                    "clickhouse:// URL")
        ->required();
    sub->add_option("--window", args->window, "How far back from now (e.g. 15m, 1h, 7d) or 'all'")
        ->capture_default_str();
    sub->add_option(
           "--by", args->by,
           "Group by these labels, comma-separated: provider, model, endpoint, "
           "upstream_region, client_region, task, source, cache, route, api, stream, client_key")
        ->capture_default_str();
    sub->add_option("--format", args->format, "table, json, csv or markdown")
        ->capture_default_str();
    sub->callback([args, &runner] { runner = [args] { return run(*args); }; });
}

}  // namespace tokenradar::app
