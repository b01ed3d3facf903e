#include <tokenradar/stats/ddsketch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <string_view>

namespace tokenradar::stats {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMinIndexable = std::numeric_limits<double>::min();  // DBL_MIN
constexpr double kMaxValue = std::numeric_limits<double>::max();

// Bucket slack added in the direction a store grows, so a slowly widening range does not
// reallocate on every new extreme (growth is also geometric, needed / 2). Small, because the
// observatory's minute buckets hold many sketches of one or two values each: 32 made the
// rollup add's fresh-page faults its largest cost.
constexpr std::int64_t kGrowthSlack = 8;

// v as a float, rounded down (direction -1), up (1) or to the nearest (0), when v is in the
// floats' normal range, where that moves it by at most 2^-24 of itself; else v.
double to_float(double v, int direction) noexcept {
    constexpr float kHighest = std::numeric_limits<float>::max();
    constexpr float kLowest = std::numeric_limits<float>::min();  // the least normal float
    if (!(v >= kLowest && v <= kHighest)) return v;
    auto f = static_cast<float>(v);
    if (direction < 0 && static_cast<double>(f) > v) f = std::nextafter(f, 0.0F);
    if (direction > 0 && static_cast<double>(f) < v) f = std::nextafter(f, kHighest);
    return f;
}

double multiplier_for(double relative_accuracy) {
    return 0.75 / std::log1p(2 * relative_accuracy / (1 - relative_accuracy));
}

}  // namespace

DdSketch::DdSketch(double relative_accuracy, std::size_t max_buckets)
    : alpha_(relative_accuracy),
      // Sketches are made by the thousand per query (one per metric per group): the default's
      // logarithm once.
      multiplier_([relative_accuracy] {
          static const double default_multiplier = multiplier_for(kDefaultRelativeAccuracy);
          return relative_accuracy == kDefaultRelativeAccuracy ? default_multiplier
                                                               : multiplier_for(relative_accuracy);
      }()),
      multiplier_third_(multiplier_ / 3),
      max_buckets_(max_buckets),
      min_(kInf),
      max_(-kInf) {
    assert(relative_accuracy >= kMinRelativeAccuracy && relative_accuracy <= kMaxRelativeAccuracy);
    assert(max_buckets >= kMinMaxBuckets && max_buckets <= kMaxMaxBuckets);
}

namespace {

// f^-1(y) as 2^exponent * mantissa, mantissa in [1, 2): P(x) = p solved for x in [0, 1],
// x = 2 - sqrt(4 - 3p), written without the cancellation at small p.
std::pair<double, int> inverse_f(double y) {
    const double e = std::floor(y);
    const double p = y - e;
    const double x = 3 * p / (2 + std::sqrt(4 - 3 * p));
    return {1 + x, static_cast<int>(e)};
}

}  // namespace

std::pair<double, double> DdSketch::bounds_of(std::int32_t index) const noexcept {
    const auto [lo, lo_exp] = inverse_f((index - 1) / multiplier_);
    const auto [hi, hi_exp] = inverse_f(index / multiplier_);
    return {std::ldexp(lo, lo_exp), std::ldexp(hi, hi_exp)};
}

double DdSketch::value_of(std::int32_t index) const noexcept {
    // The harmonic midpoint, computed on mantissas so the bucket of DBL_MAX, whose upper
    // bound overflows, still gets a finite value.
    const auto [lo, lo_exp] = inverse_f((index - 1) / multiplier_);
    const auto [hi, hi_exp] = inverse_f(index / multiplier_);
    const double hi_scaled = std::ldexp(hi, hi_exp - lo_exp);
    const double mid = std::ldexp(2 * lo * hi_scaled / (lo + hi_scaled), lo_exp);
    return std::min(mid, kMaxValue);
}

void DdSketch::add_slow(std::int32_t index, double weight) {
    const std::int32_t lowest = extend(index, index);
    counts_[static_cast<std::size_t>(std::max(index, lowest) - offset_)] += weight;
}

bool DdSketch::occupied_range(std::int32_t& lo, std::int32_t& hi) const noexcept {
    // Four buckets a step over the growth room at either end (non-short-circuit ors: one
    // branch per four): merges of rollups that still have their room call this a lot.
    const double* c = counts_.data();
    const std::size_t n = counts_.size();
    std::size_t first = 0;
    while (first + 4 <= n && ((c[first] != 0) | (c[first + 1] != 0) | (c[first + 2] != 0) |
                              (c[first + 3] != 0)) == 0) {
        first += 4;
    }
    while (first < n && c[first] == 0) ++first;
    if (first == n) return false;
    std::size_t end = n;  // one past the last non-empty bucket
    while (end >= first + 4 &&
           ((c[end - 1] != 0) | (c[end - 2] != 0) | (c[end - 3] != 0) | (c[end - 4] != 0)) == 0) {
        end -= 4;
    }
    while (c[end - 1] == 0) --end;
    lo = offset_ + static_cast<std::int32_t>(first);
    hi = offset_ + static_cast<std::int32_t>(end - 1);
    return true;
}

std::int32_t DdSketch::extend(std::int32_t lo, std::int32_t hi) {
    std::int32_t held_lo = lo;
    std::int32_t held_hi = hi;
    const bool held = occupied_range(held_lo, held_hi);
    std::int64_t new_lo = std::min(lo, held_lo);
    const std::int64_t new_hi = std::max(hi, held_hi);
    const auto cap = static_cast<std::int64_t>(max_buckets_);
    if (new_hi - new_lo + 1 > cap) new_lo = new_hi - cap + 1;

    const std::int64_t old_lo = offset_;
    const auto old_size = static_cast<std::int64_t>(counts_.size());
    if (new_lo >= old_lo && new_hi < old_lo + old_size) {
        return static_cast<std::int32_t>(new_lo);  // covered, nothing collapses
    }
    // Slack only towards the side that grew, and only while under the cap: a collapsed store
    // is exactly [new_lo, new_hi], so indexes below it take the slow path and are clamped.
    const std::int64_t needed = new_hi - new_lo + 1;
    const std::int64_t spare = std::min(cap - needed, std::max(kGrowthSlack, needed / 2));
    const bool grows_down = !held || new_lo < held_lo;
    const bool grows_up = !held || new_hi > held_hi;
    std::int64_t below = 0;
    std::int64_t above = 0;
    if (grows_down && grows_up) {
        below = spare / 2;
        above = spare - below;
    } else if (grows_down) {
        below = spare;
    } else {
        above = spare;
    }
    const std::int64_t store_lo = new_lo - below;
    std::vector<double> counts(static_cast<std::size_t>(needed + below + above), 0.0);
    if (held) {
        for (std::int64_t i = held_lo; i <= held_hi; ++i) {
            const double c = counts_[static_cast<std::size_t>(i - old_lo)];
            counts[static_cast<std::size_t>(std::max(i, new_lo) - store_lo)] += c;
        }
    }
    counts_ = std::move(counts);
    offset_ = static_cast<std::int32_t>(store_lo);
    return static_cast<std::int32_t>(new_lo);
}

Result<void> DdSketch::merge(const DdSketch& other, double weight) {
    return merge_impl(other, weight, 0);
}

Result<void> DdSketch::merge_on_grid(const DdSketch& other, double weight, int grid_bits) {
    assert(grid_bits >= 0 && grid_bits <= 52);
    return merge_impl(other, weight, std::ldexp(1.0, -grid_bits));
}

Result<void> DdSketch::merge_impl(const DdSketch& other, double weight, double grid) {
    if (other.alpha_ != alpha_ || other.max_buckets_ != max_buckets_) {
        return Error(Errc::unsupported,
                     fmt::format("ddsketch merge: relative accuracy {} and max_buckets {} differ "
                                 "from this sketch's {} and {}",
                                 other.alpha_, other.max_buckets_, alpha_, max_buckets_));
    }
    if (!(weight > 0 && weight <= std::numeric_limits<double>::max())) {
        return Error(Errc::bad_request,
                     fmt::format("ddsketch merge: weight {} is not a finite number > 0", weight));
    }
    if (other.count_ == 0) return {};
    if (!(count_ + other.count_ * weight <= kMaxTotalWeight)) {
        return Error(Errc::bad_request,
                     fmt::format("ddsketch merge: total weight {} would exceed {}",
                                 count_ + other.count_ * weight, kMaxTotalWeight));
    }
    if (&other == this) {
        // Merging into itself: the copy is what makes it safe.
        // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
        const DdSketch copy = other;
        return merge_impl(copy, weight, grid);
    }
    // On a grid every weighted count is a multiple of `grid` (at least one, so a bucket never
    // empties), and the total is their sum.
    const auto weighted = [&](double c) {
        if (grid == 0) return c * weight;
        // Round to nearest (even) by the 2^52 trick: std::round is a libm call without SSE4.1.
        // Multiples of 2^52 and beyond are integers already.
        double steps = c * weight / grid;
        if (steps < 0x1p52) steps = (steps + 0x1p52) - 0x1p52;
        return std::max(grid, steps * grid);
    };
    double added = 0;
    std::int32_t lo = 0;
    std::int32_t hi = 0;
    if (other.occupied_range(lo, hi)) {
        // Inside the store nothing grows or collapses (a store never exceeds max_buckets_),
        // so extend(), which scans this store for its occupied range, is not needed.
        const bool covered =
            lo >= offset_ &&
            static_cast<std::int64_t>(hi) < offset_ + static_cast<std::int64_t>(counts_.size());
        const std::int32_t lowest = covered ? lo : extend(lo, hi);
        if (grid == 0 && weight == 1 && lowest <= lo) {
            // The common case (a query adding up cached sums): a plain add the compiler
            // vectorises. Empty buckets add 0, which changes nothing.
            const double* from = &other.counts_[static_cast<std::size_t>(lo - other.offset_)];
            double* to = &counts_[static_cast<std::size_t>(lo - offset_)];
            for (std::int32_t k = 0; k <= hi - lo; ++k) to[k] += from[k];
        } else {
            for (std::int32_t i = lo; i <= hi; ++i) {
                const double c = other.counts_[static_cast<std::size_t>(i - other.offset_)];
                if (c == 0) continue;
                const double w = weighted(c);
                counts_[static_cast<std::size_t>(std::max(i, lowest) - offset_)] += w;
                added += w;
            }
        }
    }
    if (other.zero_count_ != 0) {
        const double w = weighted(other.zero_count_);
        zero_count_ += w;
        added += w;
    }
    count_ += grid == 0 ? other.count_ * weight : added;
    sum_ += other.sum_ * weight;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
    return {};
}

std::optional<double> DdSketch::quantile(double q) const {
    if (count_ == 0 || std::isnan(q)) return std::nullopt;
    if (q <= 0) return min_;
    if (q >= 1) return max_;
    const double rank = q * (count_ - 1);
    double cumulative = zero_count_;
    // The zero bucket also holds subnormals: min, when it is one, is the better estimate.
    if (cumulative > rank) return std::clamp(0.0, min_, max_);
    for (std::size_t k = 0; k < counts_.size(); ++k) {
        cumulative += counts_[k];
        if (cumulative > rank) {
            const double v = value_of(offset_ + static_cast<std::int32_t>(k));
            return std::clamp(v, min_, max_);
        }
    }
    return max_;  // fractional weights: the bucket sum fell a few ulp short of count_
}

std::vector<std::pair<double, double>> DdSketch::cdf(std::size_t max_points) const {
    std::vector<std::pair<double, double>> points;
    if (count_ == 0 || max_points == 0) return points;
    // Fractions come from the bucket sum itself so the last one is exactly 1.
    double total = zero_count_;
    for (double c : counts_) total += c;
    const double step = 1.0 / static_cast<double>(max_points);
    double next = step;
    double cumulative = zero_count_;
    std::int32_t lo = 0;
    std::int32_t hi = -1;
    const bool any = occupied_range(lo, hi);
    auto emit = [&](double value, bool last) {
        const double fraction = last ? 1.0 : cumulative / total;
        if (!last && fraction < next) return;
        if (last && points.size() == max_points) points.pop_back();
        points.emplace_back(last ? max_ : std::clamp(value, min_, max_), fraction);
        next = (std::floor(fraction / step) + 1) * step;
    };
    if (zero_count_ > 0) emit(0.0, !any);
    for (std::int32_t i = lo; any && i <= hi; ++i) {
        const double c = counts_[static_cast<std::size_t>(i - offset_)];
        if (c == 0) continue;
        cumulative += c;
        emit(value_of(i), i == hi);
    }
    return points;
}

std::optional<double> DdSketch::min() const {
    if (count_ == 0) return std::nullopt;
    return min_;
}

std::optional<double> DdSketch::max() const {
    if (count_ == 0) return std::nullopt;
    return max_;
}

std::vector<DdSketch::Bucket> DdSketch::buckets() const {
    std::vector<Bucket> out;
    for (std::size_t k = 0; k < counts_.size(); ++k) {
        if (counts_[k] != 0) out.push_back({offset_ + static_cast<std::int32_t>(k), counts_[k]});
    }
    return out;
}

void DdSketch::round_to_float() noexcept {
    if (count_ == 0) return;
    min_ = to_float(min_, -1);
    max_ = to_float(max_, 1);
    sum_ = to_float(sum_, 0);
}

void DdSketch::clear() noexcept {
    counts_.clear();
    offset_ = 0;
    zero_count_ = count_ = sum_ = 0;
    min_ = kInf;
    max_ = -kInf;
}

void DdSketch::shrink_to_fit() {
    std::int32_t lo = 0;
    std::int32_t hi = 0;
    if (!occupied_range(lo, hi)) {
        counts_ = {};  // vector::clear() would keep the capacity
        offset_ = 0;
        return;
    }
    if (counts_.size() == static_cast<std::size_t>(hi - lo) + 1 &&
        counts_.capacity() == counts_.size())
        return;
    const auto first = counts_.begin() + (lo - offset_);
    std::vector<double> kept(first, first + (hi - lo + 1));
    counts_ = std::move(kept);
    offset_ = lo;
}

bool DdSketch::operator==(const DdSketch& other) const {
    auto same = [](double a, double b) {
        return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
    };
    return same(alpha_, other.alpha_) && max_buckets_ == other.max_buckets_ &&
           same(zero_count_, other.zero_count_) && same(count_, other.count_) &&
           same(sum_, other.sum_) && same(min_, other.min_) && same(max_, other.max_) &&
           buckets() == other.buckets();
}

}  // namespace tokenradar::stats
