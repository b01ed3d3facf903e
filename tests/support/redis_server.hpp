#pragma once
// A real redis-server (Debian's, /usr/bin/redis-server) on a free loopback port for one
// test: no persistence, no daemon, its log in a temporary file. Ready once PING answers;
// killed (SIGKILL) on destruction. kill() and start() (same port) make an outage.
// Tests call RedisServer::available() first and skip with skip_reason() when it is missing.

#include "temp_path.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::testing {

class RedisServer {
  public:
    static constexpr const char* kBinary = "/usr/bin/redis-server";

    static bool available() { return ::access(kBinary, X_OK) == 0; }
    static std::string skip_reason() {
        return std::string(kBinary) + " is not installed (scripts/install-deps.sh installs it)";
    }

    // An empty password: no AUTH required.
    explicit RedisServer(std::string password = {})
        : password_(std::move(password)), log_("redis_server", ".log"), port_(free_port()) {
        start();
    }
    ~RedisServer() { kill(); }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    // "redis://127.0.0.1:PORT", with ":password@" when one is required.
    [[nodiscard]] std::string url() const {
        const std::string auth = password_.empty() ? "" : ":" + password_ + "@";
        return "redis://" + auth + "127.0.0.1:" + std::to_string(port_);
    }
    [[nodiscard]] bool running() const { return pid_ > 0; }

    // Spawns redis-server on port() and waits (at most 5 s) until it answers PING.
    void start() {
        if (pid_ > 0) return;
        std::vector<std::string> args = {kBinary,
                                         "--port",
                                         std::to_string(port_),
                                         "--bind",
                                         "127.0.0.1",
                                         "--save",
                                         "",
                                         "--appendonly",
                                         "no",
                                         "--daemonize",
                                         "no",
                                         "--dir",
                                         "/tmp",
                                         "--logfile",
                                         ""};
        if (!password_.empty()) {
            args.emplace_back("--requirepass");
            args.push_back(password_);
        }
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            const int fd = ::open(log_.path().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, STDOUT_FILENO);
                ::dup2(fd, STDERR_FILENO);
            }
            ::execv(kBinary, argv.data());
            ::_exit(127);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("redis-server exited at start: " + log());
            }
            if (answers_ping()) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        kill();
        throw std::runtime_error("redis-server did not answer PING within 5 s: " + log());
    }

    // SIGKILL: connections are reset, nothing is saved.
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

    void restart() {
        kill();
        start();
    }

    [[nodiscard]] std::string log() const {
        std::ifstream in(log_.path());
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

    // Binds 127.0.0.1:0, reads the port the kernel chose and closes the socket.
    static std::uint16_t free_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("no free loopback port");
        }
        ::close(fd);
        return ntohs(addr.sin_port);
    }

  private:
    // One blocking PING with a short timeout; "-NOAUTH" also means it is serving.
    [[nodiscard]] bool answers_ping() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return false;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port_);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bool ok = false;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            const char ping[] = "*1\r\n$4\r\nPING\r\n";
            pollfd p{fd, POLLIN, 0};
            char buf[64];
            if (::write(fd, ping, sizeof ping - 1) == static_cast<ssize_t>(sizeof ping - 1) &&
                ::poll(&p, 1, 500) == 1) {
                const ssize_t n = ::read(fd, buf, sizeof buf);
                const std::string reply(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
                ok = reply.rfind("+PONG", 0) == 0 || reply.rfind("-NOAUTH", 0) == 0;
            }
        }
        ::close(fd);
        return ok;
    }

    std::string password_;
    TempPath log_;
    std::uint16_t port_;
    pid_t pid_ = -1;
};

}  // namespace tokenradar::testing
