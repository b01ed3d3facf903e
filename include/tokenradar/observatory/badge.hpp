#pragma once
// SVG badges for READMEs and status pages: GET /badge/{provider}/{model}/{metric}.svg
// (docs/observatory-api.md "Badges"), a shields.io-style flat badge whose value comes from the
// read API (the leaderboard row of that provider/model, or its /status state), so a badge
// always shows what the dashboard shows.
//
//     BadgeApi badges(queries);
//     ApiResponse r = badges.get("/badge/openai/gpt-4o/ttft_p50.svg?window=7d", inm, now_us);
//
// Cheap when fetched repeatedly: answers are kept per target (at most `cache_entries`, the
// oldest dropped first) while the data behind them (QueryApi::data_version) and the minute
// are unchanged, so a repeated fetch is a map lookup; `Cache-Control: public, max-age=60`,
// ETag and If-None-Match -> 304.
//
// Threads: get() and cached() from any number of threads (one mutex, held only to look up
// and store). get() blocks while the query behind a new answer runs; nothing suspends.

#include <tokenradar/observatory/query_api.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::observatory {

struct BadgeOptions {
    std::size_t cache_entries = 1024;  // 0 disables the cache
};

class BadgeApi {
  public:
    explicit BadgeApi(const QueryApi& queries, BadgeOptions options = {});
    ~BadgeApi();
    BadgeApi(const BadgeApi&) = delete;
    BadgeApi& operator=(const BadgeApi&) = delete;

    // The answer for a target under /badge/: 200 with an SVG, 304, or an error (400 bad
    // parameter or path segment, 404 unknown metric or path) as a small SVG badge whose title
    // holds the message, `Cache-Control: no-store`.
    [[nodiscard]] ApiResponse get(std::string_view target, std::string_view if_none_match,
                                  std::int64_t now_us) const;
    // get()'s answer when it is in the cache and still fresh; nullopt otherwise (then call
    // get(), off the I/O thread). Never computes.
    [[nodiscard]] std::optional<ApiResponse> cached(std::string_view target,
                                                    std::string_view if_none_match,
                                                    std::int64_t now_us) const;

  private:
    struct Cache;
    [[nodiscard]] std::uint64_t stamp(std::int64_t now_us) const;

    const QueryApi& queries_;
    BadgeOptions options_;
    std::unique_ptr<Cache> cache_;
};

// The pieces, for tests and benchmarks.
// Width in pixels of `text` in Verdana 11px, from a per-character table as shields.io does
// (characters outside printable ASCII count as a digit's width).
double verdana11_width(std::string_view text);
// A flat two-part badge: `label` on grey, `value` on `color` ("#4c1"); both XML-escaped.
std::string badge_svg(std::string_view label, std::string_view value, std::string_view color,
                      std::string_view title = {});
// &, <, >, " and ' as XML entities.
std::string xml_escape(std::string_view text);

}  // namespace tokenradar::observatory
