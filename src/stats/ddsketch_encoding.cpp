// DdSketch::encode and DdSketch::decode: the sketch's binary form (ddsketch.hpp).
#include <tokenradar/stats/ddsketch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace tokenradar::stats {

namespace {

constexpr double kMinIndexable = std::numeric_limits<double>::min();  // DBL_MIN
constexpr double kMaxValue = std::numeric_limits<double>::max();

}  // namespace

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

// The fields before the counts; in.ok() says whether they are valid.
struct Header {
    bool integers = false;  // counts are varints
    double alpha = 0;
    std::uint64_t cap = 0;  // max_buckets
};

Header read_header(Reader& in) {
    const std::uint8_t version = in.u8("version");
    if (in.ok() && version != kVersion) in.fail("version", fmt::format("1, got {}", version));
    const std::uint8_t flags = in.u8("flags");
    if (in.ok() && (flags & ~kIntegerCounts) != 0) {
        in.fail("flags", fmt::format("only bit 0, got {:#x}", flags));
    }
    Header h;
    h.integers = (flags & kIntegerCounts) != 0;
    h.alpha = in.f64("relative accuracy");
    if (in.ok() &&
        !(h.alpha >= DdSketch::kMinRelativeAccuracy && h.alpha <= DdSketch::kMaxRelativeAccuracy)) {
        in.fail("relative accuracy",
                fmt::format("a value in [{}, {}], got {}", DdSketch::kMinRelativeAccuracy,
                            DdSketch::kMaxRelativeAccuracy, h.alpha));
    }
    h.cap = in.varint("max_buckets");
    if (in.ok() && (h.cap < DdSketch::kMinMaxBuckets || h.cap > DdSketch::kMaxMaxBuckets)) {
        in.fail("max_buckets", fmt::format("a value in [{}, {}], got {}", DdSketch::kMinMaxBuckets,
                                           DdSketch::kMaxMaxBuckets, h.cap));
    }
    return h;
}

// A count: a varint when the sketch has integer counts, else an f64; bucket counts are
// `positive`.
double read_count(Reader& in, bool integers, std::string_view field, bool positive) {
    double c = 0;
    if (integers) {
        const std::uint64_t v = in.varint(field);
        c = static_cast<double>(v);
        if (in.ok() && v > static_cast<std::uint64_t>(DdSketch::kMaxTotalWeight)) {
            in.fail(field, "an integer count of at most 2^53");
        }
    } else {
        c = in.f64(field);
        // -0.0 would not survive a round trip (it re-encodes as the varint 0).
        if (in.ok() && !(c >= 0 && c <= DdSketch::kMaxTotalWeight && !std::signbit(c))) {
            in.fail(field, "a count in [0, 2^53], not -0");
        }
    }
    if (in.ok() && positive && c == 0) in.fail(field, "a count above 0");
    return c;
}

// min, max and sum, present when the total weight is above 0.
struct Extremes {
    double min = 0;
    double max = 0;
    double sum = 0;
};

Extremes read_extremes(Reader& in) {
    Extremes e;
    e.min = in.f64("min");
    e.max = in.f64("max");
    e.sum = in.f64("sum");
    // add() never stores -0.0 (it adds +0.0 to zeros).
    if (in.ok() && !(e.min >= 0 && e.min <= e.max && e.max <= kMaxValue && !std::signbit(e.min) &&
                     !std::signbit(e.max))) {
        in.fail("min and max", "0 <= min <= max, both finite, not -0");
    }
    if (in.ok() && !(e.sum >= 0 && !std::signbit(e.sum))) {
        in.fail("sum", "a sum >= 0, not -0");  // +inf is a valid overflow
    }
    return e;
}

// `n` buckets: the first index zigzag-coded, then each as the gap after the previous one.
// Indexes stay within [min_index, max_index] (values add() can store) and span at most `cap`.
std::vector<DdSketch::Bucket> read_buckets(Reader& in, const Header& h, std::uint64_t n,
                                           std::int64_t min_index, std::int64_t max_index) {
    std::vector<DdSketch::Bucket> held;
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
        if (i > 0 && index - held.front().index >= static_cast<std::int64_t>(h.cap)) {
            in.fail("bucket index", fmt::format("buckets spanning at most {} indexes", h.cap));
            break;
        }
        const double c = read_count(in, h.integers, "bucket count", true);
        held.push_back({static_cast<std::int32_t>(index), c});
    }
    return held;
}

// The totals agree with the buckets, and min / max with where the weight sits.
std::optional<Error> check_totals(const Header& h, double count, double zero,
                                  const Extremes& extremes,
                                  const std::vector<DdSketch::Bucket>& held) {
    double total = zero;
    for (const DdSketch::Bucket& b : held) total += b.count;
    // Integer counts add up exactly; fractional ones were summed in another order when added.
    const bool consistent =
        h.integers || count == 0 ? total == count : std::abs(total - count) <= 1e-6 * count;
    if (!consistent) {
        return Error(Errc::protocol_error,
                     fmt::format("ddsketch: total weight {} differs from the sum of the "
                                 "bucket counts {}",
                                 count, total));
    }
    if (count > 0 && (zero > 0) != (extremes.min < kMinIndexable)) {
        return Error(Errc::protocol_error,
                     "ddsketch: min below DBL_MIN expected exactly when the zero count is above 0");
    }
    if (count > 0 && held.empty() != (extremes.max < kMinIndexable)) {
        return Error(Errc::protocol_error,
                     "ddsketch: max at least DBL_MIN expected exactly when buckets are present");
    }
    return std::nullopt;
}

// The held buckets, as both forms write them: their number, the first index (zigzag) and each
// later one's gap to the one before, every index followed by its count as `put_count` writes it.
template <typename PutCount>
void put_buckets(std::vector<std::uint8_t>& out, std::span<const DdSketch::Bucket> held,
                 const PutCount& put_count) {
    put_varint(out, held.size());
    std::int64_t previous = 0;
    for (std::size_t i = 0; i < held.size(); ++i) {
        put_varint(out, i == 0 ? zigzag(held[i].index)
                               : static_cast<std::uint64_t>(held[i].index - previous - 1));
        previous = held[i].index;
        put_count(held[i].count);
    }
}

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
    put_buckets(out, held, put_count);
    return out;
}

Result<DdSketch> DdSketch::decode(std::span<const std::uint8_t> bytes) {
    Reader in(bytes);
    const Header h = read_header(in);
    if (!in.ok()) return in.error();

    DdSketch s(h.alpha, static_cast<std::size_t>(h.cap));
    const double count = read_count(in, h.integers, "total weight", false);
    Extremes extremes;
    if (in.ok() && count > 0) {
        extremes = read_extremes(in);
        s.min_ = extremes.min;
        s.max_ = extremes.max;
        s.sum_ = extremes.sum;
    }
    const double zero = read_count(in, h.integers, "zero count", false);
    const std::uint64_t n = in.varint("number of buckets");
    if (in.ok() && n > h.cap) {
        in.fail("number of buckets", fmt::format("at most max_buckets ({}), got {}", h.cap, n));
    }
    if (!in.ok()) return in.error();

    // Indexes of values in [DBL_MIN, DBL_MAX]; anything outside cannot come from add().
    const std::vector<Bucket> held =
        read_buckets(in, h, n, s.index_of(kMinIndexable), s.index_of(kMaxValue));
    if (in.ok() && !in.at_end()) in.fail("end", "no bytes after the last bucket");
    if (!in.ok()) return in.error();
    if (auto inconsistent = check_totals(h, count, zero, extremes, held)) return *inconsistent;

    s.zero_count_ = zero;
    s.count_ = count;
    if (!held.empty()) {
        s.offset_ = held.front().index;
        s.counts_.assign(static_cast<std::size_t>(held.back().index - held.front().index) + 1, 0);
        for (const Bucket& b : held)
            s.counts_[static_cast<std::size_t>(b.index - s.offset_)] = b.count;
    }
    return s;
}

// ---- Packed form (pack / unpack) --------------------------------------------------------
//
//   u8      0xFE: empty (nothing follows); 0xFF: counts are f64; k in 0..52: counts are
//           varints of count * 2^k
//   count   total weight
//   f64     min, max, sum
//   count   zero bucket
//   varint  n, then n x (varint step, count), steps as in the encoding above

namespace {

constexpr std::uint8_t kPackedEmpty = 0xFE;
constexpr std::uint8_t kPackedF64 = 0xFF;
constexpr int kMaxFractionBits = 52;
constexpr double kMaxScaled = 9.2e18;  // below 2^63: scaled counts fit a uint64 with room

// The fewest fraction bits that make c * 2^bits an integer below kMaxScaled; -1: none.
int fraction_bits(double c) {
    for (int k = 0; k <= kMaxFractionBits; ++k) {
        const double scaled = std::ldexp(c, k);  // exact: a power of two
        if (!(scaled < kMaxScaled)) return -1;
        if (scaled == std::floor(scaled)) return k;
    }
    return -1;
}

// Reads pack()'s bytes; past the end of the span it reads zeros (never outside it).
class PackedReader {
  public:
    explicit PackedReader(std::span<const std::uint8_t> in) : in_(in) {}

    std::uint8_t u8() {
        assert(pos_ < in_.size());
        return pos_ < in_.size() ? in_[pos_++] : 0;
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            const std::uint8_t b = u8();
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) break;
        }
        return v;
    }
    double f64() {
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(u8()) << (8 * i);
        return std::bit_cast<double>(bits);
    }
    double count(std::uint8_t mode) {
        return mode == kPackedF64 ? f64() : std::ldexp(static_cast<double>(varint()), -mode);
    }
    [[nodiscard]] std::size_t position() const noexcept { return pos_; }

  private:
    std::span<const std::uint8_t> in_;
    std::size_t pos_ = 0;
};

}  // namespace

void DdSketch::pack(std::vector<std::uint8_t>& out) const {
    if (count_ == 0) {
        out.push_back(kPackedEmpty);
        return;
    }
    const std::vector<Bucket> held = buckets();
    int bits = 0;  // -1: some count is on no grid
    const auto widen = [&bits](double c) {
        if (bits < 0) return;
        const int k = fraction_bits(c);
        bits = k < 0 ? -1 : std::max(bits, k);
    };
    widen(count_);
    widen(zero_count_);
    for (const Bucket& b : held) widen(b.count);
    // Every count is at most the total (up to rounding): the total bounds the scaled values.
    if (bits >= 0 && !(std::ldexp(count_, bits) < kMaxScaled / 2)) bits = -1;
    const auto mode = static_cast<std::uint8_t>(bits < 0 ? kPackedF64 : bits);
    out.push_back(mode);
    const auto put_count = [&](double c) {
        if (mode == kPackedF64) {
            put_f64(out, c);
        } else {
            put_varint(out, static_cast<std::uint64_t>(std::ldexp(c, bits)));
        }
    };
    put_count(count_);
    put_f64(out, min_);
    put_f64(out, max_);
    put_f64(out, sum_);
    put_count(zero_count_);
    put_buckets(out, held, put_count);
}

DdSketch DdSketch::unpack(std::span<const std::uint8_t>& in, double relative_accuracy,
                          std::size_t max_buckets) {
    DdSketch s(relative_accuracy, max_buckets);
    PackedReader r(in);
    const std::uint8_t mode = r.u8();
    if (mode != kPackedEmpty) {
        s.count_ = r.count(mode);
        s.min_ = r.f64();
        s.max_ = r.f64();
        s.sum_ = r.f64();
        s.zero_count_ = r.count(mode);
        const std::uint64_t n = r.varint();
        assert(n <= max_buckets);
        if (n > 0) {
            // Two passes over the buckets: the first finds their range, so the store is
            // allocated once and exactly.
            PackedReader scan = r;
            std::int64_t first = 0;
            std::int64_t last = 0;
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::uint64_t step = scan.varint();
                last = i == 0 ? unzigzag(step) : last + 1 + static_cast<std::int64_t>(step);
                if (i == 0) first = last;
                (void)scan.count(mode);
            }
            const auto span = static_cast<std::size_t>(std::clamp<std::int64_t>(
                last - first + 1, 1, static_cast<std::int64_t>(max_buckets)));
            s.offset_ = static_cast<std::int32_t>(first);
            s.counts_.assign(span, 0);
            std::int64_t index = 0;
            for (std::uint64_t i = 0; i < n; ++i) {
                const std::uint64_t step = r.varint();
                index = i == 0 ? unzigzag(step) : index + 1 + static_cast<std::int64_t>(step);
                const double c = r.count(mode);
                const auto k = static_cast<std::size_t>(index - first);
                if (k < span) s.counts_[k] = c;
            }
        }
    }
    in = in.subspan(std::min(r.position(), in.size()));
    return s;
}

}  // namespace tokenradar::stats
