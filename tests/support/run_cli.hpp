#pragma once
// Runs the tokenradar binary (TOKENRADAR_BINARY, set by tokenradar_add_test) with a shell
// command line and captures its exit code, stdout and stderr.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tokenradar::testing {

struct CliOutcome {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// `prefix` goes before the binary: environment assignments or a pipe into it.
inline CliOutcome run_cli(const std::string& args, const std::string& prefix = "") {
    const auto dir = std::filesystem::temp_directory_path();
    // ctest runs test cases as parallel processes: one pair of files per process.
    const std::string tag = std::to_string(::getpid());
    const auto out = dir / ("tokenradar_cli_out_" + tag + ".txt");
    const auto err = dir / ("tokenradar_cli_err_" + tag + ".txt");
    const std::string command =
        prefix + std::string(TOKENRADAR_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(command.c_str());
    const auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    };
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

inline int count_lines(const std::string& text) {
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace tokenradar::testing
