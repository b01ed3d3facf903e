#pragma once
// Names for the threads TokenRadar starts, as `top -H`, `ps -L`, perf and gdb show them:
// "tr-io" (the gateway's I/O), "tr-store" (the measurement writer), "tr-wal" (the WAL
// checkpointer), "tr-forward" (the observatory forwarder), "tr-sim" (a sim's I/O threads besides
// the main one; the demo's sims).

#include <string>
#include <string_view>

namespace tokenradar {

// Names the calling thread. Linux keeps 15 bytes: a longer name is cut there.
void name_this_thread(std::string_view name) noexcept;

// The calling thread's name.
std::string this_thread_name();

}  // namespace tokenradar
