#pragma once
// The line-end search shared by SseParser and SseWriter (private to the sse component).

#include <cstddef>
#include <cstring>

namespace tokenradar::sse::detail {

// First CR or LF in [p, end), or end. Two memchr passes beat a byte loop (and libstdc++'s
// find_first_of, which calls memchr on the set once per input byte) by a wide margin
// because CR is rare: the second pass only scans up to the LF found by the first.
// A line that is empty (every event ends with one) is answered without a memchr call.
inline const char* find_eol(const char* p, const char* end) noexcept {
    if (p != end && (*p == '\n' || *p == '\r')) return p;
    const auto* lf =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    const char* limit = lf ? lf : end;
    const auto* cr =
        static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(limit - p)));
    return cr ? cr : limit;
}

}  // namespace tokenradar::sse::detail
