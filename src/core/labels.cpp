#include <tokenradar/core/labels.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ostream>

namespace tokenradar {
namespace {

template <std::size_t N>
std::optional<std::size_t> index_of(const std::array<std::string_view, N>& names,
                                    std::string_view text) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text) return i;
    }
    return std::nullopt;
}

Error not_one_of(std::string_view field, std::span<const std::string_view> values) {
    return Error(Errc::bad_request,
                 fmt::format("{}: expected one of {}", field, fmt::join(values, ", ")));
}

std::string_view text_of(const std::string& v) noexcept { return v; }
std::string_view text_of(bool v) noexcept { return kBoolValues[v ? 1 : 0]; }
std::string_view text_of(Route v) noexcept { return to_string(v); }
std::string_view text_of(Cache v) noexcept { return to_string(v); }

Result<void> assign(std::string& member, std::string_view text, const LabelInfo& info) {
    if (!text.empty() && !info.values.empty() &&
        std::find(info.values.begin(), info.values.end(), text) == info.values.end()) {
        return not_one_of(info.name, info.values);
    }
    member.assign(text);
    return {};
}

Result<void> assign(bool& member, std::string_view text, const LabelInfo& info) {
    if (text != "true" && text != "false") return not_one_of(info.name, info.values);
    member = text == "true";
    return {};
}

template <class E>
Result<void> assign(E& member, std::string_view text, const LabelInfo& info) {
    for (std::size_t i = 0; i < info.values.size(); ++i) {
        if (info.values[i] == text) {
            member = static_cast<E>(i);
            return {};
        }
    }
    return not_one_of(info.name, info.values);
}

}  // namespace

Result<Route> parse_route(std::string_view text) {
    if (auto i = index_of(kRouteNames, text)) return static_cast<Route>(*i);
    return not_one_of("route", kRouteNames);
}

Result<Cache> parse_cache(std::string_view text) {
    if (auto i = index_of(kCacheNames, text)) return static_cast<Cache>(*i);
    return not_one_of("cache", kCacheNames);
}

std::ostream& operator<<(std::ostream& os, Route r) { return os << to_string(r); }
std::ostream& operator<<(std::ostream& os, Cache c) { return os << to_string(c); }

std::optional<Label> parse_label(std::string_view name) noexcept {
    for (const LabelInfo& info : kLabelTable) {
        if (info.name == name) return info.label;
    }
    return std::nullopt;
}

std::string label_names() {
    std::string out;
    for (const LabelInfo& info : kLabelTable) {
        if (!out.empty()) out += ", ";
        out += info.name;
    }
    return out;
}

std::string_view label_value(const Labels& labels, Label label) noexcept {
    switch (label) {
#define TOKENRADAR_LABEL_GET(name, values, cell) \
    case Label::name:                            \
        return text_of(labels.name);
        TOKENRADAR_LABELS(TOKENRADAR_LABEL_GET)
#undef TOKENRADAR_LABEL_GET
    }
    return {};
}

Result<void> set_label(Labels& labels, Label label, std::string_view text) {
    switch (label) {
#define TOKENRADAR_LABEL_SET(name, values, cell) \
    case Label::name:                            \
        return assign(labels.name, text, label_info(label));
        TOKENRADAR_LABELS(TOKENRADAR_LABEL_SET)
#undef TOKENRADAR_LABEL_SET
    }
    return {};
}

bool is_simple_name(std::string_view s) noexcept {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
        return std::isalnum(ch) != 0 || ch == '-' || ch == '_' || ch == '.';
    });
}

// The table's rows are in enum order, so label_info() can index it.
static_assert([] {
    for (std::size_t i = 0; i < kLabelCount; ++i) {
        if (static_cast<std::size_t>(kLabelTable[i].label) != i) return false;
    }
    return true;
}());

}  // namespace tokenradar
