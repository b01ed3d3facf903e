// Aggregate: the counts and sketches of one rollup bucket, and their bytes in the store.

#include <tokenradar/observatory/rollup.hpp>

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <limits>

namespace tokenradar::observatory {
namespace {

constexpr double kNsPerMs = 1e6;
// 2: the route counts are preceded by their number (1 had exactly 3: primary, fallback,
// hedge), so a route value added at the end needs no new version.
constexpr std::uint8_t kEncodingVersion = 2;
// A rollup row never holds more than this many distinct statuses (there are about 60).
constexpr std::uint64_t kMaxStatuses = 1024;
constexpr std::uint64_t kMaxStatusBytes = 64;
constexpr std::uint64_t kVersion1Routes = 3;
static_assert(kCacheNames.size() == 4,
              "encodings 1 and 2 hold 4 cache counts: a new value needs encoding 3, and "
              "decode() must still read 1 and 2");

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<std::uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<std::uint8_t>(v));
}

// The counts before the routes, as both encode() and pack() write them: samples, first
// attempts, statuses (name and count), tokens and cache outcomes.
void put_counts(std::vector<std::uint8_t>& out, const Aggregate& a) {
    for (std::uint64_t v : {a.samples, a.first_attempts}) put_varint(out, v);
    put_varint(out, a.statuses.size());
    for (const auto& [status, n] : a.statuses) {
        put_varint(out, status.size());
        out.insert(out.end(), status.begin(), status.end());
        put_varint(out, n);
    }
    for (std::uint64_t v :
         {a.prompt_tokens, a.cached_prompt_tokens, a.output_tokens, a.reasoning_tokens}) {
        put_varint(out, v);
    }
    for (std::uint64_t v : a.cache) put_varint(out, v);
}

class Reader {
  public:
    explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

    bool varint(std::string_view field, std::uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= bytes_.size()) return fail(field, "a varint, got the end of the data");
            const std::uint8_t b = bytes_[pos_++];
            v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
            if ((b & 0x80) == 0) return true;
        }
        return fail(field, "a varint of at most 10 bytes");
    }

    bool bytes(std::string_view field, std::uint64_t n, std::span<const std::uint8_t>& out) {
        if (n > bytes_.size() - pos_) {
            return fail(field, fmt::format("{} bytes, {} left", n, bytes_.size() - pos_));
        }
        out = bytes_.subspan(pos_, n);
        pos_ += n;
        return true;
    }

    bool fail(std::string_view field, std::string_view expected) {
        if (!error_)
            error_ = Error(Errc::protocol_error,
                           fmt::format("rollup row: {}: expected {}", field, expected));
        return false;
    }

    [[nodiscard]] bool at_end() const { return pos_ == bytes_.size(); }
    [[nodiscard]] std::span<const std::uint8_t> rest() const { return bytes_.subspan(pos_); }
    [[nodiscard]] const std::optional<Error>& error() const { return error_; }

  private:
    std::span<const std::uint8_t> bytes_;
    std::size_t pos_ = 0;
    std::optional<Error> error_;
};

}  // namespace

std::uint64_t Aggregate::errors() const noexcept {
    const auto ok = statuses.find(to_string(RequestStatus::ok));
    return samples - (ok == statuses.end() ? 0 : ok->second);
}

void Aggregate::add(const Measurement& m) {
    ++samples;
    if (m.attempt == 1) ++first_attempts;
    const std::string_view status = to_string(m.status);
    if (auto it = statuses.find(status); it != statuses.end()) {
        ++it->second;
    } else {
        statuses.emplace(status, 1);
    }
    ++cache[static_cast<std::size_t>(m.labels.cache)];
    ++route[static_cast<std::size_t>(m.labels.route)];
    // A cache hit is counted, and neither timed nor billed as the provider's: its latency is
    // the gateway's replay and its usage the original answer's, already counted once.
    if (m.labels.cache == Cache::exact || m.labels.cache == Cache::semantic) return;
    const auto tokens = [](const std::optional<std::int64_t>& n) {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(0, n.value_or(0)));
    };
    prompt_tokens += tokens(m.prompt_tokens);
    cached_prompt_tokens += tokens(m.cached_prompt_tokens);
    output_tokens += tokens(m.output_tokens);
    reasoning_tokens += tokens(m.reasoning_tokens);
    if (!m.ok()) return;
    const Derived d = derive(m);
    const auto put = [this](Metric metric, const std::optional<double>& ms) {
        if (ms) sketches[static_cast<std::size_t>(metric)].add(*ms);
    };
    put(Metric::ttft, d.ttft_ms);
    put(Metric::tpot, d.tpot_ms);
    put(Metric::e2e, d.e2e_ms);
    put(Metric::e2e500, d.e2e500_ms);
    if (m.overhead_ns) put(Metric::overhead, static_cast<double>(*m.overhead_ns) / kNsPerMs);
}

void Aggregate::merge(const Aggregate& other, double weight, MetricMask metrics) {
    merge_counts(other);
    merge_sketches(other, weight, metrics);
}

void Aggregate::merge_counts(const Aggregate& other) {
    samples += other.samples;
    first_attempts += other.first_attempts;
    for (const auto& [status, n] : other.statuses) {
        // Nearly always the same few statuses: find first, so no key string is built.
        if (auto it = statuses.find(status); it != statuses.end()) {
            it->second += n;
        } else {
            statuses.emplace(status, n);
        }
    }
    prompt_tokens += other.prompt_tokens;
    cached_prompt_tokens += other.cached_prompt_tokens;
    output_tokens += other.output_tokens;
    reasoning_tokens += other.reasoning_tokens;
    for (std::size_t i = 0; i < cache.size(); ++i) cache[i] += other.cache[i];
    for (std::size_t i = 0; i < route.size(); ++i) route[i] += other.route[i];
}

void Aggregate::merge_sketches(const Aggregate& other, double weight, MetricMask metrics) {
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if ((metrics & (1U << i)) == 0 || other.sketches[i].empty()) continue;
        // Same parameters everywhere and weights far below 2^53: cannot fail.
        [[maybe_unused]] const auto merged = sketches[i].merge(other.sketches[i], weight);
        assert(merged);
    }
}

void Aggregate::shrink_to_fit() {
    for (stats::DdSketch& s : sketches) s.shrink_to_fit();
}

void Aggregate::round_to_float() noexcept {
    for (stats::DdSketch& s : sketches) s.round_to_float();
}

std::vector<std::uint8_t> Aggregate::encode() const {
    std::vector<std::uint8_t> out;
    out.push_back(kEncodingVersion);
    put_counts(out, *this);
    put_varint(out, route.size());
    for (std::uint64_t v : route) put_varint(out, v);
    for (const stats::DdSketch& sketch : sketches) {
        const std::vector<std::uint8_t> bytes = sketch.encode();
        put_varint(out, bytes.size());
        out.insert(out.end(), bytes.begin(), bytes.end());
    }
    return out;
}

Result<Aggregate> Aggregate::decode(std::span<const std::uint8_t> bytes) {
    if (bytes.empty() || bytes[0] == 0 || bytes[0] > kEncodingVersion) {
        return Error(
            Errc::protocol_error,
            fmt::format("rollup row: version: expected 1 to {}, got {}", kEncodingVersion,
                        bytes.empty() ? std::string("no data") : std::to_string(bytes[0])));
    }
    const std::uint8_t version = bytes[0];
    Reader r(bytes.subspan(1));
    Aggregate a;
    std::uint64_t n_statuses = 0;
    bool ok = r.varint("samples", a.samples) && r.varint("first_attempts", a.first_attempts) &&
              r.varint("statuses", n_statuses);
    if (ok && n_statuses > kMaxStatuses) ok = r.fail("statuses", "at most 1024 entries");
    std::uint64_t status_total = 0;
    for (std::uint64_t i = 0; ok && i < n_statuses; ++i) {
        std::uint64_t len = 0;
        std::uint64_t n = 0;
        std::span<const std::uint8_t> name;
        ok = r.varint("status length", len) &&
             (len <= kMaxStatusBytes || r.fail("status length", "at most 64 bytes")) &&
             r.bytes("status", len, name) && r.varint("status count", n);
        if (!ok) break;
        const std::string status(name.begin(), name.end());
        if (!a.statuses.emplace(status, n).second) ok = r.fail("statuses", "distinct names");
        status_total += n;
    }
    if (ok && status_total != a.samples) ok = r.fail("statuses", "counts that add up to samples");
    for (std::uint64_t* v :
         {&a.prompt_tokens, &a.cached_prompt_tokens, &a.output_tokens, &a.reasoning_tokens}) {
        ok = ok && r.varint("tokens", *v);
    }
    for (std::uint64_t& v : a.cache) ok = ok && r.varint("cache", v);
    std::uint64_t n_routes = kVersion1Routes;
    if (ok && version >= 2) ok = r.varint("routes", n_routes);
    if (ok && n_routes > a.route.size()) {
        ok = r.fail("routes", fmt::format("at most {} route counts", a.route.size()));
    }
    for (std::uint64_t i = 0; ok && i < n_routes; ++i) ok = r.varint("route", a.route[i]);
    for (stats::DdSketch& sketch : a.sketches) {
        std::uint64_t len = 0;
        std::span<const std::uint8_t> body;
        ok = ok && r.varint("sketch length", len) && r.bytes("sketch", len, body);
        if (!ok) break;
        auto decoded = stats::DdSketch::decode(body);
        if (!decoded) return Error(Errc::protocol_error, "rollup row: " + decoded.error().message);
        if (decoded->relative_accuracy() != sketch.relative_accuracy() ||
            decoded->max_buckets() != sketch.max_buckets()) {
            ok = r.fail("sketch", "the rollup parameters (1% accuracy, default buckets)");
            break;
        }
        sketch = std::move(*decoded);
    }
    if (ok && !r.at_end()) ok = r.fail("end", "no bytes after the last sketch");
    if (!ok) return *r.error();
    return a;
}

void Aggregate::pack(std::vector<std::uint8_t>& out,
                     std::array<std::uint32_t, kMetricCount>* sketch_starts) const {
    put_counts(out, *this);
    for (std::uint64_t v : route) put_varint(out, v);
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if (sketch_starts != nullptr) (*sketch_starts)[i] = static_cast<std::uint32_t>(out.size());
        sketches[i].pack(out);
    }
}

void Aggregate::merge_packed_sketch(Metric m, std::span<const std::uint8_t> sketch) {
    sketches[static_cast<std::size_t>(m)].merge_packed(sketch);
}

Aggregate Aggregate::unpack(std::span<const std::uint8_t> bytes) {
    // pack() wrote these: a short read is a programmer error (asserted), never past the end.
    Reader r(bytes);
    Aggregate a;
    const auto varint = [&r](std::uint64_t& v) {
        [[maybe_unused]] const bool ok = r.varint("packed", v);
        assert(ok);
    };
    varint(a.samples);
    varint(a.first_attempts);
    std::uint64_t n_statuses = 0;
    varint(n_statuses);
    for (std::uint64_t i = 0; i < n_statuses; ++i) {
        std::uint64_t len = 0;
        std::uint64_t n = 0;
        std::span<const std::uint8_t> name;
        varint(len);
        if (!r.bytes("packed", len, name)) break;
        varint(n);
        a.statuses.emplace(std::string(name.begin(), name.end()), n);
    }
    for (std::uint64_t* v :
         {&a.prompt_tokens, &a.cached_prompt_tokens, &a.output_tokens, &a.reasoning_tokens}) {
        varint(*v);
    }
    for (std::uint64_t& v : a.cache) varint(v);
    for (std::uint64_t& v : a.route) varint(v);
    std::span<const std::uint8_t> rest = r.rest();
    for (stats::DdSketch& sketch : a.sketches) sketch = stats::DdSketch::unpack(rest);
    assert(rest.empty());
    return a;
}

void Aggregate::merge_packed(std::span<const std::uint8_t> bytes, MetricMask metrics, bool counts) {
    // pack() wrote these (as unpack()): a short read is a programmer error, asserted.
    Reader r(bytes);
    const auto varint = [&r] {
        std::uint64_t v = 0;
        [[maybe_unused]] const bool ok = r.varint("packed", v);
        assert(ok);
        return v;
    };
    const auto add = [counts](std::uint64_t& into, std::uint64_t v) {
        if (counts) into += v;
    };
    add(samples, varint());
    add(first_attempts, varint());
    const std::uint64_t n_statuses = varint();
    for (std::uint64_t i = 0; i < n_statuses; ++i) {
        const std::uint64_t len = varint();
        std::span<const std::uint8_t> name;
        if (!r.bytes("packed", len, name)) break;
        const std::uint64_t n = varint();
        if (!counts) continue;
        const std::string_view status(reinterpret_cast<const char*>(name.data()), name.size());
        if (auto it = statuses.find(status); it != statuses.end()) {
            it->second += n;
        } else {
            statuses.emplace(status, n);
        }
    }
    for (std::uint64_t* v :
         {&prompt_tokens, &cached_prompt_tokens, &output_tokens, &reasoning_tokens})
        add(*v, varint());
    for (std::uint64_t& v : cache) add(v, varint());
    for (std::uint64_t& v : route) add(v, varint());
    std::span<const std::uint8_t> rest = r.rest();
    for (std::size_t i = 0; i < kMetricCount; ++i) {
        if ((metrics & (1U << i)) != 0) {
            sketches[i].merge_packed(rest);
        } else {
            stats::DdSketch::skip_packed(rest);
        }
    }
    assert(rest.empty());
}

}  // namespace tokenradar::observatory
