// wake_jitter [--sleeps N] [--period-us P]: how late this machine wakes an idle thread. Sleeps
// P microseconds N times and prints the overshoot percentiles, the floor under every
// latency percentile measured here: on the shared 2-core VM an idle thread wakes from a 1 ms
// sleep ~0.1 ms late at p50, ~0.8 ms at p99 and ~2.2 ms at p999, so a request that wakes two
// processes cannot have a p99 under about a millisecond whatever they do (bench/README.md
// "The machine's own wake-up latency"). The bench scripts print it next to their results.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    CLI::App app("How late this machine wakes an idle thread from a short sleep.");
    std::size_t sleeps = 2000;
    unsigned period_us = 1000;
    app.add_option("--sleeps", sleeps, "Sleeps to time")->check(CLI::Range(100, 10'000'000));
    app.add_option("--period-us", period_us, "Each sleep, microseconds")
        ->check(CLI::Range(10, 1'000'000));
    CLI11_PARSE(app, argc, argv);

    using Clock = std::chrono::steady_clock;
    const auto period = std::chrono::microseconds(period_us);
    std::vector<double> late_ms;
    late_ms.reserve(sleeps);
    for (std::size_t i = 0; i < sleeps; ++i) {
        const auto start = Clock::now();
        std::this_thread::sleep_for(period);
        late_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start - period).count());
    }
    std::sort(late_ms.begin(), late_ms.end());
    const auto at = [&late_ms](double q) {
        return late_ms[std::min(late_ms.size() - 1, static_cast<std::size_t>(q * late_ms.size()))];
    };
    fmt::print(
        "wake-up lateness after a {} us sleep, {} sleeps: p50 {:.3f} ms, p99 {:.3f} ms, "
        "p999 {:.3f} ms, max {:.3f} ms\n",
        period_us, sleeps, at(0.5), at(0.99), at(0.999), late_ms.back());
}
