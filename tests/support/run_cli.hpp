#pragma once
// Runs the tokenradar binary (TOKENRADAR_BINARY, set by tokenradar_add_test) with a shell
// command line and captures its exit code, stdout and stderr.

#include "temp_path.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
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
    const TempPath out("cli_out", ".txt");
    const TempPath err("cli_err", ".txt");
    const std::string command = prefix + std::string(TOKENRADAR_BINARY) + " " + args + " >" +
                                out.path() + " 2>" + err.path();
    const int status = std::system(command.c_str());
    const auto slurp = [](const TempPath& p) {
        std::ifstream in(p.path());
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
