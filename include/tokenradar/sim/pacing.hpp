#pragma once
// When a paced write wakes its thread. With a quantum, due times are rounded up to its
// multiples, so every stream due within one quantum shares one timer expiry: the thread
// wakes once for all of them instead of once per chunk. On a VM a wake-up (a timer
// interrupt and re-arming the timer) costs as much as the write itself (docs/NOTES.md,
// "The machine"). A write is never early; it is late by less than one quantum, and the lateness
// the sim reports is measured against the exact due time.

#include <cstdint>

namespace tokenradar::sim {

// The steady-clock time at which to wake for a write due at `due_ns`; `quantum_ns` <= 0
// wakes exactly then.
constexpr std::int64_t pacing_wake_ns(std::int64_t due_ns, std::int64_t quantum_ns) {
    if (quantum_ns <= 0) return due_ns;
    const std::int64_t rest = due_ns % quantum_ns;
    if (rest == 0) return due_ns;
    return due_ns + (rest > 0 ? quantum_ns - rest : -rest);
}

}  // namespace tokenradar::sim
