#pragma once
// A server written on bare sockets, so it can behave as servers nobody here wrote do, which
// our own net::HttpServer never would: close the connection right after a complete response
// while announcing keep-alive (llama-server after a stream), close connections idle for a
// few hundred milliseconds (uvicorn, Node: after 5 s), or at that idle close shut down only
// its sending side and go on reading (Apache's lingering close). Each response is raw bytes from
// the test's responder, written as they are. A thread per connection with blocking sockets: for
// tests of a handful of connections.

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tokenradar::testing {

struct RawRequest {
    std::string head;  // request line and headers, without the blank line
    std::string body;
    bool is(std::string_view method, std::string_view path) const {
        const std::string line = std::string(method) + " " + std::string(path);
        return head.compare(0, line.size(), line) == 0;
    }
};

// What the responder answers: bytes written as they are, then the connection closed when
// `close` says so (or the policy does).
struct RawResponse {
    std::string bytes;
    bool close = false;
};

struct RawServerPolicy {
    bool close_after_response = false;        // close once each response is written
    std::chrono::milliseconds idle_close{0};  // close a connection idle this long (0: never)
    // At the idle close, send a FIN (shutdown of the sending side) and read and drop what
    // comes until the peer closes, as Apache's lingering close does.
    bool idle_close_lingers = false;
};

// Chunked transfer coding of `pieces`, with the terminating empty chunk.
inline std::string chunked(const std::vector<std::string>& pieces) {
    std::string out;
    for (const auto& p : pieces) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", p.size());
        out += size;
        out += p;
        out += "\r\n";
    }
    return out + "0\r\n\r\n";
}

class RawHttpServer {
  public:
    using Responder = std::function<RawResponse(const RawRequest&)>;

    RawHttpServer(RawServerPolicy policy, Responder responder)
        : policy_(policy), responder_(std::move(responder)) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listen_fd_, 64) != 0) {
            throw std::runtime_error("RawHttpServer: bind/listen failed");
        }
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~RawHttpServer() {
        stopping_ = true;
        ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
        acceptor_.join();
        ::close(listen_fd_);
        std::vector<std::thread> threads;
        {
            std::lock_guard lock(mu_);
            threads.swap(threads_);
        }
        for (auto& t : threads) t.join();
    }
    RawHttpServer(const RawHttpServer&) = delete;
    RawHttpServer& operator=(const RawHttpServer&) = delete;

    std::uint16_t port() const { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int connections() const { return connections_.load(); }
    int requests() const { return requests_.load(); }
    int lingering_closes() const { return lingering_closes_.load(); }  // FINs sent so far

  private:
    void accept_loop() {
        while (!stopping_) {
            const int fd = ::accept(listen_fd_, nullptr, nullptr);
            if (fd < 0) {
                if (stopping_) return;
                continue;
            }
            ++connections_;
            std::lock_guard lock(mu_);
            threads_.emplace_back([this, fd] { serve(fd); });
        }
    }

    // Waits for readable bytes; false on the idle close, stop, or the peer's close.
    bool wait_readable(int fd, std::chrono::steady_clock::time_point idle_deadline) {
        for (;;) {
            if (stopping_) return false;
            int timeout_ms = 50;
            if (policy_.idle_close.count() > 0) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    idle_deadline - std::chrono::steady_clock::now());
                if (left.count() <= 0) return false;
                timeout_ms = static_cast<int>(std::min<long>(left.count(), 50));
            }
            pollfd p{fd, POLLIN, 0};
            const int n = ::poll(&p, 1, timeout_ms);
            if (n > 0) return true;
            if (n < 0 && errno != EINTR) return false;
        }
    }

    void serve(int fd) {
        std::string buffer;
        char chunk[4096];
        for (;;) {
            const auto idle_deadline = std::chrono::steady_clock::now() + policy_.idle_close;
            std::size_t head_end;
            // Read a request head, then its Content-Length body.
            while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
                if (!wait_readable(fd, idle_deadline)) return end_idle(fd, buffer.empty());
                const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) return finish(fd);
                buffer.append(chunk, static_cast<std::size_t>(n));
            }
            RawRequest request;
            request.head = buffer.substr(0, head_end);
            std::size_t length = 0;
            for (std::string_view name : {"content-length:", "Content-Length:"}) {
                if (auto at = request.head.find(name); at != std::string::npos) {
                    length = std::strtoul(request.head.c_str() + at + name.size(), nullptr, 10);
                }
            }
            buffer.erase(0, head_end + 4);
            while (buffer.size() < length) {
                if (!wait_readable(fd,
                                   std::chrono::steady_clock::now() + std::chrono::seconds(5))) {
                    return finish(fd);
                }
                const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) return finish(fd);
                buffer.append(chunk, static_cast<std::size_t>(n));
            }
            request.body = buffer.substr(0, length);
            buffer.erase(0, length);
            ++requests_;
            const RawResponse response = responder_(request);
            const std::string& bytes = response.bytes;
            std::size_t sent = 0;
            while (sent < bytes.size()) {
                const ssize_t n =
                    ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
                if (n <= 0) return finish(fd);
                sent += static_cast<std::size_t>(n);
            }
            if (response.close || policy_.close_after_response) return finish(fd);
        }
    }

    static void finish(int fd) { ::close(fd); }

    // An idle connection's end: closed, or lingering when the policy says so.
    void end_idle(int fd, bool idle) {
        if (idle && policy_.idle_close_lingers && !stopping_) {
            ::shutdown(fd, SHUT_WR);
            ++lingering_closes_;
            char drop[4096];
            while (!stopping_) {
                pollfd p{fd, POLLIN, 0};
                if (::poll(&p, 1, 50) > 0 && ::recv(fd, drop, sizeof drop, 0) <= 0) break;
            }
        }
        finish(fd);
    }

    RawServerPolicy policy_;
    Responder responder_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> connections_{0};
    std::atomic<int> requests_{0};
    std::atomic<int> lingering_closes_{0};
    std::mutex mu_;
    std::vector<std::thread> threads_;
    std::thread acceptor_;
};

}  // namespace tokenradar::testing
