#include <tokenradar/observatory/badge.hpp>

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/observatory/cell.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tokenradar::observatory {
namespace {

namespace json = boost::json;

constexpr std::string_view kPrefix = "/badge/";
constexpr std::string_view kSuffix = ".svg";
constexpr std::string_view kContentType = "image/svg+xml; charset=utf-8";
constexpr std::string_view kCacheControl = "public, max-age=60";
constexpr std::size_t kMaxSegmentBytes = 128;
constexpr std::size_t kMaxLabelChars = 64;

// Verdana's advance widths (1/2048 em) for ' ' to '~', as shields.io measures badge text.
constexpr std::array<int, 95> kVerdanaAdvance = {
    720,  809,  940,  1675, 1303, 2222, 1488, 548,  909,  909,  1303, 1675, 745,  850,  745,  1315,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 909,  909,  1675, 1675, 1675, 1114,
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 862,  919,  1423, 1145, 1739, 1532, 1637,
    1235, 1637, 1431, 1401, 1243, 1499, 1401, 2025, 1403, 1243, 1403, 909,  1315, 909,  1675, 1303,
    1303, 1229, 1276, 1067, 1276, 1220, 720,  1276, 1296, 562,  677,  1187, 562,  1992, 1296, 1243,
    1276, 1276, 874,  1067, 807,  1296, 1187, 1677, 1187, 1187, 1075, 1303, 909,  1303, 1675};
constexpr int kDigitAdvance = 1303;
constexpr double kFontPx = 11;
constexpr double kUnitsPerEm = 2048;
constexpr int kPaddingPx = 10;  // 5 px either side of each text

// shields.io's flat colours.
constexpr std::string_view kGreen = "#4c1";
constexpr std::string_view kAmber = "#dfb317";
constexpr std::string_view kRed = "#e05d44";
constexpr std::string_view kGrey = "#9f9f9f";

// How a metric reads its value, words it and colours it.
enum class Source { leaderboard, status };
struct MetricSpec {
    std::string_view name;        // in the path: ttft_p50.svg
    std::string_view caption;     // default label after the model: "TTFT p50"
    std::string_view object;      // leaderboard member ("ttft_ms"), "" for a plain member
    std::string_view field;       // "p50", "decode_tps_p50", "error_rate"
    double green = 0, amber = 0;  // thresholds: green up to `green`, amber up to `amber`
    bool higher_is_better = false;
    enum class Unit { ms, tokens_per_s, fraction, word } unit = Unit::ms;
    Source source = Source::leaderboard;
};

using Unit = MetricSpec::Unit;
constexpr std::array<MetricSpec, 7> kMetrics = {{
    {"ttft_p50", "TTFT p50", "ttft_ms", "p50", 500, 1000, false, Unit::ms, Source::leaderboard},
    {"ttft_p95", "TTFT p95", "ttft_ms", "p95", 1000, 2500, false, Unit::ms, Source::leaderboard},
    {"tpot_p50", "TPOT p50", "tpot_ms", "p50", 40, 80, false, Unit::ms, Source::leaderboard},
    {"e2e_p50", "E2E p50", "e2e_ms", "p50", 10'000, 30'000, false, Unit::ms, Source::leaderboard},
    {"tps_p50", "tok/s p50", "", "decode_tps_p50", 25, 10, true, Unit::tokens_per_s,
     Source::leaderboard},
    {"error_rate", "errors", "", "error_rate", 0.01, 0.05, false, Unit::fraction,
     Source::leaderboard},
    {"status", "status", "", "state", 0, 0, false, Unit::word, Source::status},
}};

const MetricSpec* find_metric(std::string_view name) {
    for (const MetricSpec& m : kMetrics) {
        if (m.name == name) return &m;
    }
    return nullptr;
}

std::size_t code_points(std::string_view text) {
    std::size_t n = 0;
    for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    return n;
}

// Every byte but the unreserved ones as %XX: a label value as a query parameter.
std::string percent_encoded(std::string_view text) {
    std::string out;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
            out += c;
        } else {
            fmt::format_to(std::back_inserter(out), "%{:02X}", u);
        }
    }
    return out;
}

ApiResponse svg_answer(int status, std::string svg, std::string_view cache_control) {
    ApiResponse r;
    r.status = status;
    r.body = std::move(svg);
    r.cache_control = cache_control;
    r.content_type = kContentType;
    return r;
}

// Errors are badges too: an <img> shows them where a JSON body would be a broken image.
ApiResponse error_badge(Errc errc, std::string_view message) {
    return svg_answer(
        http_status(errc),
        badge_svg("badge", errc == Errc::not_found ? "not found" : "bad request", kRed, message),
        "no-store");
}

struct BadgeRequest {
    std::string provider, model;
    const MetricSpec* metric = nullptr;
    std::string window = "24h";
    std::optional<std::string> label;
};

// The request, or the error answer.
std::variant<BadgeRequest, ApiResponse> parse_badge(std::string_view target) {
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) {
        return error_badge(Errc::bad_request,
                           "target: expected a path and a percent-encoded query");
    }
    if (!url->encoded_path().starts_with(kPrefix)) {
        return error_badge(Errc::not_found, "expected /badge/{provider}/{model}/{metric}.svg");
    }
    std::vector<std::string> segments;
    for (auto s : url->segments()) segments.emplace_back(s);  // percent-decoded
    if (segments.size() != 4 || !segments[3].ends_with(kSuffix)) {
        return error_badge(Errc::not_found, "expected /badge/{provider}/{model}/{metric}.svg");
    }
    BadgeRequest req;
    for (std::size_t i = 1; i < 3; ++i) {
        const std::string_view what = i == 1 ? "provider" : "model";
        if (segments[i].size() > kMaxSegmentBytes) {
            return error_badge(Errc::bad_request, fmt::format("{}: expected at most {} bytes", what,
                                                              kMaxSegmentBytes));
        }
        if (auto ok = check_label_value(what, segments[i]); !ok || segments[i].empty()) {
            return error_badge(
                Errc::bad_request,
                ok ? fmt::format("{}: expected a label value", what) : ok.error().message);
        }
    }
    req.provider = segments[1];
    req.model = segments[2];
    const std::string_view metric =
        std::string_view(segments[3]).substr(0, segments[3].size() - kSuffix.size());
    req.metric = find_metric(metric);
    if (req.metric == nullptr) {
        return error_badge(Errc::not_found,
                           fmt::format("metric: expected ttft_p50, ttft_p95, tpot_p50, e2e_p50, "
                                       "tps_p50, error_rate or status, got '{}'",
                                       metric.substr(0, kMaxSegmentBytes)));
    }
    for (const auto& p : url->params()) {
        if (p.key == "window") {
            req.window = p.value;
        } else if (p.key == "label") {
            if (code_points(p.value) > kMaxLabelChars || !check_label_value("label", p.value)) {
                return error_badge(
                    Errc::bad_request,
                    fmt::format("label: expected at most {} characters of text", kMaxLabelChars));
            }
            req.label = p.value;
        } else {
            return error_badge(Errc::bad_request,
                               fmt::format("{}: not a badge parameter; expected window or label",
                                           p.key.substr(0, kMaxSegmentBytes)));
        }
    }
    return req;
}

std::string value_text(const MetricSpec& m, double v) {
    switch (m.unit) {
        case MetricSpec::Unit::ms:
            if (v < 1000) return fmt::format("{:.0f} ms", v);
            return v < 10'000 ? fmt::format("{:.2f} s", v / 1000)
                              : fmt::format("{:.1f} s", v / 1000);
        case MetricSpec::Unit::tokens_per_s:
            return fmt::format("{:.0f} tok/s", v);
        case MetricSpec::Unit::fraction:
            return fmt::format("{:.1f}%", v * 100);
        case MetricSpec::Unit::word:
            break;
    }
    return fmt::format("{}", v);
}

std::string_view colour_of(const MetricSpec& m, double v) {
    if (m.higher_is_better) return v >= m.green ? kGreen : v >= m.amber ? kAmber : kRed;
    return v <= m.green ? kGreen : v <= m.amber ? kAmber : kRed;
}

using Reading = std::pair<std::string, std::string_view>;  // text, colour

Reading not_applicable() { return {"n/a", kGrey}; }

// The value and colour the read API's answer gives; "n/a" grey when it has none.
Reading reading(const MetricSpec& m, const json::object& doc) {
    if (m.source == Source::status) {
        const auto& models = doc.at("models").as_array();
        if (models.empty()) return not_applicable();
        const std::string state(models[0].as_object().at("state").as_string());
        if (state == "green") return {state, kGreen};
        if (state == "amber") return {state, kAmber};
        if (state == "red") return {state, kRed};
        return not_applicable();
    }
    const auto& rows = doc.at("rows").as_array();
    if (rows.empty()) return not_applicable();
    const json::object& row = rows[0].as_object();
    const json::value& v =
        m.object.empty() ? row.at(m.field) : row.at(m.object).as_object().at(m.field);
    if (!v.is_number()) return not_applicable();  // null: insufficient samples
    const double x = v.to_number<double>();
    return {value_text(m, x), colour_of(m, x)};
}

}  // namespace

struct BadgeApi::Cache {
    struct Entry {
        std::uint64_t stamp = 0;
        std::string svg;
        std::string etag;
    };
    std::mutex mutex;
    std::unordered_map<std::string, Entry> entries;
    std::deque<std::string> order;  // insertion order, for evicting the oldest
};

BadgeApi::BadgeApi(const QueryApi& queries, BadgeOptions options)
    : queries_(queries), options_(options), cache_(std::make_unique<Cache>()) {}

BadgeApi::~BadgeApi() = default;

std::uint64_t BadgeApi::stamp(std::int64_t now_us) const {
    // The data (incident evaluations included: status badges) and the minute: windows slide
    // with the clock, so an answer is kept for its minute at most.
    return queries_.data_version(true) * 1'000'003ULL +
           static_cast<std::uint64_t>(now_us / kMinuteUs);
}

namespace {

ApiResponse ok_answer(const std::string& svg, const std::string& etag,
                      std::string_view if_none_match) {
    ApiResponse r = svg_answer(200, {}, kCacheControl);
    r.etag = etag;
    if (!if_none_match.empty() && etag_matches(if_none_match, etag)) {
        r.status = 304;
    } else {
        r.body = svg;
    }
    return r;
}

}  // namespace

std::optional<ApiResponse> BadgeApi::cached(std::string_view target, std::string_view if_none_match,
                                            std::int64_t now_us) const {
    if (options_.cache_entries == 0) return std::nullopt;
    const std::uint64_t now_stamp = stamp(now_us);
    std::lock_guard lock(cache_->mutex);
    const auto it = cache_->entries.find(std::string(target));
    if (it == cache_->entries.end() || it->second.stamp != now_stamp) return std::nullopt;
    return ok_answer(it->second.svg, it->second.etag, if_none_match);
}

ApiResponse BadgeApi::get(std::string_view target, std::string_view if_none_match,
                          std::int64_t now_us) const {
    if (auto hit = cached(target, if_none_match, now_us)) return std::move(*hit);
    const std::uint64_t now_stamp = stamp(now_us);  // before reading
    auto parsed = parse_badge(target);
    if (auto* error = std::get_if<ApiResponse>(&parsed)) return std::move(*error);
    const BadgeRequest& req = std::get<BadgeRequest>(parsed);
    const MetricSpec& m = *req.metric;

    const std::string query = fmt::format(
        "/api/v1/{}?window={}&provider={}&model={}",
        m.source == Source::status ? "status" : "leaderboard", percent_encoded(req.window),
        percent_encoded(req.provider), percent_encoded(req.model));
    const ApiResponse answer = queries_.get(query, "", now_us);
    if (answer.status != 200) {
        // The read API's message (a bad window) names the parameter.
        const auto doc = json::parse(answer.body).as_object();
        return error_badge(answer.status == 404 ? Errc::not_found : Errc::bad_request,
                           doc.at("error").as_object().at("message").as_string());
    }
    const auto [value, colour] = reading(m, json::parse(answer.body).as_object());
    const std::string label = req.label ? *req.label : fmt::format("{} {}", req.model, m.caption);
    std::string svg = badge_svg(label, value, colour);
    std::string etag = fmt::format("\"b{:016x}\"", fnv1a64(svg));

    ApiResponse r = ok_answer(svg, etag, if_none_match);
    if (options_.cache_entries == 0) return r;
    std::lock_guard lock(cache_->mutex);
    auto [it, inserted] = cache_->entries.try_emplace(std::string(target));
    it->second = Cache::Entry{now_stamp, std::move(svg), std::move(etag)};
    if (inserted) {
        cache_->order.emplace_back(target);
        if (cache_->order.size() > options_.cache_entries) {
            cache_->entries.erase(cache_->order.front());
            cache_->order.pop_front();
        }
    }
    return r;
}

double verdana11_width(std::string_view text) {
    int units = 0;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u <= 0x7E) {
            units += kVerdanaAdvance[u - 0x20];
        } else if ((u & 0xC0) != 0x80) {  // a code point's first byte
            units += kDigitAdvance;
        }
    }
    return units * kFontPx / kUnitsPerEm;
}

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string badge_svg(std::string_view label, std::string_view value, std::string_view color,
                      std::string_view title) {
    // shields.io's flat badge: text drawn at 10x in a scale(.1) group, so positions and
    // textLength keep a tenth of a pixel.
    const auto label_text = static_cast<int>(std::lround(verdana11_width(label) * 10));
    const auto value_text = static_cast<int>(std::lround(verdana11_width(value) * 10));
    const int label_w = (label_text + 5) / 10 + kPaddingPx;
    const int value_w = (value_text + 5) / 10 + kPaddingPx;
    const int width = label_w + value_w;
    const std::string l = xml_escape(label);
    const std::string v = xml_escape(value);
    const std::string t = title.empty() ? fmt::format("{}: {}", l, v) : xml_escape(title);
    return fmt::format(
        R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" aria-label="{t}">)svg"
        R"svg(<title>{t}</title><linearGradient id="s" x2="0" y2="100%">)svg"
        R"svg(<stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/>)svg"
        R"svg(</linearGradient><clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath>)svg"
        R"svg(<g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/>)svg"
        R"svg(<rect x="{lw}" width="{vw}" height="20" fill="{c}"/><rect width="{w}" height="20" fill="url(#s)"/></g>)svg"
        R"svg(<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" )svg"
        R"svg(text-rendering="geometricPrecision" font-size="110">)svg"
        R"svg(<text aria-hidden="true" x="{lx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{lt}">{l}</text>)svg"
        R"svg(<text x="{lx}" y="140" transform="scale(.1)" fill="#fff" textLength="{lt}">{l}</text>)svg"
        R"svg(<text aria-hidden="true" x="{vx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)" textLength="{vt}">{v}</text>)svg"
        R"svg(<text x="{vx}" y="140" transform="scale(.1)" fill="#fff" textLength="{vt}">{v}</text></g></svg>)svg",
        fmt::arg("w", width), fmt::arg("t", t), fmt::arg("lw", label_w), fmt::arg("vw", value_w),
        fmt::arg("c", color), fmt::arg("lx", label_w * 5), fmt::arg("lt", label_text),
        fmt::arg("l", l), fmt::arg("vx", label_w * 10 + value_w * 5), fmt::arg("vt", value_text),
        fmt::arg("v", v));
}

}  // namespace tokenradar::observatory
