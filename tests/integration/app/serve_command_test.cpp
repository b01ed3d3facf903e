// `tokenradar serve` as a user runs it: the real binary in front of the real sim, requests
// with curl, SIGTERM, then `tokenradar stats` over the store it wrote.

#include "../../support/run_cli.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

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
    std::string read_line() {
        char buf[1024];
        return std::fgets(buf, sizeof buf, out_) != nullptr ? std::string(buf) : std::string();
    }
    // SIGTERM, then the exit code (-1 when it did not exit by itself within `limit`).
    int terminate(std::chrono::seconds limit) {
        ::kill(pid_, SIGTERM);
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

std::string url_in(const std::string& line) {
    std::smatch m;
    std::regex_search(line, m, std::regex(R"(http://127\.0\.0\.1:[0-9]+)"));
    return m.empty() ? std::string() : m.str();
}

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string capture(const std::string& command) {
    std::string out;
    if (std::FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

TEST(ServeCommand, RelaysMeasuresAndFlushesItsStoreOnSigterm) {
    const auto dir = std::filesystem::temp_directory_path() / ("tokenradar_serve_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string binary = TOKENRADAR_BINARY;

    Child sim(binary + " sim --profile instant --port 0", dir / "sim.err");
    const std::string sim_url = url_in(sim.read_line());
    ASSERT_FALSE(sim_url.empty());

    std::ofstream(dir / "gw.toml") << "[auth]\nmode = \"none\"\n[store]\npath = \"" << (dir / "gw.db").string()
                                   << "\"\n[[providers]]\nname = \"sim\"\napi = \"openai\"\nbase_url = \"" << sim_url
                                   << "/v1\"\nkey_env = \"SIM_KEY\"\n[[models]]\nname = \"fast\"\nupstreams = "
                                      "[\"sim/gpt-4o\"]\ntask = \"code\"\n";
    Child serve("env SIM_KEY=sk-sim " + binary + " serve --port 0 --config " + (dir / "gw.toml").string(),
                dir / "serve.err");
    const std::string line = serve.read_line();
    const std::string gw_url = url_in(line);
    ASSERT_FALSE(gw_url.empty()) << line << slurp(dir / "serve.err");

    for (const char* stream : {"true", "false", "true"}) {
        const std::string body = std::string(R"({"model":"fast","max_tokens":4,"stream":)") + stream +
                                 R"(,"messages":[{"role":"user","content":"hi"}]})";
        const std::string out = capture("curl -s " + gw_url + "/v1/chat/completions -H 'content-type: application/json' -d '" + body + "'");
        EXPECT_THAT(out, HasSubstr(std::string(stream) == "true" ? "data: [DONE]" : "chat.completion")) << out;
    }
    EXPECT_EQ(serve.terminate(std::chrono::seconds(15)), 0);
    EXPECT_THAT(slurp(dir / "serve.err"), HasSubstr("3 records written"));

    auto stats = testing::run_cli("stats --db " + (dir / "gw.db").string() + " --window all --by provider,model,task");
    EXPECT_EQ(stats.exit_code, 0) << stats.err;
    EXPECT_THAT(stats.out, HasSubstr("sim"));
    EXPECT_THAT(stats.out, HasSubstr("code"));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tokenradar
