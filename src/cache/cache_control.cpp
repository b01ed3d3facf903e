#include <tokenradar/cache/cache_control.hpp>

#include <algorithm>
#include <cctype>

namespace tokenradar::cache {
namespace {

constexpr std::int64_t kMaxDeltaSeconds = 2147483647;  // RFC 9111 section 1.2.2

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == y;
           });
}

// delta-seconds: 1*DIGIT, a larger value than 2^31 - 1 taken as 2^31 - 1.
std::optional<std::int64_t> delta_seconds(std::string_view text) {
    if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
        text = text.substr(1, text.size() - 2);  // quoted-string form, which senders may use
    }
    if (text.empty()) return std::nullopt;
    std::int64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = std::min(kMaxDeltaSeconds, value * 10 + (c - '0'));
    }
    return value;
}

}  // namespace

CacheControl parse_cache_control(std::string_view value) {
    CacheControl cc;
    while (!value.empty()) {
        const auto comma = value.find(',');
        const std::string_view directive = trimmed(value.substr(0, comma));
        value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
        const auto eq = directive.find('=');
        const std::string_view name = trimmed(directive.substr(0, eq));
        if (same_name(name, "no-store")) {
            cc.no_store = true;
        } else if (same_name(name, "no-cache")) {
            cc.no_cache = true;
        } else if (same_name(name, "only-if-cached")) {
            cc.only_if_cached = true;
        } else if (same_name(name, "max-age") && eq != std::string_view::npos) {
            if (auto seconds = delta_seconds(trimmed(directive.substr(eq + 1)))) {
                // Two max-ages: the stricter one (a cache that honours either is not wrong).
                cc.max_age_s = cc.max_age_s ? std::min(*cc.max_age_s, *seconds) : *seconds;
            }
        }
    }
    return cc;
}

}  // namespace tokenradar::cache
