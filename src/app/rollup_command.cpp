// `tokenradar rollup --rebuild`: recomputes the observatory's saved rollups from the raw
// records of a database (after a damaged row, a rollup format change, or a bug fix in how
// records are rolled up). Parsing and printing only; the work is observatory::rebuild_rollups.
// A running server keeps its own rollups in memory and would save them over the rebuilt
// rows, so the rebuild owns the rollups (the SQLite file, or PostgreSQL's advisory lock) and is
// refused while a serve or demo does.

#include "commands.hpp"
#include "existing_store.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/observatory/rollup_keeper.hpp>
#include <tokenradar/store/postgres_store.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace tokenradar::app {
namespace {

struct RollupArgs {
    std::string db;
    bool rebuild = false;
};

int run(const RollupArgs& a) {
    if (!a.rebuild) throw ConfigError("rollup: expected --rebuild (the only action so far)");
    // Neither created nor migrated: a typo must not leave an empty database behind, and an
    // older schema belongs to the server that wrote it (serve migrates, then rolls up itself).
    auto db = open_existing_store(a.db, true);
    const auto began = std::chrono::steady_clock::now();
    auto rebuilt = observatory::rebuild_rollups(*db);
    if (!rebuilt) throw std::runtime_error(rebuilt.error().message);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
    std::printf("tokenradar rollup: %zu records rolled up in %.2f s (%s)\n", *rebuilt, took.count(),
                store::redact_postgres_url(a.db).c_str());
    return 0;
}

}  // namespace

void register_rollup(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<RollupArgs>();
    CLI::App* sub = app.add_subcommand(
        "rollup",
        "The observatory's saved rollups: --rebuild recomputes them from the raw records");
    sub->add_option("--db", args->db,
                    "The store tokenradar serve writes: a SQLite file, a postgresql:// or a "
                    "clickhouse:// URL")
        ->required();
    sub->add_flag(
        "--rebuild", args->rebuild,
        "Recompute every rollup row from the stored records (stop tokenradar serve first)");
    sub->callback([args, &runner] { runner = [args] { return run(*args); }; });
}

}  // namespace tokenradar::app
