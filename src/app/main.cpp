// tokenradar: one binary, one subcommand per job. main parses the command line and calls
// library functions; it holds no logic. Configuration errors are caught here once.

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    CLI::App app{"TokenRadar: makes LLM latency visible, then makes it smaller."};
    app.set_version_flag("--version", std::string(tokenradar::version()));
    app.require_subcommand(1);
    std::string log_level = "info";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
        ->capture_default_str();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    return 0;
}
