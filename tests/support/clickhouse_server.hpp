#pragma once
// A real ClickHouse server (Debian 12's clickhouse-server 18.16, /usr/sbin/clickhouse-server)
// on free loopback ports for one test: its own config XML, data, logs and temporary files in
// a temporary directory, HTTP + native TCP + interserver ports picked free, user `default`
// with a password; with a certificate directory (test_pki.hpp's server.pem and server.key), an
// HTTPS port too. Starts in ~0.2 s here (as root too). Killed (SIGKILL) and its directory
// removed on destruction; stop() and start() (same ports, same data) make an outage.
//
// Tests call ClickHouseServer::available() first and skip with skip_reason() when it is missing.

#include "postgres_server.hpp"  // free_port()
#include "temp_path.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace tokenradar::testing {

class ClickHouseServer {
  public:
    static constexpr const char* kBinary = "/usr/sbin/clickhouse-server";
    static constexpr const char* kPassword = "tr-test-Ch-8c2f";

    static bool available() { return ::access(kBinary, X_OK) == 0; }
    static std::string skip_reason() {
        return std::string(kBinary) +
               " is not installed (scripts/install-deps.sh installs clickhouse-server)";
    }

    // `certificates`: a directory with server.pem and server.key to serve HTTPS too.
    explicit ClickHouseServer(std::filesystem::path certificates = {})
        : dir_("ch"),
          certificates_(std::move(certificates)),
          http_port_(PostgresServer::free_port()),
          https_port_(certificates_.empty() ? 0 : PostgresServer::free_port()),
          tcp_port_(PostgresServer::free_port()),
          interserver_port_(PostgresServer::free_port()) {
        std::filesystem::create_directories(dir_.path() + "/log");
        write_config();
        start();
    }
    ~ClickHouseServer() {
        try {
            stop();
        } catch (const std::exception&) {  // a destructor must not throw
        }
    }
    ClickHouseServer(const ClickHouseServer&) = delete;
    ClickHouseServer& operator=(const ClickHouseServer&) = delete;

    [[nodiscard]] std::uint16_t port() const { return http_port_; }
    [[nodiscard]] std::uint16_t https_port() const { return https_port_; }
    // clickhouse://default:PASSWORD@127.0.0.1:PORT/DATABASE
    [[nodiscard]] std::string url(std::string_view database = "tokenradar") const {
        return "clickhouse://default:" + std::string(kPassword) +
               "@127.0.0.1:" + std::to_string(http_port_) + "/" + std::string(database);
    }

    // clickhouse://default:PASSWORD@HOST:HTTPS_PORT/DATABASE?secure=true[&ca_file=CA]
    [[nodiscard]] std::string secure_url(const std::string& ca_file,
                                         std::string_view host = "127.0.0.1",
                                         std::string_view database = "tokenradar") const {
        std::string url = "clickhouse://default:" + std::string(kPassword) + "@" +
                          std::string(host) + ":" + std::to_string(https_port_) + "/" +
                          std::string(database) + "?secure=true";
        if (!ca_file.empty()) url += "&ca_file=" + ca_file;
        return url;
    }

    void start() {
        if (pid_ > 0) return;
        const std::string config = "--config-file=" + dir_.path() + "/config.xml";
        const std::string out = dir_.path() + "/log/stdout.log";
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, STDOUT_FILENO);
                ::dup2(fd, STDERR_FILENO);
            }
            ::execl(kBinary, kBinary, config.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Ready when SELECT 1 answers; the server logs why when it does not start.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (;;) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("clickhouse-server exited at start: " + log());
            }
            try {
                if (query("SELECT 1") == "1\n") break;
            } catch (const std::exception&) {  // not listening yet
            }
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error("clickhouse-server did not answer in 60 s: " + log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    // SIGKILL: a graceful stop waits for open keep-alive connections (a store's) for
    // seconds; MergeTree parts are written whole (renamed into place), so the data survives.
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
    }

    [[nodiscard]] std::string log() const {
        std::string out;
        for (const char* name : {"/log/stdout.log", "/log/err.log"}) {
            std::ifstream in(dir_.path() + name);
            out.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
        return out;
    }

    // query() without its answer.
    void exec(const std::string& sql, const std::string& database = "") const {
        (void)query(sql, database);
    }
    // Runs `sql` (in `database` when not empty) on a connection of its own and returns the
    // answer's body (TabSeparated unless the SQL says FORMAT); throws with the server's
    // message on an error status.
    [[nodiscard]] std::string query(const std::string& sql,
                                    const std::string& database = "") const {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(http_port_);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            if (fd >= 0) ::close(fd);
            throw std::runtime_error("clickhouse: cannot connect");
        }
        // HTTP/1.0: the answer is not chunked and ends at EOF.
        std::string request = "POST /?user=default&password=" + std::string(kPassword);
        if (!database.empty()) request += "&database=" + database;
        request += " HTTP/1.0\r\nContent-Length: " + std::to_string(sql.size()) + "\r\n\r\n" + sql;
        for (std::size_t at = 0; at < request.size();) {
            const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
            if (n <= 0) {
                ::close(fd);
                throw std::runtime_error("clickhouse: send failed");
            }
            at += static_cast<std::size_t>(n);
        }
        std::string answer;
        char buffer[16384];
        for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
            answer.append(buffer, static_cast<std::size_t>(n));
        }
        ::close(fd);
        const std::size_t body = answer.find("\r\n\r\n");
        if (body == std::string::npos) throw std::runtime_error("clickhouse: no answer: " + answer);
        if (answer.compare(0, 12, "HTTP/1.0 200") != 0 &&
            answer.compare(0, 12, "HTTP/1.1 200") != 0) {
            throw std::runtime_error("clickhouse: " + sql + ": " + answer.substr(body + 4));
        }
        return answer.substr(body + 4);
    }

  private:
    void write_config() const {
        const std::string d = dir_.path();
        std::ofstream(d + "/config.xml")
            << "<?xml version=\"1.0\"?>\n<yandex>\n"
            << "  <logger><level>warning</level><log>" << d << "/log/server.log</log><errorlog>"
            << d << "/log/err.log</errorlog></logger>\n"
            << "  <listen_host>127.0.0.1</listen_host>\n"
            << "  <http_port>" << http_port_ << "</http_port>\n"
            << https_config() << "  <tcp_port>" << tcp_port_ << "</tcp_port>\n"
            << "  <interserver_http_port>" << interserver_port_ << "</interserver_http_port>\n"
            << "  <path>" << d << "/data/</path>\n"
            << "  <tmp_path>" << d << "/tmp/</tmp_path>\n"
            << "  <user_files_path>" << d << "/user_files/</user_files_path>\n"
            << "  <format_schema_path>" << d << "/format_schemas/</format_schema_path>\n"
            << "  <mark_cache_size>67108864</mark_cache_size>\n"
            << "  <uncompressed_cache_size>67108864</uncompressed_cache_size>\n"
            << "  <max_concurrent_queries>64</max_concurrent_queries>\n"
            << "  <default_profile>default</default_profile>\n"
            << "  <default_database>default</default_database>\n"
            << "  <timezone>UTC</timezone>\n"
            << "  <mlock_executable>false</mlock_executable>\n"
            << "  <profiles><default></default></profiles>\n"
            << "  <users><default><password>" << kPassword
            << "</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>"
               "<quota>default</quota></default></users>\n"
            << "  <quotas><default></default></quotas>\n"
            << "</yandex>\n";
    }

    [[nodiscard]] std::string https_config() const {
        if (certificates_.empty()) return {};
        const std::string c = certificates_.string();
        return "  <https_port>" + std::to_string(https_port_) +
               "</https_port>\n  <openSSL><server><certificateFile>" + c +
               "/server.pem</certificateFile><privateKeyFile>" + c +
               "/server.key</privateKeyFile><verificationMode>none</verificationMode>"
               "<loadDefaultCAFile>false</loadDefaultCAFile><cacheSessions>true</cacheSessions>"
               "<disableProtocols>sslv2,sslv3</disableProtocols></server></openSSL>\n";
    }

    TempDir dir_;
    std::filesystem::path certificates_;
    std::uint16_t http_port_;
    std::uint16_t https_port_;
    std::uint16_t tcp_port_;
    std::uint16_t interserver_port_;
    pid_t pid_ = -1;
};

}  // namespace tokenradar::testing
