#pragma once
// DDSketch (Masson, Rim, Lee, VLDB 2019): a quantile sketch with relative accuracy, used for
// the aggregates of metrics.md (observatory rollups per minute/hour and label cell, the
// gateway's live percentiles). Any percentile over any window and label subset is a merge of
// sketches, never a scan of raw rows.
//
// Mapping (the paper's logarithmic mapping with a cheap log, as DataDog's quadratically
// interpolated mapping): write v = 2^e * (1 + x), x in [0, 1), and let
// f(v) = e + P(x), P(x) = x (4 - x) / 3, a stand-in for log2(v) that is exact at powers of
// two, continuous and increasing. Bucket i holds the values with (i - 1) / M < f(v) <= i / M.
// In u = log2(v), df/du = P'(x) (1 + x) ln 2 = (4 + 2x - 2x^2) / 3 * ln 2 >= (4/3) ln 2, so a
// bucket spans at most (1/M) / ((4/3) ln 2) in log2; with M = 3 / (4 ln gamma),
// gamma = (1 + a) / (1 - a), that is log2(gamma): upper / lower <= gamma, and the bucket's
// harmonic midpoint 2 lo hi / (lo + hi) is within a relative (gamma - 1) / (gamma + 1) = a of
// every value in it. The price is 8% more buckets than ceil(log_gamma(v)) (M instead of
// 1 / log2(gamma)); the gain is an index from the exponent bits and three multiplications,
// no libm call (add() about 5 ns instead of 8 with std::log, bench/README.md). The widest
// buckets (next to powers of two) reach 0.9967 a at 1%, so float rounding (about 1e-13 of a
// value near a boundary) never reaches the bound; ddsketch_test checks it over the whole
// double range.
//
// Quantile rank: quantile(q) estimates the order statistic at 0-based rank floor(q * (n - 1))
// of the sorted values (the "lower" nearest rank); for that value x it guarantees
// |estimate - x| <= a * x. stats/percentiles.hpp interpolates linearly between the ranks
// floor and ceil of q * (n - 1) (type 7), so the exact run percentiles of a benchmark can be
// higher than the sketch's by the gap between two adjacent samples (plus the 1%): nothing for
// p50..p99 over thousands of samples, a lot for p99 over 20 samples. quantile(0) and
// quantile(1) are the exact min and max; estimates are clamped to [min, max].
//
// Values: 0 (and positive values below DBL_MIN) go to a zero bucket whose estimate is 0
// (clamped to min like every estimate, so a subnormal min is its own estimate).
// Negative, NaN and infinite values are rejected: add() returns false and changes nothing. A
// negative latency is a clock bug upstream; clamping it to 0 would hide it. Failures (which
// metrics.md counts as +infinity) are counted next to the sketch, not in it.
//
// Counts are doubles, so add(v, w) takes a weight: the observatory weights each client's
// samples per hour so one busy client cannot own a percentile. Integer weights sum exactly
// while the total stays below 2^53 (enforced), so merge is exact bucket for bucket; with
// fractional weights bucket indexes still match exactly and counts to double rounding (a few
// ulp). Weights act as repeat counts: the rank is q * (W - 1) on the cumulative weight W, so
// scale weights to sum to the number of samples (client c with n_c of N samples among k
// clients: w = N / (k * n_c)); then count() still says how many samples stand behind a
// number and a cell of two clients does not degenerate to "p75 = the lower client".
//
// Buckets: one dense array with an offset that grows either way, at most max_buckets
// (default 2048: at 1%, 37.5 buckets per power of two, a ratio of 2.8e16: 1 ns to 320 days). Beyond
// that the lowest buckets collapse into the lowest kept one: quantiles whose rank falls among the
// collapsed values are overestimated (reported as the lowest kept bucket, so at most the smallest
// value not collapsed); all higher quantiles keep the guarantee. The kept range is a function of
// the set of values alone (the highest bucket index minus max_buckets - 1), so collapsing does not
// break "merge equals the sketch of the union".
//
// Threads: not thread-safe; one owner adds, merges and reads. Nothing suspends.

#include <tokenradar/core/error.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace tokenradar::stats {

class DdSketch {
  public:
    static constexpr double kDefaultRelativeAccuracy = 0.01;
    static constexpr std::size_t kDefaultMaxBuckets = 2048;
    // Limits of the constructor and of decode(): the index of DBL_MAX must fit in int32 and a
    // decoded sketch must not allocate without bound.
    static constexpr double kMinRelativeAccuracy = 1e-5;
    static constexpr double kMaxRelativeAccuracy = 0.5;
    static constexpr std::size_t kMinMaxBuckets = 16;
    static constexpr std::size_t kMaxMaxBuckets = 1 << 16;
    // Total weight stays at or below 2^53 so integer counts stay exact.
    static constexpr double kMaxTotalWeight = 9007199254740992.0;

    struct Bucket {
        std::int32_t index;  // holds the values in bounds_of(index)
        double count;
        bool operator==(const Bucket&) const = default;
    };

    // Asserts relative_accuracy in [kMinRelativeAccuracy, kMaxRelativeAccuracy] and
    // max_buckets in [kMinMaxBuckets, kMaxMaxBuckets] (callers validate configuration).
    explicit DdSketch(double relative_accuracy = kDefaultRelativeAccuracy,
                      std::size_t max_buckets = kDefaultMaxBuckets);

    // Adds `value` with weight `weight`. False (and no change) when value is negative, NaN or
    // infinite, when weight is not a finite number > 0, or when the total would pass
    // kMaxTotalWeight.
    bool add(double value, double weight = 1.0);  // inline below: the gateway's hot path

    // Adds `other` into this sketch: the result equals the sketch of both value sets.
    // `weight` multiplies other's counts (per-client weighting; 1 keeps the merge exact).
    // Errc::unsupported when relative accuracy or max_buckets differ; Errc::bad_request when
    // weight is not a finite number > 0 or the total weight would pass kMaxTotalWeight. On
    // error nothing changes.
    Result<void> merge(const DdSketch& other, double weight = 1.0);
    // merge() with each weighted count rounded to the nearest multiple of 2^-grid_bits (at
    // least one multiple; grid_bits 0..52), the total being their sum. When other's counts are
    // integers every count of the result is such a multiple, and while totals stay below
    // 2^(53 - grid_bits) all further sums of them are exact: merges then give the same sketch
    // in any order and grouping (the observatory caches partial merges of weighted rollups).
    Result<void> merge_on_grid(const DdSketch& other, double weight, int grid_bits);

    // q in [0, 1] (clamped); nullopt when empty or q is NaN. See the rank convention above.
    [[nodiscard]] std::optional<double> quantile(double q) const;

    // Up to max_points (value, fraction of weight at or below value) pairs, ascending, the last
    // (max, 1.0). With more non-empty buckets than points, points are spread evenly in
    // cumulative fraction. Values are bucket representatives clamped to [min, max].
    [[nodiscard]] std::vector<std::pair<double, double>> cdf(std::size_t max_points) const;

    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] double count() const noexcept { return count_; }  // total weight
    [[nodiscard]] double sum() const noexcept { return sum_; }      // sum of value * weight
    [[nodiscard]] std::optional<double> min() const;                // exact; nullopt if empty
    [[nodiscard]] std::optional<double> max() const;
    [[nodiscard]] double zero_count() const noexcept { return zero_count_; }
    // Non-empty buckets, ascending by index (the zero bucket is zero_count()).
    [[nodiscard]] std::vector<Bucket> buckets() const;
    [[nodiscard]] double relative_accuracy() const noexcept { return alpha_; }
    [[nodiscard]] std::size_t max_buckets() const noexcept { return max_buckets_; }

    // Bucket index of a value in [DBL_MIN, DBL_MAX]; the bucket's bounds (lower exclusive,
    // upper inclusive) and representative value.
    [[nodiscard]] std::int32_t index_of(double value) const noexcept {
        const auto bits = std::bit_cast<std::uint64_t>(value);
        const auto exponent = static_cast<double>(static_cast<std::int64_t>(bits >> 52) - 1023);
        const double x = std::bit_cast<double>((bits & kMantissaBits) | kOneBits) - 1;
        const double scaled = exponent * multiplier_ + x * (4 - x) * multiplier_third_;
        // ceil() by truncation and a correction: std::ceil is a libm call without SSE4.1.
        const auto i = static_cast<std::int32_t>(scaled);
        return i + static_cast<std::int32_t>(scaled > static_cast<double>(i));
    }
    [[nodiscard]] std::pair<double, double> bounds_of(std::int32_t index) const noexcept;
    [[nodiscard]] double value_of(std::int32_t index) const noexcept;

    void clear() noexcept;
    // Releases the room kept for growth: the store shrinks to the non-empty buckets. Nothing
    // else changes (quantiles, encode(), ==); the next value outside them grows it again.
    // For sketches that stop changing (an observatory hour that has passed).
    void shrink_to_fit();
    // Buckets allocated, empty ones and growth room included (memory accounting, tests).
    [[nodiscard]] std::size_t allocated_buckets() const noexcept { return counts_.capacity(); }

    // Compact bytes for SQLite BLOBs (format in ddsketch.cpp): version 1, little-endian,
    // delta-varint bucket indexes, varint counts when all counts are integers.
    [[nodiscard]] std::vector<std::uint8_t> encode() const;
    // Errc::protocol_error naming the field and what was expected; never crashes or allocates
    // more than max_buckets counts on arbitrary input.
    static Result<DdSketch> decode(std::span<const std::uint8_t> bytes);

    // A smaller in-memory form for sketches that stop changing (the observatory's folded
    // buckets), not for storage (no version; unpack() is given the parameters): counts are
    // varints of count * 2^k for the smallest k in [0, 52] that makes each an integer (the
    // observatory's weighted counts lie on a 2^-20 grid: ~3 bytes where an f64 takes 8),
    // else f64, the bucket counts through a dictionary of the distinct ones when that is
    // smaller (a folded cell-hour's few client weights: a byte a bucket); an empty sketch is
    // one byte; min, max and sum that are floats (round_to_float()) take 4 bytes each, not 8.
    // pack() appends to `out`; unpack() reads one
    // sketch from the front of `in` and advances it past it; unpack(pack()) == *this. unpack()
    // is for bytes pack() wrote: it reads no byte outside `in` but checks nothing else.
    void pack(std::vector<std::uint8_t>& out) const;
    // Rounds min down, max up and the sum to the nearest float: a relative change of at most
    // 2^-24, far inside the sketch's accuracy (quantiles clamped to a min and max that moved
    // outward by as much), for sketches kept packed by the hundred thousand (the observatory's
    // folded cells: 12 bytes less each). Buckets and counts do not change.
    void round_to_float() noexcept;
    static DdSketch unpack(std::span<const std::uint8_t>& in,
                           double relative_accuracy = kDefaultRelativeAccuracy,
                           std::size_t max_buckets = kDefaultMaxBuckets);
    // merge(unpack(in)) without building the sketch (no allocation unless this store grows):
    // the same bits. Reads one packed sketch from the front of `in` and advances it past it;
    // skip_packed() only advances. The packed sketch must have this sketch's parameters.
    void merge_packed(std::span<const std::uint8_t>& in);
    static void skip_packed(std::span<const std::uint8_t>& in);

    // Same parameters, buckets, zero count, count, sum, min and max (bit for bit).
    bool operator==(const DdSketch& other) const;

  private:
    Result<void> merge_impl(const DdSketch& other, double weight, double grid);  // grid 0: exact
    void add_slow(std::int32_t index, double weight);
    // Makes the store cover [lo, hi] plus the buckets already held, collapsing the lowest so
    // at most max_buckets_ remain; returns the lowest kept index (lower indexes go there).
    std::int32_t extend(std::int32_t lo, std::int32_t hi);
    // First and last non-empty bucket index; false when there is none.
    bool occupied_range(std::int32_t& lo, std::int32_t& hi) const noexcept;

    static constexpr std::uint64_t kMantissaBits = (std::uint64_t{1} << 52) - 1;
    static constexpr std::uint64_t kOneBits = std::uint64_t{1023} << 52;  // 1.0

    double alpha_;
    double multiplier_;        // M = 3 / (4 ln gamma)
    double multiplier_third_;  // M / 3
    std::size_t max_buckets_;
    std::vector<double> counts_;  // counts_[k] is bucket offset_ + k
    std::int32_t offset_ = 0;
    double zero_count_ = 0;
    double count_ = 0;
    double sum_ = 0;
    double min_;
    double max_;
};

inline bool DdSketch::add(double value, double weight) {
    // Written so NaN fails every test.
    if (!(value >= 0 && value <= std::numeric_limits<double>::max() && weight > 0 &&
          count_ + weight <= kMaxTotalWeight)) {
        return false;
    }
    if (value < std::numeric_limits<double>::min()) {
        zero_count_ += weight;
        value += 0.0;  // -0.0 becomes 0.0, so min() never reports -0
    } else {
        const std::int32_t index = index_of(value);
        const auto k = static_cast<std::size_t>(static_cast<std::int64_t>(index) - offset_);
        if (k < counts_.size()) {
            counts_[k] += weight;
        } else {
            add_slow(index, weight);
        }
    }
    count_ += weight;
    sum_ += value * weight;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    return true;
}

}  // namespace tokenradar::stats
