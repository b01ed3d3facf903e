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
                                             std::chrono::nanoseconds duration,
                                             std::uint64_t seed) {
    std::vector<std::int64_t> offsets;
    if (rate <= 0) return offsets;
    for (ArrivalSequence sequence(rate, arrival, seed); count == 0 || offsets.size() < count;) {
        const std::int64_t at = sequence.next();
        if (count == 0 && at >= duration.count()) break;
        offsets.push_back(at);
    }
    return offsets;
}

ArrivalSequence::ArrivalSequence(double rate, Arrival arrival, std::uint64_t seed)
    : mean_gap_ns_(1e9 / rate), arrival_(arrival), rng_(seed) {}

std::int64_t ArrivalSequence::next() {
    const auto offset = static_cast<std::int64_t>(std::llround(at_));
    at_ += arrival_ == Arrival::constant ? mean_gap_ns_ : gap_(rng_) * mean_gap_ns_;
    return offset;
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
