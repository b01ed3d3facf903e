#include <tokenradar/core/command_line.hpp>

namespace tokenradar {

std::string redacted_command_line(int argc, const char* const* argv) {
    std::string line;
    bool in_header_values = false;
    for (int i = 0; i < argc; ++i) {
        std::string arg(argv[i]);
        if (!line.empty()) line += ' ';
        if (arg.starts_with("-")) in_header_values = false;
        if (in_header_values) {
            line += "[redacted]";
            continue;
        }
        if (arg.starts_with("--header=")) {
            line += "--header=[redacted]";
            continue;
        }
        in_header_values = arg == "--header";
        if (const auto scheme = arg.find("://"); scheme != std::string::npos) {
            const auto at = arg.find('@', scheme);
            const auto path = arg.find('/', scheme + 3);
            if (at != std::string::npos && (path == std::string::npos || at < path)) {
                arg.replace(scheme + 3, at - scheme - 3, "[redacted]");
            }
        }
        line += arg;
    }
    return line;
}

}  // namespace tokenradar
