#pragma once
// Real-time scheduling for threads whose whole job is to act on time (the sim's paced
// writes). Under the default scheduler a thread that shares a core with another busy one
// waits for the end of that one's time slice, several milliseconds; a SCHED_FIFO thread
// preempts it when its timer fires. Linux's real-time throttling (sched_rt_runtime_us, 95%
// of each second by default) still leaves other processes a share of every CPU.

#include <tokenradar/core/error.hpp>

namespace tokenradar {

inline constexpr int kMinRealtimePriority = 1;
inline constexpr int kMaxRealtimePriority = 99;
// What `sim --realtime` and `bench --realtime` use. Low among real-time priorities: threaded
// IRQ handlers run at 50 and must still preempt these threads, whose I/O goes through them.
// Any real-time priority preempts every ordinary process, which is all timing needs.
inline constexpr int kTimingRealtimePriority = 10;

// Switches the calling thread to SCHED_FIFO at `priority` (1..99). Threads it creates
// afterwards inherit the policy (the pthread default, PTHREAD_INHERIT_SCHED). Needs root,
// CAP_SYS_NICE or an RLIMIT_RTPRIO allowance; the error says which is missing.
Result<void> use_realtime_scheduling(int priority);

}  // namespace tokenradar
