#include <tokenradar/gateway/static_files.hpp>

#include <tokenradar/core/ids.hpp>

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace tokenradar::gateway {
namespace {

constexpr std::uintmax_t kMaxTotalBytes = 64ULL << 20;

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view content_type_for(std::string_view name) noexcept {
    if (ends_with(name, ".html")) return "text/html; charset=utf-8";
    if (ends_with(name, ".js") || ends_with(name, ".mjs")) return "text/javascript; charset=utf-8";
    if (ends_with(name, ".css")) return "text/css; charset=utf-8";
    if (ends_with(name, ".json") || ends_with(name, ".map")) return "application/json";
    if (ends_with(name, ".svg")) return "image/svg+xml";
    if (ends_with(name, ".png")) return "image/png";
    if (ends_with(name, ".ico")) return "image/x-icon";
    if (ends_with(name, ".woff2")) return "font/woff2";
    if (ends_with(name, ".txt")) return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

Result<StaticFiles> StaticFiles::load(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        return Error(
            Errc::not_found,
            fmt::format("{}: not a directory (build the dashboard with make)", dir.string()));
    }
    StaticFiles files;
    std::uintmax_t total = 0;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        total += it->file_size(ec);
        if (total > kMaxTotalBytes) {
            return Error(Errc::internal,
                         fmt::format("{}: more than 64 MiB of files", dir.string()));
        }
        std::ifstream in(it->path(), std::ios::binary);
        std::stringstream content;
        content << in.rdbuf();
        if (!in && !in.eof())
            return Error(Errc::internal, fmt::format("{}: cannot read", it->path().string()));
        const std::string url = "/" + std::filesystem::relative(it->path(), dir).generic_string();
        StaticFile f;
        f.body = content.str();
        f.content_type = std::string(content_type_for(url));
        // Vite names assets by content hash: they never change under their name.
        f.cache_control =
            url.rfind("/assets/", 0) == 0 ? "public, max-age=31536000, immutable" : "no-cache";
        f.etag = fmt::format("\"{:016x}\"", fnv1a64(f.body));
        files.files_.emplace(url, std::move(f));
    }
    if (ec) return Error(Errc::internal, fmt::format("{}: {}", dir.string(), ec.message()));
    return files;
}

const StaticFile* StaticFiles::find(std::string_view path) const {
    if (path == "/") path = "/index.html";
    const auto it = files_.find(path);
    return it == files_.end() ? nullptr : &it->second;
}

}  // namespace tokenradar::gateway
