#include <tokenradar/core/resource_dir.hpp>

#include <cstdlib>
#include <system_error>
#include <vector>

namespace tokenradar {

std::filesystem::path find_resource_dir(std::string_view name) {
    std::vector<std::filesystem::path> candidates;
    if (const char* home = std::getenv("TOKENRADAR_HOME"); home != nullptr && *home != '\0') {
        candidates.emplace_back(std::filesystem::path(home) / name);
    }
    candidates.emplace_back(std::filesystem::current_path() / name);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.emplace_back(exe.parent_path() / ".." / ".." / name);
        candidates.emplace_back(exe.parent_path() / ".." / "share" / "tokenradar" / name);
    }
    for (const auto& dir : candidates) {
        if (std::filesystem::is_directory(dir, ec))
            return std::filesystem::weakly_canonical(dir, ec);
    }
    return std::filesystem::path(name);
}

}  // namespace tokenradar
