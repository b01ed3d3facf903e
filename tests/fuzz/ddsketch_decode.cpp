// DdSketch::decode reads BLOBs from the rollup store, which may be corrupt or written by a
// newer version: arbitrary bytes must give a sketch or a protocol_error, never a crash or an
// unbounded allocation. Whatever decodes must re-encode to an equal sketch and answer
// quantiles, cdf() and merge() within its own min and max.

#include <tokenradar/stats/ddsketch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using tokenradar::stats::DdSketch;
    auto decoded = DdSketch::decode(std::span<const std::uint8_t>(data, size));
    if (!decoded) return 0;
    DdSketch& s = *decoded;
    auto again = DdSketch::decode(s.encode());
    if (!again || !(*again == s)) std::abort();
    for (double q : {0.0, 0.5, 0.99, 1.0}) {
        auto v = s.quantile(q);
        if (v.has_value() != !s.empty()) std::abort();
        if (v && (*v < *s.min() || *v > *s.max())) std::abort();
    }
    auto points = s.cdf(16);
    if (points.size() > 16 || (!s.empty() && points.back().second != 1.0)) std::abort();
    if (s.count() * 2 <= DdSketch::kMaxTotalWeight) {
        const DdSketch copy = s;
        if (!s.merge(copy)) std::abort();
        if (s.count() != copy.count() * 2) std::abort();
    }
    return 0;
}
