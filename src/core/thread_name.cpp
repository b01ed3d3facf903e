#include <pthread.h>

#include <tokenradar/core/thread_name.hpp>

#include <algorithm>
#include <array>
#include <cstddef>

namespace tokenradar {
namespace {

constexpr std::size_t kMaxName = 15;  // TASK_COMM_LEN - 1

}  // namespace

void name_this_thread(std::string_view name) noexcept {
    std::array<char, kMaxName + 1> buffer{};
    const std::size_t n = std::min(name.size(), kMaxName);
    std::copy_n(name.data(), n, buffer.data());
    pthread_setname_np(pthread_self(), buffer.data());  // cannot fail with <= 15 bytes
}

std::string this_thread_name() {
    std::array<char, kMaxName + 1> buffer{};
    if (pthread_getname_np(pthread_self(), buffer.data(), buffer.size()) != 0) return {};
    return std::string(buffer.data());
}

}  // namespace tokenradar
