#pragma once
// A request's `Cache-Control` in RFC 9111's meaning (section 5.2.1), as the response cache
// reads it: `no-store` (neither read nor write), `no-cache` (do not answer from the cache,
// store the fresh answer), `max-age=N` (accept an entry at most N seconds old),
// `only-if-cached` (answer from the cache or 504). Directive names are case-insensitive;
// unknown directives and a max-age that is not delta-seconds are ignored (section 4.2.1:
// a cache ignores what it does not understand).

#include <cstdint>
#include <optional>
#include <string_view>

namespace tokenradar::cache {

struct CacheControl {
    bool no_store = false;
    bool no_cache = false;
    bool only_if_cached = false;
    std::optional<std::int64_t> max_age_s;  // clamped to 2^31 - 1 (section 1.2.2)
};

// Every `Cache-Control` field value of the request, joined by commas as HTTP allows.
CacheControl parse_cache_control(std::string_view value);

}  // namespace tokenradar::cache
