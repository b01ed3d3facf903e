// tokenradar: one binary, one subcommand per job. main parses the command line and calls
// library functions; it holds no logic. Startup and configuration errors are caught here
// once and printed as one line; the exit code is then 2.

#include "commands.hpp"

#include <tokenradar/core/command_line.hpp>
#include <tokenradar/core/config.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#ifdef TOKENRADAR_WITH_MIMALLOC
#include <mimalloc-new-delete.h>  // operator new and delete straight to mimalloc (one TU only)
#include <mimalloc.h>
#endif

#include <malloc.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace tokenradar::app {

// Thousands of concurrent streams need thousands of sockets: lift the soft limit on open
// files to the hard limit (no privilege needed).
void raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

// The allocator that serves malloc, for --version: mimalloc when the binary links it and its
// override took (a block from calloc lies in its heap), otherwise "system".
std::string allocator() {
#ifdef TOKENRADAR_WITH_MIMALLOC
    void* probe = std::calloc(1, 16);
    const bool mimalloc = mi_is_in_heap_region(probe);
    std::free(probe);
    if (mimalloc) {
        const int v = mi_version();  // e.g. 209 for 2.0.9
        return fmt::format("mimalloc {}.{}.{}", v / 100, v / 10 % 10, v % 10);
    }
#endif
    return "system";
}

// Multi-megabyte request bodies (an observatory submission of 10,000 records is ~10 MB) must
// reuse memory already mapped: faulting in and zero-filling fresh pages for every body was
// 10-25% of a server's CPU under ingestion (bench/observatory).
// - mimalloc returns a freed page to the OS 25 ms after its last use by default: 1 s instead
//   (docs/NOTES.md "Build and toolchain traps"; MIMALLOC_DECOMMIT_DELAY still overrides).
// - glibc maps every block above its mmap threshold (128 KiB, raised only as such blocks are
//   freed) afresh and unmaps it on free: up to 32 MiB (its ceiling) come from the heap
//   instead, and up to 128 MiB of freed heap is kept for the next body rather than trimmed.
void keep_large_buffers_mapped() {
#ifdef TOKENRADAR_WITH_MIMALLOC
    mi_option_set_default(mi_option_decommit_delay, 1000);
#endif
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
}

}  // namespace tokenradar::app

int main(int argc, char** argv) {
    CLI::App app{"TokenRadar: makes LLM latency visible, then makes it smaller."};
    app.set_version_flag("--version", [] {  // built only when asked for: it probes malloc
        return fmt::format("{} (malloc: {})", tokenradar::version(), tokenradar::app::allocator());
    });
    app.require_subcommand(1);
    std::string log_level = "info";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
        ->capture_default_str();

    tokenradar::app::Runner runner;
    tokenradar::app::register_sim(app, runner);
    tokenradar::app::register_serve(app, runner);
    tokenradar::app::register_bench(app, runner, tokenradar::redacted_command_line(argc, argv));
    tokenradar::app::register_stats(app, runner);
    tokenradar::app::register_rollup(app, runner);
    tokenradar::app::register_demo(app, runner);
    tokenradar::app::register_keys(app, runner);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    try {
        tokenradar::configure_logging(log_level);
        tokenradar::app::raise_open_file_limit();
        tokenradar::app::keep_large_buffers_mapped();
        return runner ? runner() : 0;
    } catch (const tokenradar::ConfigError& e) {
        std::fprintf(stderr, "tokenradar: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tokenradar: error: %s\n", e.what());
        return 1;
    }
}
