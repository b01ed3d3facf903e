// libFuzzer target: arbitrary bytes through SseParser, once whole and once split at points
// derived from the input; both must give the same events (and comments) and the same
// truncation verdict. An event's data is its data_lines lines joined with LF and holds no CR
// (SseWriter::data_line relies on it for one line); a comment counts no data lines.

#include <tokenradar/sse/sse_parser.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Owned {
    std::string event, data, id;
    std::optional<std::uint32_t> retry;
    bool is_comment;
    std::size_t data_lines;
    bool operator==(const Owned&) const = default;
};

struct Run {
    std::vector<Owned> events;
    bool ok = true;
    bool truncated = false;
};

Run run(std::string_view bytes, std::uint64_t split_seed) {
    using tokenradar::sse::SseEvent;
    using tokenradar::sse::SseParser;
    SseParser p(SseParser::Options{.max_buffered_bytes = 1 << 24, .expose_comments = true});
    Run r;
    auto sink = [&](const SseEvent& e) {
        if (e.is_comment ? e.data_lines != 0 : e.data_lines == 0) std::abort();
        // data is data_lines lines joined with LF, and holds no CR.
        if (!e.is_comment && (e.data.find('\r') != std::string_view::npos ||
                              static_cast<std::size_t>(std::count(e.data.begin(), e.data.end(),
                                                                  '\n')) != e.data_lines - 1)) {
            std::abort();
        }
        r.events.push_back({std::string(e.event), std::string(e.data), std::string(e.id), e.retry,
                            e.is_comment, e.data_lines});
    };
    std::uint64_t x = split_seed | 1;
    while (!bytes.empty() && r.ok) {
        std::size_t n = bytes.size();
        if (split_seed != 0) {
            x ^= x << 13;  // xorshift: deterministic split points
            x ^= x >> 7;
            x ^= x << 17;
            n = 1 + x % (split_seed % 64 + 1);
            if (n > bytes.size()) n = bytes.size();
        }
        r.ok = p.feed(bytes.substr(0, n), sink).has_value();
        bytes.remove_prefix(n);
    }
    r.truncated = p.finish();
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::uint64_t seed = 0;
    for (std::size_t i = 0; i < size && i < 8; ++i) seed = seed * 131 + data[i];
    Run whole = run(bytes, 0);
    Run chunked = run(bytes, seed == 0 ? 1 : seed);
    if (whole.ok != chunked.ok || whole.events != chunked.events ||
        whole.truncated != chunked.truncated) {
        std::abort();
    }
    return 0;
}
