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

}  // namespace

DdSketch::DdSketch(double relative_accuracy, std::size_t max_buckets)
    : alpha_(relative_accuracy),
      multiplier_(0.75 / std::log1p(2 * relative_accuracy / (1 - relative_accuracy))),
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
    if (counts_.size() == static_cast<std::size_t>(hi - lo + 1) &&
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

// ---- Encoding ---------------------------------------------------------------------------
//
// Version 1; fixed-width fields little-endian; varint = unsigned LEB128, shortest form only.
//   u8      version = 1
//   u8      flags: bit 0 set = every count below is a varint (all counts are integers);
//           clear = every count is an f64. Other bits must be 0.
//   f64     relative accuracy
//   varint  max_buckets
//   count   total weight
//   if total weight > 0:  f64 min, f64 max, f64 sum
//   count   zero bucket
//   varint  n, the number of non-empty buckets
//   n x     varint step, count (> 0)
//           step of the first bucket: zigzag(index); of the others: index - previous - 1
// A latency sketch at 1% over a 100x range holds about 230 buckets: about 2-3 bytes each.

namespace {

constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kIntegerCounts = 1;

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<std::uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<std::uint8_t>(v));
}

void put_f64(std::vector<std::uint8_t>& out, double d) {
    const auto bits = std::bit_cast<std::uint64_t>(d);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
}

std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}

std::int64_t unzigzag(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

bool is_integer_count(double c) {
    return c >= 0 && c <= DdSketch::kMaxTotalWeight && c == std::floor(c);
}

// Reads fields in order; the first failure sticks (later reads return 0) so decode() checks
// once per step instead of after every field.
class Reader {
  public:
    explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

    std::uint64_t varint(std::string_view field) {
        if (!ok()) return 0;
        // Most index steps are 0 and most counts small: one byte.
        if (pos_ < bytes_.size() && bytes_[pos_] < 0x80) return bytes_[pos_++];
        std::uint64_t v = 0;
        for (int shift = 0;; shift += 7) {  // returns by the 10th byte (shift 63)
            if (pos_ >= bytes_.size()) return truncated(field);
            const std::uint8_t b = bytes_[pos_++];
            if (shift == 63 && b > 1) return fail(field, "a varint of at most 64 bits");
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                if (b == 0 && shift > 0) return fail(field, "a varint in its shortest form");
                return v;
            }
        }
    }

    double f64(std::string_view field) {
        if (!ok()) return 0;
        if (bytes_.size() - pos_ < 8) return static_cast<double>(truncated(field));
        std::uint64_t bits = 0;
        for (std::size_t i = 0; i < 8; ++i) {
            bits |= static_cast<std::uint64_t>(bytes_[pos_ + i]) << (8 * i);
        }
        pos_ += 8;
        return std::bit_cast<double>(bits);
    }

    std::uint8_t u8(std::string_view field) {
        if (!ok()) return 0;
        if (pos_ >= bytes_.size()) return static_cast<std::uint8_t>(truncated(field));
        return bytes_[pos_++];
    }

    // Records "<field> at byte N: expected <expected>" unless an error is already recorded.
    std::uint64_t fail(std::string_view field, std::string_view expected) {
        if (ok_) {
            ok_ = false;
            error_ = Error(Errc::protocol_error, fmt::format("ddsketch: {} at byte {}: expected {}",
                                                             field, pos_, expected));
        }
        return 0;
    }

    bool ok() const { return ok_; }
    bool at_end() const { return pos_ == bytes_.size(); }
    const Error& error() const { return error_; }

  private:
    std::uint64_t truncated(std::string_view field) {
        if (ok_) {
            ok_ = false;
            error_ = Error(Errc::protocol_error,
                           fmt::format("ddsketch: input ends at byte {} inside {}", pos_, field));
        }
        return 0;
    }

    std::span<const std::uint8_t> bytes_;
    std::size_t pos_ = 0;
    bool ok_ = true;  // cheaper to test per field than error_.code
    Error error_;
};

}  // namespace

std::vector<std::uint8_t> DdSketch::encode() const {
    const std::vector<Bucket> held = buckets();
    bool integers = is_integer_count(count_) && is_integer_count(zero_count_);
    for (const Bucket& b : held) integers = integers && is_integer_count(b.count);
    std::vector<std::uint8_t> out;
    out.reserve(32 + held.size() * (integers ? 3 : 9));
    auto put_count = [&](double c) {
        if (integers) {
            put_varint(out, static_cast<std::uint64_t>(c));
        } else {
            put_f64(out, c);
        }
    };
    out.push_back(kVersion);
    out.push_back(integers ? kIntegerCounts : 0);
    put_f64(out, alpha_);
    put_varint(out, max_buckets_);
    put_count(count_);
    if (count_ > 0) {
        put_f64(out, min_);
        put_f64(out, max_);
        put_f64(out, sum_);
    }
    put_count(zero_count_);
    put_varint(out, held.size());
    std::int64_t previous = 0;
    for (std::size_t i = 0; i < held.size(); ++i) {
        put_varint(out, i == 0 ? zigzag(held[i].index)
                               : static_cast<std::uint64_t>(held[i].index - previous - 1));
        previous = held[i].index;
        put_count(held[i].count);
    }
    return out;
}

Result<DdSketch> DdSketch::decode(std::span<const std::uint8_t> bytes) {
    Reader in(bytes);
    const std::uint8_t version = in.u8("version");
    if (in.ok() && version != kVersion) in.fail("version", fmt::format("1, got {}", version));
    const std::uint8_t flags = in.u8("flags");
    if (in.ok() && (flags & ~kIntegerCounts) != 0) {
        in.fail("flags", fmt::format("only bit 0, got {:#x}", flags));
    }
    const bool integers = (flags & kIntegerCounts) != 0;
    const double alpha = in.f64("relative accuracy");
    if (in.ok() && !(alpha >= kMinRelativeAccuracy && alpha <= kMaxRelativeAccuracy)) {
        in.fail("relative accuracy",
                fmt::format("a value in [{}, {}], got {}", kMinRelativeAccuracy,
                            kMaxRelativeAccuracy, alpha));
    }
    const std::uint64_t cap = in.varint("max_buckets");
    if (in.ok() && (cap < kMinMaxBuckets || cap > kMaxMaxBuckets)) {
        in.fail("max_buckets",
                fmt::format("a value in [{}, {}], got {}", kMinMaxBuckets, kMaxMaxBuckets, cap));
    }
    if (!in.ok()) return in.error();

    auto read_count = [&](std::string_view field, bool positive) {
        double c = 0;
        if (integers) {
            const std::uint64_t v = in.varint(field);
            c = static_cast<double>(v);
            if (in.ok() && v > static_cast<std::uint64_t>(kMaxTotalWeight)) {
                in.fail(field, "an integer count of at most 2^53");
            }
        } else {
            c = in.f64(field);
            // -0.0 would not survive a round trip (it re-encodes as the varint 0).
            if (in.ok() && !(c >= 0 && c <= kMaxTotalWeight && !std::signbit(c))) {
                in.fail(field, "a count in [0, 2^53], not -0");
            }
        }
        if (in.ok() && positive && c == 0) in.fail(field, "a count above 0");
        return c;
    };

    DdSketch s(alpha, static_cast<std::size_t>(cap));
    const double count = read_count("total weight", false);
    if (in.ok() && count > 0) {
        const double lo = in.f64("min");
        const double hi = in.f64("max");
        const double sum = in.f64("sum");
        // add() never stores -0.0 (it adds +0.0 to zeros).
        if (in.ok() &&
            !(lo >= 0 && lo <= hi && hi <= kMaxValue && !std::signbit(lo) && !std::signbit(hi))) {
            in.fail("min and max", "0 <= min <= max, both finite, not -0");
        }
        if (in.ok() && !(sum >= 0 && !std::signbit(sum))) {
            in.fail("sum", "a sum >= 0, not -0");  // +inf is a valid overflow
        }
        s.min_ = lo;
        s.max_ = hi;
        s.sum_ = sum;
    }
    const double zero = read_count("zero count", false);
    const std::uint64_t n = in.varint("number of buckets");
    if (in.ok() && n > cap) {
        in.fail("number of buckets", fmt::format("at most max_buckets ({}), got {}", cap, n));
    }
    if (!in.ok()) return in.error();

    // Indexes of values in [DBL_MIN, DBL_MAX]; anything outside cannot come from add().
    const std::int64_t min_index = s.index_of(kMinIndexable);
    const std::int64_t max_index = s.index_of(kMaxValue);
    std::vector<Bucket> held;
    held.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n && in.ok(); ++i) {
        const std::uint64_t step = in.varint("bucket index");
        if (!in.ok()) break;
        std::int64_t index = 0;
        if (i == 0) {
            index = unzigzag(step);
        } else if (step >= static_cast<std::uint64_t>(max_index - held.back().index)) {
            in.fail("bucket index", fmt::format("an index at most {}", max_index));
            break;
        } else {
            index = held.back().index + 1 + static_cast<std::int64_t>(step);
        }
        if (index < min_index || index > max_index) {
            in.fail("bucket index",
                    fmt::format("an index in [{}, {}], got {}", min_index, max_index, index));
            break;
        }
        if (i > 0 && index - held.front().index >= static_cast<std::int64_t>(cap)) {
            in.fail("bucket index", fmt::format("buckets spanning at most {} indexes", cap));
            break;
        }
        const double c = read_count("bucket count", true);
        held.push_back({static_cast<std::int32_t>(index), c});
    }
    if (in.ok() && !in.at_end()) in.fail("end", "no bytes after the last bucket");
    if (!in.ok()) return in.error();

    double total = zero;
    for (const Bucket& b : held) total += b.count;
    // Integer counts add up exactly; fractional ones were summed in another order when added.
    const bool consistent =
        integers || count == 0 ? total == count : std::abs(total - count) <= 1e-6 * count;
    if (!consistent) {
        return Error(Errc::protocol_error,
                     fmt::format("ddsketch: total weight {} differs from the sum of the "
                                 "bucket counts {}",
                                 count, total));
    }
    if (count > 0 && (zero > 0) != (s.min_ < kMinIndexable)) {
        return Error(Errc::protocol_error,
                     "ddsketch: min below DBL_MIN expected exactly when the zero count is above 0");
    }
    if (count > 0 && held.empty() != (s.max_ < kMinIndexable)) {
        return Error(Errc::protocol_error,
                     "ddsketch: max at least DBL_MIN expected exactly when buckets are present");
    }
    s.zero_count_ = zero;
    s.count_ = count;
    if (!held.empty()) {
        s.offset_ = held.front().index;
        s.counts_.assign(static_cast<std::size_t>(held.back().index - held.front().index + 1), 0);
        for (const Bucket& b : held)
            s.counts_[static_cast<std::size_t>(b.index - s.offset_)] = b.count;
    }
    return s;
}

}  // namespace tokenradar::stats
