#include <pthread.h>
#include <sched.h>

#include <tokenradar/core/realtime.hpp>

#include <fmt/format.h>

#include <cstring>

namespace tokenradar {

Result<void> use_realtime_scheduling(int priority) {
    if (priority < kMinRealtimePriority || priority > kMaxRealtimePriority) {
        return Error(Errc::bad_request,
                     fmt::format("real-time priority {}: expected {} to {}", priority,
                                 kMinRealtimePriority, kMaxRealtimePriority));
    }
    sched_param param{};
    param.sched_priority = priority;
    if (const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); rc != 0) {
        return Error(
            Errc::internal,
            fmt::format(
                "cannot switch to real-time scheduling (SCHED_FIFO, priority {}): {}{}", priority,
                std::strerror(rc),
                rc == EPERM ? " (needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO allowance)" : ""));
    }
    return {};
}

}  // namespace tokenradar
