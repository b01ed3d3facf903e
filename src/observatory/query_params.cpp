#include "query_params.hpp"

#include "time_zone.hpp"

#include <tokenradar/core/duration.hpp>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>

namespace tokenradar::observatory {
namespace {

constexpr std::string_view kPrefix = "/api/v1/";
constexpr std::array<std::string_view, 8> kEndpointNames = {"leaderboard",  "heatmap", "timeseries",
                                                            "distribution", "regions", "gateway",
                                                            "labels",       "status"};
constexpr std::array<std::string_view, kMetricCount> kMetricNames = {"ttft", "tpot", "e2e",
                                                                     "e2e500", "overhead"};
constexpr std::size_t kParamMetrics = 4;    // overhead is not a `metric` value
constexpr std::size_t kMaxShownBytes = 64;  // of a bad value quoted in a message
constexpr std::size_t kMaxValuesPerLabel = 64;
constexpr std::size_t kMaxQuantiles = 8;
constexpr std::size_t kMinPoints = 2;

// The parameters each endpoint reads besides window and the label filters.
std::vector<std::string_view> extra_params(Endpoint e) {
    switch (e) {
        case Endpoint::leaderboard:
            return {"by", "limit"};
        case Endpoint::heatmap:
            return {"metric", "q", "tz", "by", "limit"};
        case Endpoint::timeseries:
            return {"metric", "q", "bucket", "limit"};
        case Endpoint::distribution:
            return {"metric", "points", "limit"};
        case Endpoint::regions:
        case Endpoint::status:
            return {"limit"};
        case Endpoint::gateway:
        case Endpoint::labels:
            break;
    }
    return {};
}

// The label filters an endpoint takes: all of them, none (labels), or provider and model
// (status: its strips are per model, all regions merged).
std::vector<Label> filter_labels(Endpoint e) {
    if (e == Endpoint::labels) return {};
    if (e == Endpoint::status) return kModelLabels;
    return {kCellLabels.begin(), kCellLabels.end()};
}

std::string shown(std::string_view value) {
    if (value.size() <= kMaxShownBytes) return std::string(value);
    return fmt::format("{}...", value.substr(0, kMaxShownBytes));
}

RequestError bad(std::string_view param, std::string message) {
    return {Errc::bad_request, std::string(param.substr(0, kMaxShownBytes)), std::move(message)};
}

RequestError expected(std::string_view param, std::string_view what, std::string_view got) {
    return bad(param, fmt::format("{}: expected {}, got '{}'", param, what, shown(got)));
}

// As the dashboard's window choices read: whole days from 2d up ("7d"), whole hours below
// ("24h", not format_duration's "1d"), else format_duration ("90m", "1.5m").
std::string window_text(std::chrono::nanoseconds window) {
    const auto hours = std::chrono::duration_cast<std::chrono::hours>(window);
    if (hours == window && hours.count() > 0) {
        if (hours.count() % 24 == 0 && hours.count() >= 48)
            return fmt::format("{}d", hours.count() / 24);
        return fmt::format("{}h", hours.count());
    }
    return format_duration(window);
}

std::optional<double> parse_double(std::string_view text) {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) {
        return std::nullopt;
    }
    return v;
}

// Splits "a,b,c" (no empty items: "a,,b" and "" give an empty item that fails its check).
std::vector<std::string_view> split_commas(std::string_view text) {
    std::vector<std::string_view> out;
    while (true) {
        const auto comma = text.find(',');
        out.push_back(text.substr(0, comma));
        if (comma == std::string_view::npos) return out;
        text.remove_prefix(comma + 1);
    }
}

std::string joined(const std::vector<std::string_view>& names) {
    return fmt::format("{}", fmt::join(names, ", "));
}

std::string label_list() {
    std::vector<std::string_view> names;
    names.reserve(kCellLabels.size());
    for (Label l : kCellLabels) names.push_back(label_name(l));
    return joined(names);
}

// Orders labels as kCellLabels does (a plain std::set<Label> would use the label table's).
struct CellOrder {
    bool operator()(Label a, Label b) const noexcept { return cell_slot(a) < cell_slot(b); }
};

// Label order, then a length prefix for every value: no two filters share a key.
void append_filter_key(std::string& key, const Filter& filter) {
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        if (filter.allowed[i].empty()) continue;
        fmt::format_to(std::back_inserter(key), "&{}=", label_name(kCellLabels[i]));
        for (const auto& v : filter.allowed[i])
            fmt::format_to(std::back_inserter(key), "{}:{},", v.size(), v);
    }
}

class Parser {
  public:
    Parser(Endpoint endpoint, const ParamLimits& limits) : limits_(limits) {
        request_.endpoint = endpoint;
        allowed_ = extra_params(endpoint);
        allowed_.insert(allowed_.begin(), "window");
        allowed_.push_back("format");
        for (Label l : filter_labels(endpoint)) allowed_.push_back(label_name(l));
    }

    std::optional<RequestError> take(std::string_view name, std::string_view value) {
        if (name.empty()) return bad("", "a parameter without a name: expected name=value");
        if (std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end()) {
            return bad(name,
                       fmt::format("{}: not a parameter of {}{}; expected one of {}", shown(name),
                                   kPrefix, endpoint_name(request_.endpoint), joined(allowed_)));
        }
        if (const auto label = parse_cell_label(name)) return take_label(*label, name, value);
        if (!seen_.insert(std::string(name)).second) {
            return bad(name, fmt::format("{}: given more than once; expected one value", name));
        }
        if (name == "window") return take_window(value);
        if (name == "metric") return take_metric(value);
        if (name == "q") return take_quantiles(value);
        if (name == "tz") return take_tz(value);
        if (name == "by") return take_by(value);
        if (name == "bucket") return take_bucket(value);
        if (name == "points") return take_points(value);
        if (name == "limit") return take_limit(value);
        if (name == "format") return take_format(value);
        throw std::logic_error("query_params: allowed parameter without a parser");
    }

    boost::system::result<ApiRequest, RequestError> finish() {
        if (request_.limit == 0) request_.limit = answer_limit(request_.endpoint).fallback;
        if (request_.endpoint == Endpoint::leaderboard) {
            by_.insert(Label::provider);
            by_.insert(Label::model);
            request_.by.assign(by_.begin(), by_.end());
        }
        if (request_.endpoint == Endpoint::timeseries) {
            const std::int64_t retention_us =
                std::chrono::duration_cast<std::chrono::microseconds>(limits_.minute_retention)
                    .count();
            if (!bucket_) {
                request_.bucket =
                    request_.window_us <= retention_us ? Resolution::minute : Resolution::hour;
            } else if (*bucket_ == Resolution::minute && request_.window_us > retention_us) {
                return bad(
                    "bucket",
                    fmt::format("bucket: minute buckets are kept for the last {}, so "
                                "window {} needs bucket=hour (or a window up to {})",
                                format_duration(limits_.minute_retention), request_.window_text,
                                format_duration(limits_.minute_retention)));
            } else {
                request_.bucket = *bucket_;
            }
        }
        for (std::size_t i = 0; i < kCellLabelCount; ++i) {
            for (const auto& v : values_[i]) request_.filter.allow(kCellLabels[i], v);
        }
        // Both stream values select everything, as no stream filter does (one cache key).
        auto& stream = request_.filter.allowed[cell_slot(Label::stream)];
        if (stream.size() == 2) stream.clear();
        return std::move(request_);
    }

  private:
    std::optional<RequestError> take_label(Label label, std::string_view name,
                                           std::string_view value) {
        if (label == Label::stream) {
            if (value != "true" && value != "false") return expected(name, "true or false", value);
        } else if (auto ok = check_label_value(name, value); !ok) {
            return bad(name, ok.error().message);
        }
        auto& values = values_[cell_slot(label)];
        values.insert(std::string(value));
        if (values.size() > kMaxValuesPerLabel) {
            return bad(name,
                       fmt::format("{}: expected at most {} values", name, kMaxValuesPerLabel));
        }
        return std::nullopt;
    }

    std::optional<RequestError> take_window(std::string_view value) {
        if (request_.endpoint == Endpoint::status) return take_status_window(value);
        const auto what = fmt::format("a duration from 1m to {} such as 15m, 1h, 24h or 7d",
                                      format_duration(limits_.max_window));
        const auto parsed = parse_duration(value);
        if (!parsed) return expected("window", what, value);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(*parsed).count();
        if (us < kMinuteUs ||
            *parsed > std::chrono::duration_cast<std::chrono::nanoseconds>(limits_.max_window)) {
            return expected("window", what, value);
        }
        request_.window_us = us;
        request_.window_text = window_text(*parsed);
        return std::nullopt;
    }

    // The status page's strips: a day or a week of hours, nothing else.
    std::optional<RequestError> take_status_window(std::string_view value) {
        if (value == "24h") {
            request_.window_us = kStatusDayUs;
        } else if (value == "7d") {
            request_.window_us = kStatusWeekUs;
        } else {
            return expected("window", "24h or 7d", value);
        }
        request_.window_text = std::string(value);
        return std::nullopt;
    }

    std::optional<RequestError> take_format(std::string_view value) {
        if (value == "json") {
            request_.format = Format::json;
        } else if (value == "csv") {
            request_.format = Format::csv;
        } else {
            return expected("format", "json or csv", value);
        }
        return std::nullopt;
    }

    std::optional<RequestError> take_metric(std::string_view value) {
        for (std::size_t i = 0; i < kParamMetrics; ++i) {
            if (kMetricNames[i] == value) {
                request_.metric = static_cast<Metric>(i);
                return std::nullopt;
            }
        }
        return expected("metric", "ttft, tpot, e2e or e2e500", value);
    }

    std::optional<RequestError> take_quantiles(std::string_view value) {
        const bool list = request_.endpoint == Endpoint::timeseries;
        const auto what = list ? fmt::format(
                                     "up to {} quantiles in (0, 1) separated by commas, "
                                     "such as 0.5,0.95",
                                     kMaxQuantiles)
                               : std::string("a quantile in (0, 1) such as 0.5 or 0.99");
        const auto items = split_commas(value);
        if (items.size() > (list ? kMaxQuantiles : 1)) return expected("q", what, value);
        std::vector<double> qs;
        for (auto item : items) {
            const auto q = parse_double(item);
            if (!q || !(*q > 0 && *q < 1)) return expected("q", what, value);
            qs.push_back(*q);
        }
        std::sort(qs.begin(), qs.end());
        // 0.5 and 0.50 are one key in the answer: keep one of them.
        qs.erase(std::unique(qs.begin(), qs.end(),
                             [](double a, double b) { return quantile_key(a) == quantile_key(b); }),
                 qs.end());
        request_.quantiles = std::move(qs);
        return std::nullopt;
    }

    std::optional<RequestError> take_tz(std::string_view value) {
        auto zone = load_zone(value);
        if (!zone) return bad("tz", zone.error().message);
        request_.tz = std::string(value);
        request_.zone = *zone;
        return std::nullopt;
    }

    std::optional<RequestError> take_by(std::string_view value) {
        if (request_.endpoint == Endpoint::heatmap) {
            if (value == "weekday") {
                request_.heatmap_by = HeatmapBy::weekday;
            } else if (value == "model") {
                request_.heatmap_by = HeatmapBy::model;
            } else {
                return expected("by", "weekday or model", value);
            }
            return std::nullopt;
        }
        for (auto item : split_commas(value)) {
            const auto label = parse_cell_label(item);
            if (!label) return expected("by", "a comma list of labels from " + label_list(), value);
            by_.insert(*label);
        }
        return std::nullopt;
    }

    std::optional<RequestError> take_bucket(std::string_view value) {
        if (value == "minute") {
            bucket_ = Resolution::minute;
        } else if (value == "hour") {
            bucket_ = Resolution::hour;
        } else {
            return expected("bucket", "minute or hour", value);
        }
        return std::nullopt;
    }

    std::optional<RequestError> take_points(std::string_view value) {
        std::size_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc{} || end != value.data() + value.size() || n < kMinPoints ||
            n > limits_.max_points) {
            return expected("points",
                            fmt::format("an integer from {} to {}", kMinPoints, limits_.max_points),
                            value);
        }
        request_.points = n;
        return std::nullopt;
    }

    std::optional<RequestError> take_limit(std::string_view value) {
        const std::size_t max = answer_limit(request_.endpoint).max;
        std::size_t n = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc{} || end != value.data() + value.size() || n < 1 || n > max) {
            return expected("limit", fmt::format("an integer from 1 to {}", max), value);
        }
        request_.limit = n;
        return std::nullopt;
    }

    const ParamLimits& limits_;
    ApiRequest request_;
    std::vector<std::string_view> allowed_;
    std::set<std::string, std::less<>> seen_;
    std::array<std::set<std::string>, kCellLabelCount> values_;  // sorted, distinct
    std::set<Label, CellOrder> by_;                              // cell order
    std::optional<Resolution> bucket_;
};

}  // namespace

std::string_view endpoint_name(Endpoint e) noexcept {
    return kEndpointNames[static_cast<std::size_t>(e)];
}

std::string_view metric_name(Metric m) noexcept {
    return kMetricNames[static_cast<std::size_t>(m)];
}

AnswerLimit answer_limit(Endpoint e) noexcept {
    // Worst cases with 128-byte label values: a leaderboard row with every label ~1.5 KB, a
    // regions row ~1 KB, a heatmap model 24 cells of ~0.4 KB; series are also held to
    // kMaxTimeseriesPoints / kMaxCdfPoints. Typical answers are a fraction of that.
    switch (e) {
        case Endpoint::leaderboard:
        case Endpoint::regions:
        case Endpoint::status:  // models, 24 or 168 buckets each
            return {500, 500};
        case Endpoint::heatmap:
            return {100, 100};
        case Endpoint::timeseries:
        case Endpoint::distribution:
            return {20, 100};
        case Endpoint::gateway:
        case Endpoint::labels:
            break;
    }
    return {0, 0};
}

std::string quantile_key(double q) { return fmt::format("p{:.6g}", q * 100); }

std::string ApiRequest::cache_key() const {
    std::string key = fmt::format("{}?window={}", endpoint_name(endpoint), window_us);
    append_filter_key(key, filter);
    fmt::format_to(std::back_inserter(key), "&metric={}&q={}&tz={}&by=", metric_name(metric),
                   fmt::join(quantiles, ","), tz);
    for (Label l : by) fmt::format_to(std::back_inserter(key), "{},", label_name(l));
    fmt::format_to(std::back_inserter(key), "&heatmap_by={}&bucket={}&points={}&limit={}&format={}",
                   heatmap_by == HeatmapBy::model ? "model" : "weekday",
                   bucket == Resolution::minute ? "minute" : "hour", points, limit,
                   format == Format::csv ? "csv" : "json");
    return key;
}

ParsedRequest parse_request(std::string_view target, const ParamLimits& limits) {
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) {
        return RequestError{Errc::bad_request,
                            {},
                            fmt::format("target: expected a path and a percent-encoded query, "
                                        "got a malformed target ({})",
                                        url.error().message())};
    }
    const std::string_view path = url->encoded_path();
    std::optional<Endpoint> endpoint;
    if (path.starts_with(kPrefix)) {
        const auto name = path.substr(kPrefix.size());
        for (std::size_t i = 0; i < kEndpointNames.size(); ++i) {
            if (kEndpointNames[i] == name) endpoint = static_cast<Endpoint>(i);
        }
    }
    if (!endpoint) {
        return RequestError{Errc::not_found,
                            {},
                            fmt::format("{}: not found; the query API serves {}{{{}}}", shown(path),
                                        kPrefix, fmt::join(kEndpointNames, ","))};
    }
    Parser parser(*endpoint, limits);
    for (const auto& param : url->params()) {
        // "a=1&&b=2" and a trailing "&" hold empty items; browsers never send them.
        if (param.key.empty() && !param.has_value) continue;
        if (auto error = parser.take(param.key, param.value)) return std::move(*error);
    }
    return parser.finish();
}

void throw_exception_from_error(const RequestError& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

}  // namespace tokenradar::observatory
