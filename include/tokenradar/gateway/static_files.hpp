#pragma once
// The dashboard's files (web/dist), loaded into memory once at startup and served from
// there: no path from a request ever reaches the file system, so there is nothing to
// traverse. index.html is revalidated on every load; Vite's hashed assets are immutable.

#include <tokenradar/core/error.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::gateway {

struct StaticFile {
    std::string body;
    std::string content_type;
    std::string cache_control;
    std::string etag;
};

class StaticFiles {
  public:
    // Every regular file under `dir` (at most 64 MiB in all). Errc::not_found when `dir` is
    // not a directory; Errc::internal when a file cannot be read or the total is too big.
    static Result<StaticFiles> load(const std::filesystem::path& dir);
    StaticFiles() = default;

    // "/" and "/index.html" are the index; other paths as under `dir`. nullptr when absent.
    [[nodiscard]] const StaticFile* find(std::string_view path) const;
    [[nodiscard]] std::size_t size() const noexcept { return files_.size(); }

  private:
    std::map<std::string, StaticFile, std::less<>> files_;
};

// The MIME type for a file name's extension (text/html; charset=utf-8, text/javascript...).
std::string_view content_type_for(std::string_view file_name) noexcept;

}  // namespace tokenradar::gateway
