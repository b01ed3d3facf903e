#pragma once
// Paths in the temporary directory that no other test process uses.

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace tokenradar::testing {

// "<tmp>/tokenradar_<stem>_<pid>_<n><extension>", new at every call: ctest runs test cases
// as parallel processes, and another build tree (release and ASan) may run the same test at
// the same time.
inline std::filesystem::path unique_temp_path(std::string_view stem, std::string_view extension) {
    static std::atomic<int> counter{0};
    return std::filesystem::temp_directory_path() /
           ("tokenradar_" + std::string(stem) + "_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter++) + std::string(extension));
}

// A unique path (see above), empty at first, removed at the end of its scope: a file with
// SQLite's side files and the store's owner lock, or a directory with its contents.
class TempPath {
  public:
    TempPath(std::string_view stem, std::string_view extension)
        : path_(unique_temp_path(stem, extension).string()) {
        remove();
    }
    ~TempPath() { remove(); }
    TempPath(const TempPath&) = delete;
    TempPath& operator=(const TempPath&) = delete;

    [[nodiscard]] const std::string& path() const { return path_; }
    // Replaces the file's contents with `bytes`.
    void write(std::string_view bytes) const {
        std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
    }

  private:
    void remove() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
        for (const char* suffix : {"-wal", "-shm", "-journal", ".lock"}) {
            std::filesystem::remove(path_ + suffix, ec);
        }
    }
    std::string path_;
};

// A fresh directory (see TempPath), created now, removed with its contents at scope end.
class TempDir : public TempPath {
  public:
    explicit TempDir(std::string_view stem) : TempPath(stem, "") {
        std::filesystem::create_directories(path());
    }
    [[nodiscard]] std::filesystem::path dir() const { return path(); }
};

// A fresh SQLite database path.
class TempDb : public TempPath {
  public:
    TempDb() : TempPath("store_test", ".db") {}
};

}  // namespace tokenradar::testing
