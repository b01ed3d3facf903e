#pragma once
// One owner per database file. A process that keeps the observatory's rollups in memory
// (serve, demo) saves them over the rows in the file, so a second such process, or a
// `rollup --rebuild` under a running server, would silently overwrite the other's rows.
// The owner holds an exclusive flock(2) on "<database>.lock": a separate file, because any
// second descriptor on the database itself would drop SQLite's POSIX locks when closed.
// The kernel releases the lock when the owner exits, however it exits; the file stays and
// holds the last owner's pid for the refusal message.

#include <tokenradar/core/error.hpp>

#include <memory>
#include <string>

namespace tokenradar::store {

class OwnerLock {
  public:
    // Takes the lock without waiting; refused with the holder's pid while another process
    // (or another OwnerLock in this one) holds it.
    static Result<std::unique_ptr<OwnerLock>> acquire(const std::string& database_path);
    ~OwnerLock();
    OwnerLock(const OwnerLock&) = delete;
    OwnerLock& operator=(const OwnerLock&) = delete;

  private:
    explicit OwnerLock(int fd) : fd_(fd) {}
    int fd_;
};

}  // namespace tokenradar::store
