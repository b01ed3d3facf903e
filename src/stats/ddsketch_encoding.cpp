// DdSketch::encode and DdSketch::decode: the sketch's binary form (ddsketch.hpp).
#include <tokenradar/stats/ddsketch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

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

void put_f32(std::vector<std::uint8_t>& out, float f) {
    const auto bits = std::bit_cast<std::uint32_t>(f);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
}

// v is a float's value (so pack() writes it in 4 bytes).
bool is_float(double v) {
    return std::fabs(v) <= std::numeric_limits<float>::max() &&
           static_cast<double>(static_cast<float>(v)) == v;
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

// ---- Packed form (pack / unpack / merge_packed) -----------------------------------------
//
//   u8      0xFE: empty (nothing follows); 0xFF: counts are f64; k in 0..52: counts are
//           varints of count * 2^k; k | 0x40: the same, the bucket counts in a dictionary
//   count   total weight
//   f64     min, max, sum
//   count   zero bucket
//   varint  n, then without a dictionary n x (varint step, count), steps as in the encoding
//           above; with one: u8 b (the dictionary has d <= 2^b <= kMaxDictionary counts),
//           varint d, d x count (the distinct bucket counts), then n x varint
//           (step << b | the count's place in the dictionary)
//
// The dictionary is for the observatory's folded cells: a cell-hour's weighted counts are a
// few values (one weight per client, most buckets holding one record), ~3 bytes each as
// varints, so a bucket takes about one byte instead of four. pack() writes whichever form is
// smaller. Reading is on the query path (merge_packed): no libm call, no division.

namespace {

constexpr std::uint8_t kPackedEmpty = 0xFE;
constexpr std::uint8_t kPackedF64 = 0xFF;
constexpr std::uint8_t kPackedDictionary = 0x40;
// A byte of kFloat* flags follows the mode: those of min, max and sum that are floats
// (round_to_float()) take 4 bytes instead of 8.
constexpr std::uint8_t kPackedFloats = 0x80;
constexpr std::uint8_t kFloatMin = 1;
constexpr std::uint8_t kFloatMax = 2;
constexpr std::uint8_t kFloatSum = 4;
constexpr std::uint8_t kPackedFractionBits = 0x3F;  // k of a mode that is not kPackedF64
constexpr unsigned kMaxDictionaryBits = 5;
constexpr std::size_t kMaxDictionary = std::size_t{1} << kMaxDictionaryBits;
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

std::size_t varint_size(std::uint64_t v) {
    std::size_t n = 1;
    for (; v >= 0x80; v >>= 7) ++n;
    return n;
}

// Bits that number d places.
unsigned place_bits(std::size_t d) {
    unsigned b = 0;
    while ((std::size_t{1} << b) < d) ++b;
    return b;
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
        // One byte is the common case (steps, dictionary places).
        if (pos_ < in_.size() && in_[pos_] < 0x80) return in_[pos_++];
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
    double f32() {
        std::uint32_t bits = 0;
        for (int i = 0; i < 4; ++i) bits |= static_cast<std::uint32_t>(u8()) << (8 * i);
        return std::bit_cast<float>(bits);
    }
    // A float when `as_float`, else a double.
    double real(bool as_float) { return as_float ? f32() : f64(); }
    // Passes `n` varints (each ends with a byte under 0x80).
    void skip_varints(std::uint64_t n) {
        while (n > 0 && pos_ < in_.size()) n -= in_[pos_++] < 0x80 ? 1 : 0;
    }
    void skip(std::size_t bytes) { pos_ = std::min(in_.size(), pos_ + bytes); }
    [[nodiscard]] std::size_t position() const noexcept { return pos_; }

  private:
    std::span<const std::uint8_t> in_;
    std::size_t pos_ = 0;
};

// One packed sketch: the header, then its buckets in index order (next()).
class PackedSketch {
  public:
    explicit PackedSketch(std::span<const std::uint8_t> in) : r_(in) {
        const std::uint8_t mode = r_.u8();
        if (mode == kPackedEmpty) return;
        empty_ = false;
        f64_ = mode == kPackedF64;
        dictionary_ = !f64_ && (mode & kPackedDictionary) != 0;
        const std::uint8_t floats = !f64_ && (mode & kPackedFloats) != 0 ? r_.u8() : 0;
        // 2^-k, built from its bits (k <= 52: a normal number), so a count is one multiply.
        const unsigned k = f64_ ? 0U : mode & kPackedFractionBits;
        scale_ = std::bit_cast<double>(static_cast<std::uint64_t>(1023 - k) << 52);
        count = read_count();
        min = r_.real((floats & kFloatMin) != 0);
        max = r_.real((floats & kFloatMax) != 0);
        sum = r_.real((floats & kFloatSum) != 0);
        zero = read_count();
        n = r_.varint();
        if (dictionary_) {
            shift_ = std::min<unsigned>(r_.u8(), kMaxDictionaryBits);
            mask_ = (std::uint64_t{1} << shift_) - 1;
            const auto d = static_cast<std::size_t>(r_.varint());
            assert(d >= 1 && d <= (std::size_t{1} << shift_));
            for (std::size_t i = 0; i < kMaxDictionary; ++i) dict_[i] = i < d ? read_count() : 0;
        }
    }

    [[nodiscard]] bool empty() const noexcept { return empty_; }
    // The next bucket (n of them); the reader moves past its bytes.
    std::pair<std::int64_t, double> next() {
        std::uint64_t v = r_.varint();
        double c = 0;
        if (dictionary_) {
            c = dict_[v & mask_];
            v >>= shift_;
        }
        index_ = read_ == 0 ? unzigzag(v) : index_ + 1 + static_cast<std::int64_t>(v);
        ++read_;
        if (!dictionary_) c = read_count();
        return {index_, c};
    }
    // Passes the buckets not read yet.
    void skip_buckets() {
        if (f64_) {
            for (; read_ < n; ++read_) {
                r_.skip_varints(1);
                r_.skip(8);
            }
        } else {
            r_.skip_varints((n - read_) * (dictionary_ ? 1 : 2));
        }
        read_ = n;
    }
    // Bytes read so far (all of them once every bucket was read or skipped).
    [[nodiscard]] std::size_t position() const noexcept { return r_.position(); }

    double count = 0, min = 0, max = 0, sum = 0, zero = 0;
    std::uint64_t n = 0;

  private:
    double read_count() { return f64_ ? r_.f64() : static_cast<double>(r_.varint()) * scale_; }

    PackedReader r_;
    bool empty_ = true;
    bool f64_ = false;
    bool dictionary_ = false;
    double scale_ = 1;
    unsigned shift_ = 0;
    std::uint64_t mask_ = 0;
    std::array<double, kMaxDictionary> dict_;  // NOLINT: filled when there is a dictionary
    std::int64_t index_ = 0;
    std::uint64_t read_ = 0;
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
    const auto scaled = [&](double c) { return static_cast<std::uint64_t>(std::ldexp(c, bits)); };
    const auto step_of = [&](std::size_t i) {
        return i == 0 ? zigzag(held[i].index)
                      : static_cast<std::uint64_t>(held[i].index - held[i - 1].index - 1);
    };
    // The distinct bucket counts, when few enough for a dictionary and it is smaller.
    std::array<double, kMaxDictionary> dict{};
    std::size_t d = 0;
    const auto place_of = [&](double c) {
        return static_cast<std::size_t>(
            std::find(dict.begin(), dict.begin() + static_cast<std::ptrdiff_t>(d), c) -
            dict.begin());
    };
    if (bits >= 0 && !held.empty()) {
        std::size_t plain = 0;
        bool fits = true;
        for (std::size_t i = 0; i < held.size(); ++i) {
            plain += varint_size(step_of(i)) + varint_size(scaled(held[i].count));
            if (!fits || place_of(held[i].count) < d) continue;
            if (d == kMaxDictionary) {
                fits = false;
            } else {
                dict[d++] = held[i].count;
            }
        }
        if (fits) {
            const unsigned b = place_bits(d);
            std::size_t coded = 1 + varint_size(d);
            for (std::size_t k = 0; k < d; ++k) coded += varint_size(scaled(dict[k]));
            for (std::size_t i = 0; i < held.size(); ++i)
                coded += varint_size(step_of(i) << b | place_of(held[i].count));
            if (coded >= plain) d = 0;
        } else {
            d = 0;
        }
    }
    const auto mode = static_cast<std::uint8_t>(bits < 0 ? kPackedF64 : bits);
    const auto floats = static_cast<std::uint8_t>(
        mode == kPackedF64 ? 0
                           : (is_float(min_) ? kFloatMin : 0) | (is_float(max_) ? kFloatMax : 0) |
                                 (is_float(sum_) ? kFloatSum : 0));
    std::uint8_t flags = d > 0 ? kPackedDictionary : 0;
    if (floats != 0) flags |= kPackedFloats;
    out.push_back(static_cast<std::uint8_t>(mode | flags));
    if (floats != 0) out.push_back(floats);
    const auto put_count = [&](double c) {
        if (mode == kPackedF64) {
            put_f64(out, c);
        } else {
            put_varint(out, scaled(c));
        }
    };
    const auto put_real = [&](double v, std::uint8_t as_float) {
        if ((floats & as_float) != 0) {
            put_f32(out, static_cast<float>(v));
        } else {
            put_f64(out, v);
        }
    };
    put_count(count_);
    put_real(min_, kFloatMin);
    put_real(max_, kFloatMax);
    put_real(sum_, kFloatSum);
    put_count(zero_count_);
    if (d == 0) {
        put_buckets(out, held, put_count);
        return;
    }
    const unsigned b = place_bits(d);
    put_varint(out, held.size());
    out.push_back(static_cast<std::uint8_t>(b));
    put_varint(out, d);
    for (std::size_t k = 0; k < d; ++k) put_count(dict[k]);
    for (std::size_t i = 0; i < held.size(); ++i)
        put_varint(out, step_of(i) << b | place_of(held[i].count));
}

DdSketch DdSketch::unpack(std::span<const std::uint8_t>& in, double relative_accuracy,
                          std::size_t max_buckets) {
    DdSketch s(relative_accuracy, max_buckets);
    PackedSketch p(in);
    if (!p.empty()) {
        s.count_ = p.count;
        s.min_ = p.min;
        s.max_ = p.max;
        s.sum_ = p.sum;
        s.zero_count_ = p.zero;
        assert(p.n <= max_buckets);
        std::vector<Bucket> held;
        held.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(p.n, max_buckets)));
        for (std::uint64_t i = 0; i < p.n; ++i) {
            const auto [index, c] = p.next();
            held.push_back({static_cast<std::int32_t>(index), c});
        }
        if (!held.empty()) {
            // Allocated once and exactly.
            const auto span = static_cast<std::size_t>(
                std::clamp<std::int64_t>(std::int64_t{held.back().index} - held.front().index + 1,
                                         1, static_cast<std::int64_t>(max_buckets)));
            s.offset_ = held.front().index;
            s.counts_.assign(span, 0);
            for (const Bucket& b : held) {
                const auto k = static_cast<std::size_t>(b.index - s.offset_);
                if (k < span) s.counts_[k] = b.count;
            }
        }
    }
    in = in.subspan(std::min(p.position(), in.size()));
    return s;
}

void DdSketch::merge_packed(std::span<const std::uint8_t>& in) {
    PackedSketch p(in);
    if (!p.empty()) {
        assert(count_ + p.count <= kMaxTotalWeight);
        if (p.n > 0) {
            // As merge_impl with weight 1: the store grows (or collapses) once to cover the
            // other's range, then each bucket adds to its own (or the lowest kept) bucket. The
            // buckets are read once, into `held` (on the stack while they fit).
            constexpr std::size_t kOnStack = 256;
            std::array<Bucket, kOnStack> stack;  // NOLINT: written before read
            std::vector<Bucket> heap;
            Bucket* held = stack.data();
            if (p.n > kOnStack) {
                heap.resize(static_cast<std::size_t>(p.n));
                held = heap.data();
            }
            const auto count = static_cast<std::size_t>(p.n);
            for (std::size_t i = 0; i < count; ++i) {
                const auto [index, c] = p.next();
                held[i] = {static_cast<std::int32_t>(index), c};
            }
            const std::int32_t lo = held[0].index;
            const std::int32_t hi = held[count - 1].index;
            const bool covered =
                lo >= offset_ &&
                static_cast<std::int64_t>(hi) < offset_ + static_cast<std::int64_t>(counts_.size());
            const std::int32_t lowest = covered ? lo : extend(lo, hi);
            double* store = counts_.data();
            const std::int32_t offset = offset_;
            if (lowest <= lo) {
                for (std::size_t i = 0; i < count; ++i)
                    store[held[i].index - offset] += held[i].count;
            } else {
                for (std::size_t i = 0; i < count; ++i)
                    store[std::max(held[i].index, lowest) - offset] += held[i].count;
            }
        }
        if (p.zero != 0) zero_count_ += p.zero;
        count_ += p.count;
        sum_ += p.sum;
        min_ = std::min(min_, p.min);
        max_ = std::max(max_, p.max);
    }
    in = in.subspan(std::min(p.position(), in.size()));
}

void DdSketch::skip_packed(std::span<const std::uint8_t>& in) {
    PackedSketch p(in);
    p.skip_buckets();
    in = in.subspan(std::min(p.position(), in.size()));
}

}  // namespace tokenradar::stats
