#include "owner_lock.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace tokenradar::store {

namespace {

// The pid the last owner wrote, or "unknown".
std::string recorded_owner(int fd) {
    char text[32] = {};
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    std::string_view pid(text, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.remove_suffix(1);
    return pid.empty() ? std::string("unknown") : std::string(pid);
}

}  // namespace

Result<std::unique_ptr<OwnerLock>> OwnerLock::acquire(const std::string& database_path) {
    const std::string lock_path = database_path + ".lock";
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return Error(Errc::internal, fmt::format("{}: cannot open the owner lock: {}", lock_path,
                                                 std::strerror(errno)));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        const std::string owner = recorded_owner(fd);
        ::close(fd);
        if (error == EWOULDBLOCK) {
            return Error(
                Errc::forbidden,
                fmt::format("{}: in use by another tokenradar process (pid {}): one serve, "
                            "demo or rollup --rebuild at a time may own a database; stop it first",
                            database_path, owner));
        }
        return Error(Errc::internal,
                     fmt::format("{}: cannot lock: {}", lock_path, std::strerror(error)));
    }
    // Only a refusal message reads the pid: the lock holds without it.
    const std::string pid = fmt::format("{}\n", ::getpid());
    if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);
    return std::unique_ptr<OwnerLock>(new OwnerLock(fd));
}

OwnerLock::~OwnerLock() { ::close(fd_); }

}  // namespace tokenradar::store
