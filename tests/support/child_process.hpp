#pragma once
// The real tokenradar binary as a child process, as a user runs it: its stdout read line by
// line, its stderr in a file, SIGTERM with a bound; and small helpers around it (the
// loopback URL in a line, a whole file, a shell command's output).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

namespace tokenradar::testing {

// A child process running `sh -c "exec COMMAND"`: its pid is the binary's, its stdout a pipe.
class Child {
  public:
    explicit Child(const std::string& command, const std::filesystem::path& stderr_file) {
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(fds[1], STDOUT_FILENO);
            std::FILE* err = std::fopen(stderr_file.c_str(), "w");
            if (err != nullptr) ::dup2(::fileno(err), STDERR_FILENO);
            ::close(fds[0]);
            ::close(fds[1]);
            const std::string exec = "exec " + command;
            ::execl("/bin/sh", "sh", "-c", exec.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(fds[1]);
        out_ = ::fdopen(fds[0], "r");
    }
    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        if (out_ != nullptr) std::fclose(out_);
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    [[nodiscard]] pid_t pid() const { return pid_; }
    // The next stdout line ("" at end of output). Blocks until it is written.
    std::string read_line() {
        char buf[1024];
        return std::fgets(buf, sizeof buf, out_) != nullptr ? std::string(buf) : std::string();
    }
    // SIGTERM, then the exit code (-1 when it did not exit by itself within `limit`).
    int terminate(std::chrono::seconds limit) {
        ::kill(pid_, SIGTERM);
        return wait(limit);
    }
    // The exit code once it exits by itself (-1 when it has not within `limit`, or was killed).
    int wait(std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
            ::usleep(10'000);
        }
        return -1;
    }

  private:
    pid_t pid_ = -1;
    std::FILE* out_ = nullptr;
};

inline std::string url_in(const std::string& line) {
    std::smatch m;
    std::regex_search(line, m, std::regex(R"(https?://127\.0\.0\.1:[0-9]+)"));
    return m.empty() ? std::string() : m.str();
}

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string capture(const std::string& command) {
    std::string out;
    if (std::FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

}  // namespace tokenradar::testing
