#pragma once
// A real PostgreSQL 15 server (Debian's postgresql-15, /usr/lib/postgresql/15/bin) on a free
// loopback port for one test: its own data directory in a temporary directory, password
// logins (scram-sha-256) for the superuser `tokenradar`, no Unix socket, a database
// `tokenradar` created at start. Stopped (immediate) and removed on destruction; stop(),
// start() and restart() (pg_ctl, same port) make an outage.
//
// PostgreSQL refuses to run as root: run as root (a fresh Debian machine, CI), the server
// runs as the `postgres` system user the package creates (else `nobody`), which owns the
// directory. initdb runs once per machine into a template directory
// (/tmp/tokenradar_pg15_template_v2_UID, under a file lock) that each server copies: initdb
// and a first start take ~2 s here, the copy ~0.4 s.
//
// Tests call PostgresServer::available() first and skip with skip_reason() when it is missing.

#include "temp_path.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::testing {

class PostgresServer {
  public:
    static constexpr const char* kBinDir = "/usr/lib/postgresql/15/bin";
    static constexpr const char* kUser = "tokenradar";
    static constexpr const char* kPassword = "tr-test-Pw-5d1e";

    static bool available() {
        return ::access((std::string(kBinDir) + "/initdb").c_str(), X_OK) == 0;
    }
    static std::string skip_reason() {
        return std::string(kBinDir) +
               "/initdb is not installed (scripts/install-deps.sh installs postgresql-15)";
    }

    // durable: PostgreSQL's defaults (fsync, synchronous commit), for benchmarks. Otherwise
    // fsync, synchronous_commit and full_page_writes are off: tests need no crash safety.
    explicit PostgresServer(bool durable = false)
        : dir_("pg"), port_(free_port()), durable_(durable) {
        std::filesystem::create_directories(dir_.path());
        owner_ = server_user();
        copy_template();
        start();
    }
    ~PostgresServer() {
        try {
            if (running_) pg_ctl(data_path(), {"-m", "immediate", "stop"});
        } catch (const std::exception&) {  // a destructor must not throw; the dir goes anyway
        }
    }
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    [[nodiscard]] std::uint16_t port() const { return port_; }
    // postgresql://tokenradar:PASSWORD@127.0.0.1:PORT/DATABASE
    [[nodiscard]] std::string url(std::string_view database = "tokenradar") const {
        return "postgresql://" + std::string(kUser) + ":" + kPassword +
               "@127.0.0.1:" + std::to_string(port_) + "/" + std::string(database);
    }
    // A new, empty database; its URL. (FILE_COPY: a third of the default's time here.)
    std::string create_database(const std::string& name) {
        exec("postgres", "CREATE DATABASE " + name + " STRATEGY = FILE_COPY");
        return url(name);
    }

    void start() {
        if (running_) return;
        pg_ctl(data_path(),
               {"-l", log_path(), "-o", server_options(port_, durable_), "-t", "60", "start"});
        running_ = true;
    }
    // fast: sessions are terminated, as when an operator stops or restarts the server.
    void stop() {
        if (!running_) return;
        running_ = false;
        pg_ctl(data_path(), {"-m", "fast", "stop"});
    }
    void restart() {
        stop();
        start();
    }

    [[nodiscard]] std::string log() const {
        std::ifstream in(log_path());
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

    // Runs `sql` in `database` on a connection of its own; throws with the server's message.
    void exec(const std::string& database, const std::string& sql) const { query(database, sql); }
    // The first column of each row, joined by newlines ("" when none or NULL). `sql` may be
    // several statements: the last one's rows.
    std::string query(const std::string& database, const std::string& sql) const {
        PGconn* c = PQconnectdb(url(database).c_str());
        if (PQstatus(c) != CONNECTION_OK) {
            const std::string message = PQerrorMessage(c);
            PQfinish(c);
            throw std::runtime_error("postgres: connect: " + message);
        }
        PGresult* r = PQexec(c, sql.c_str());
        const ExecStatusType status = PQresultStatus(r);
        std::string out;
        std::string error;
        if (status == PGRES_TUPLES_OK) {
            for (int row = 0; row < PQntuples(r); ++row) {
                if (row > 0) out += '\n';
                out += PQgetvalue(r, row, 0);
            }
        } else if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
            error = PQresultErrorMessage(r);
        }
        PQclear(r);
        PQfinish(c);
        if (!error.empty()) throw std::runtime_error("postgres: " + sql + ": " + error);
        return out;
    }

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
    struct User {
        uid_t uid = 0;
        gid_t gid = 0;
        bool switch_to = false;  // we are root: drop to uid/gid in the child
    };

    static User server_user() {
        User u;
        u.uid = ::geteuid();
        u.gid = ::getegid();
        if (u.uid != 0) return u;
        const passwd* pw = ::getpwnam("postgres");
        if (pw == nullptr) pw = ::getpwnam("nobody");
        if (pw == nullptr)
            throw std::runtime_error("postgres: running as root and no postgres user");
        u.uid = pw->pw_uid;
        u.gid = pw->pw_gid;
        u.switch_to = true;
        return u;
    }

    [[nodiscard]] std::string data_path() const { return dir_.path() + "/data"; }
    [[nodiscard]] std::string log_path() const { return dir_.path() + "/server.log"; }

    // Runs argv[0] with `args` as the server's user, output to `log`; throws on failure.
    void run(const std::vector<std::string>& argv, const std::string& log) const {
        std::vector<char*> args;
        std::vector<std::string> copy = argv;
        for (auto& a : copy) args.push_back(a.data());
        args.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid < 0) throw std::runtime_error("fork failed");
        if (pid == 0) {
            const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                ::dup2(fd, STDOUT_FILENO);
                ::dup2(fd, STDERR_FILENO);
            }
            if (owner_.switch_to && (::setgroups(0, nullptr) != 0 || ::setgid(owner_.gid) != 0 ||
                                     ::setuid(owner_.uid) != 0)) {
                ::_exit(126);
            }
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::ifstream in(log);
            throw std::runtime_error(
                argv[0] + " failed (status " + std::to_string(status) + "): " +
                std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) +
                "\nserver log: " + this->log());
        }
    }

    static std::string server_options(std::uint16_t port, bool durable) {
        std::string options = "-p " + std::to_string(port) +
                              " -c listen_addresses=127.0.0.1 -c unix_socket_directories=''";
        if (!durable) options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
        return options;
    }

    void pg_ctl(const std::string& data, const std::vector<std::string>& args) const {
        std::vector<std::string> argv = {std::string(kBinDir) + "/pg_ctl", "-D", data, "-w"};
        argv.insert(argv.end(), args.begin(), args.end());
        run(argv, dir_.path() + "/pg_ctl.log");
    }

    void chown_tree(const std::string& path) const {
        if (!owner_.switch_to) return;
        if (::chown(path.c_str(), owner_.uid, owner_.gid) != 0) {
            throw std::runtime_error("chown " + path + " failed");
        }
    }

    // The template cluster, made once per machine (initdb under a lock), copied into
    // data_path() with owner and modes kept.
    void copy_template() {
        const std::string base = std::filesystem::temp_directory_path().string() +
                                 "/tokenradar_pg15_template_v2_" + std::to_string(owner_.uid);
        const int lock = ::open((base + ".lock").c_str(), O_RDWR | O_CREAT, 0600);
        if (lock < 0 || ::flock(lock, LOCK_EX) != 0) throw std::runtime_error("lock " + base);
        try {
            if (!std::filesystem::exists(base + "/PG_VERSION")) make_template(base);
            chown_tree(dir_.path());
            run({"/bin/cp", "-a", base, data_path()}, dir_.path() + "/cp.log");
        } catch (...) {
            ::close(lock);
            throw;
        }
        ::close(lock);  // releases the flock
    }

    void make_template(const std::string& base) const {
        const std::string work = base + ".tmp";
        std::filesystem::remove_all(work);
        std::filesystem::create_directories(work);
        chown_tree(work);
        const std::string pwfile = work + "/pw";
        std::ofstream(pwfile) << kPassword << "\n";
        chown_tree(pwfile);
        // 1 MB WAL segments instead of 16: the copy each server makes is 28 MB, not 60.
        run({std::string(kBinDir) + "/initdb", "-D", work + "/data", "-U", kUser,
             "--pwfile=" + pwfile, "--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync",
             "--wal-segsize=1"},
            work + "/initdb.log");
        // The database every test uses, made once here; the clean stop leaves nothing to
        // recover in the copies.
        const std::uint16_t port = free_port();
        pg_ctl(work + "/data", {"-l", work + "/server.log", "-o", server_options(port, false), "-t",
                                "60", "start"});
        try {
            PGconn* c = PQconnectdb(("postgresql://" + std::string(kUser) + ":" + kPassword +
                                     "@127.0.0.1:" + std::to_string(port) + "/postgres")
                                        .c_str());
            PGresult* r = PQexec(c, "CREATE DATABASE tokenradar STRATEGY = FILE_COPY");
            const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
            const std::string error = PQerrorMessage(c);
            PQclear(r);
            PQfinish(c);
            if (!ok) throw std::runtime_error("postgres template: CREATE DATABASE: " + error);
        } catch (...) {
            pg_ctl(work + "/data", {"-m", "immediate", "stop"});
            throw;
        }
        pg_ctl(work + "/data", {"-m", "fast", "stop"});
        std::filesystem::rename(work + "/data", base);
        std::filesystem::remove_all(work);
    }

    TempDir dir_;
    std::uint16_t port_;
    bool durable_;
    User owner_;
    bool running_ = false;
};

}  // namespace tokenradar::testing
