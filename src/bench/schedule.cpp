#include <tokenradar/bench/schedule.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tokenradar::bench {

std::optional<Arrival> parse_arrival(std::string_view text) noexcept {
    if (text == "poisson") return Arrival::poisson;
    if (text == "constant") return Arrival::constant;
    return std::nullopt;
}

std::vector<std::int64_t> open_loop_schedule(double rate, Arrival arrival, std::size_t count,
                                             std::chrono::nanoseconds duration, std::uint64_t seed) {
    std::vector<std::int64_t> offsets;
    if (rate <= 0) return offsets;
    const double mean_gap_ns = 1e9 / rate;
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(1.0);
    double at = 0;
    const auto limit = static_cast<double>(duration.count());
    while (count > 0 ? offsets.size() < count : at < limit) {
        offsets.push_back(static_cast<std::int64_t>(std::llround(at)));
        at += arrival == Arrival::constant ? mean_gap_ns : gap(rng) * mean_gap_ns;
    }
    return offsets;
}

TargetOrder::TargetOrder(std::size_t targets, std::uint64_t seed)
    : round_(targets), at_(targets), rng_(seed) {
    std::iota(round_.begin(), round_.end(), std::size_t{0});
}

std::size_t TargetOrder::next() {
    if (at_ >= round_.size()) {
        std::shuffle(round_.begin(), round_.end(), rng_);
        at_ = 0;
    }
    return round_[at_++];
}

}  // namespace tokenradar::bench
