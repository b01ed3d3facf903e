#include "query_render.hpp"

#include "json_out.hpp"
#include "time_zone.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

namespace tokenradar::observatory {
namespace {

constexpr std::array<double, 3> kRowQuantiles = {0.5, 0.95, 0.99};

std::uint64_t count_of(const stats::DdSketch& s) {
    return static_cast<std::uint64_t>(std::llround(s.count()));
}

bool enough(const stats::DdSketch& s, std::uint64_t min_samples) {
    return !s.empty() && count_of(s) >= min_samples;
}

void rounded_or_null(JsonOut& out, std::optional<double> v) {
    if (v) {
        out.number(round_significant(*v));
    } else {
        out.null();
    }
}

// {"p50":..,"p95":..,"p99":..,"samples":n,"insufficient":b}; numbers are null when the
// sketch is under min_samples or `hide` (the whole row is insufficient).
void write_quantiles(JsonOut& out, const stats::DdSketch& s, std::uint64_t min_samples, bool hide) {
    const bool show = !hide && enough(s, min_samples);
    out.begin_object();
    for (double q : kRowQuantiles) {
        out.key(quantile_key(q));
        rounded_or_null(out, show ? s.quantile(q) : std::nullopt);
    }
    out.key("samples").unsigned_integer(count_of(s));
    out.key("insufficient").boolean(!show);
    out.end_object();
}

void write_labels(JsonOut& out, const std::vector<Label>& by, const GroupKey& key) {
    for (std::size_t i = 0; i < by.size() && i < key.labels.size(); ++i) {
        out.key(label_name(by[i])).string(key.labels[i]);
    }
}

// A leaderboard or regions row, ready to sort: sufficient rows by TTFT p50 ascending, rows
// whose TTFT is under min_samples next, insufficient rows last.
struct Row {
    const GroupKey* key;
    const Aggregate* aggregate;
    bool insufficient;
    std::optional<double> ttft_p50;

    [[nodiscard]] auto rank() const {
        return std::make_tuple(insufficient, !ttft_p50.has_value(), ttft_p50.value_or(0.0));
    }
};

std::vector<Row> rows_of(const Groups& groups, std::uint64_t min_samples) {
    std::vector<Row> rows;
    rows.reserve(groups.size());
    for (const auto& [key, aggregate] : groups) {
        Row row{&key, &aggregate, aggregate.samples < min_samples, std::nullopt};
        if (!row.insufficient && enough(aggregate.sketch(Metric::ttft), min_samples)) {
            row.ttft_p50 = aggregate.sketch(Metric::ttft).quantile(0.5);
        }
        rows.push_back(row);
    }
    return rows;
}

void write_counts(JsonOut& out, const Row& row) {
    const Aggregate& a = *row.aggregate;
    out.key("samples").unsigned_integer(a.samples);
    out.key("errors").unsigned_integer(a.errors());
    out.key("error_rate");
    if (row.insufficient || a.samples == 0) {
        out.null();
    } else {
        out.number(
            round_significant(static_cast<double>(a.errors()) / static_cast<double>(a.samples)));
    }
    out.key("insufficient").boolean(row.insufficient);
}

// Rows, models or series the answer may hold (query_params.hpp, answer_limit).
std::size_t limit_of(const ApiRequest& req) {
    return req.limit != 0 ? req.limit : answer_limit(req.endpoint).fallback;
}

// Keeps the first `limit` rows; whether some were left out.
bool cut(std::vector<Row>& rows, std::size_t limit) {
    if (rows.size() <= limit) return false;
    rows.resize(limit);
    return true;
}

// The gateway answer's `keys`: per client key (the group's one label), most requests first,
// at most kMaxGatewayKeys of them, then `keys_truncated`.
constexpr std::size_t kMaxGatewayKeys = 500;

void write_gateway_keys(JsonOut& out, const Groups& groups, std::uint64_t min_samples) {
    std::vector<const Groups::value_type*> rows;
    rows.reserve(groups.size());
    for (const auto& group : groups) rows.push_back(&group);
    std::stable_sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) {
        return a->second.first_attempts > b->second.first_attempts;
    });
    out.key("keys").begin_array();
    for (std::size_t i = 0; i < rows.size() && i < kMaxGatewayKeys; ++i) {
        const auto& [key, a] = *rows[i];
        out.begin_object();
        out.key("client_key").string(key.labels.empty() ? std::string() : key.labels[0]);
        out.key("requests").unsigned_integer(a.first_attempts);
        out.key("attempts").unsigned_integer(a.samples);
        out.key("errors").unsigned_integer(a.errors());
        out.key("prompt_tokens").unsigned_integer(a.prompt_tokens);
        out.key("output_tokens").unsigned_integer(a.output_tokens);
        out.key("ttft_ms");
        write_quantiles(out, a.sketch(Metric::ttft), min_samples, false);
        out.key("e2e_ms");
        write_quantiles(out, a.sketch(Metric::e2e), min_samples, false);
        out.end_object();
    }
    out.end_array();
    out.key("keys_truncated").boolean(rows.size() > kMaxGatewayKeys);
}

void write_head(JsonOut& out, const ApiRequest& req, std::uint64_t min_samples) {
    out.begin_object();
    out.key("window").string(req.window_text);
    out.key("min_samples").unsigned_integer(min_samples);
}

}  // namespace

double round_significant(double value, int digits) {
    if (value == 0 || !std::isfinite(value)) return value;
    const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
    const int decimals = digits - 1 - magnitude;
    // Powers of ten up to 1e22 are exact doubles, so dividing by one gives the double nearest
    // the decimal (which prints as that decimal); multiply for the digits left of the point.
    if (decimals > 22 || decimals < -22) return value;
    if (decimals >= 0) {
        const double scale = std::pow(10.0, decimals);
        return std::round(value * scale) / scale;
    }
    const double scale = std::pow(10.0, -decimals);
    return std::round(value / scale) * scale;
}

std::string render_leaderboard(const ApiRequest& req, const Groups& groups,
                               std::uint64_t min_samples) {
    auto rows = rows_of(groups, min_samples);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.rank() < b.rank(); });
    const bool truncated = cut(rows, limit_of(req));
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("rows").begin_array();
    for (const Row& row : rows) {
        const Aggregate& a = *row.aggregate;
        out.begin_object();
        write_labels(out, req.by, *row.key);
        write_counts(out, row);
        out.key("ttft_ms");
        write_quantiles(out, a.sketch(Metric::ttft), min_samples, row.insufficient);
        out.key("tpot_ms");
        write_quantiles(out, a.sketch(Metric::tpot), min_samples, row.insufficient);
        out.key("decode_tps_p50");
        std::optional<double> tps;
        if (!row.insufficient && enough(a.sketch(Metric::tpot), min_samples)) {
            const auto tpot = a.sketch(Metric::tpot).quantile(0.5);
            if (tpot && *tpot > 0) tps = 1000.0 / *tpot;
        }
        rounded_or_null(out, tps);
        out.key("e2e_ms");
        write_quantiles(out, a.sketch(Metric::e2e), min_samples, row.insufficient);
        out.key("e2e500_ms");
        write_quantiles(out, a.sketch(Metric::e2e500), min_samples, row.insufficient);
        out.end_object();
    }
    out.end_array();
    out.key("truncated").boolean(truncated);
    out.end_object();
    return out.take();
}

std::string render_regions(const ApiRequest& req, const Groups& groups, std::uint64_t min_samples) {
    auto rows = rows_of(groups, min_samples);
    // Grouped by (client_region, upstream_region), fastest first inside each.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        const auto& ka = a.key->labels;
        const auto& kb = b.key->labels;
        const auto ra = std::tie(ka[0], ka[1]);
        const auto rb = std::tie(kb[0], kb[1]);
        if (ra != rb) return ra < rb;
        return a.rank() < b.rank();
    });
    const bool truncated = cut(rows, limit_of(req));
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("rows").begin_array();
    for (const Row& row : rows) {
        out.begin_object();
        write_labels(out, kRegionLabels, *row.key);
        write_counts(out, row);
        out.key("ttft_ms");
        write_quantiles(out, row.aggregate->sketch(Metric::ttft), min_samples, row.insufficient);
        out.key("e2e_ms");
        write_quantiles(out, row.aggregate->sketch(Metric::e2e), min_samples, row.insufficient);
        out.end_object();
    }
    out.end_array();
    out.key("truncated").boolean(truncated);
    out.end_object();
    return out.take();
}

std::string render_timeseries(const ApiRequest& req, const Groups& groups,
                              std::uint64_t min_samples) {
    // Series in order while they fit in `limit` and kMaxTimeseriesPoints; the first that
    // does not ends the answer (a series is never cut in the middle).
    std::size_t series = 0;
    std::size_t points = 0;
    std::size_t shown_points = 0;  // the points of the series that fit
    bool truncated = false;
    for (auto it = groups.begin(); it != groups.end();) {
        const auto& labels = it->first.labels;
        std::size_t n = 0;
        for (; it != groups.end() && it->first.labels == labels; ++it) ++n;
        if (series == limit_of(req) || points + n > kMaxTimeseriesPoints) {
            truncated = true;
            break;
        }
        ++series;
        points += n;
        shown_points = points;
    }
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("metric").string(metric_name(req.metric));
    out.key("bucket").string(req.bucket == Resolution::minute ? "minute" : "hour");
    out.key("quantiles").begin_array();
    for (double q : req.quantiles) out.string(quantile_key(q));
    out.end_array();
    out.key("series").begin_array();
    const std::vector<std::string>* current = nullptr;
    std::size_t written = 0;
    for (const auto& [key, aggregate] : groups) {
        if (written++ == shown_points) break;
        // Groups are ordered by labels, then bucket: one series is a run of equal labels.
        if (current == nullptr || *current != key.labels) {
            if (current != nullptr) out.end_array().end_object();
            current = &key.labels;
            out.begin_object();
            write_labels(out, kModelLabels, key);
            out.key("points").begin_array();
        }
        const auto& sketch = aggregate.sketch(req.metric);
        const bool show = enough(sketch, min_samples);
        out.begin_object();
        out.key("t").string(rfc3339_utc(key.bucket_us));
        out.key("samples").unsigned_integer(count_of(sketch));
        out.key("insufficient").boolean(!show);
        for (double q : req.quantiles) {
            out.key(quantile_key(q));
            rounded_or_null(out, show ? sketch.quantile(q) : std::nullopt);
        }
        out.end_object();
    }
    if (current != nullptr) out.end_array().end_object();
    out.end_array();
    out.key("truncated").boolean(truncated);
    out.end_object();
    return out.take();
}

std::string render_distribution(const ApiRequest& req, const Groups& groups,
                                std::uint64_t min_samples) {
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("metric").string(metric_name(req.metric));
    out.key("series").begin_array();
    // Each series holds up to `points`: at most kMaxCdfPoints in all.
    const std::size_t max_series =
        std::min(limit_of(req), kMaxCdfPoints / std::max<std::size_t>(req.points, 1));
    std::size_t series = 0;
    for (const auto& [key, aggregate] : groups) {
        if (series++ == max_series) break;
        const auto& sketch = aggregate.sketch(req.metric);
        const bool show = enough(sketch, min_samples);
        out.begin_object();
        write_labels(out, kModelLabels, key);
        out.key("samples").unsigned_integer(count_of(sketch));
        out.key("insufficient").boolean(!show);
        out.key("cdf").begin_array();
        if (show) {
            for (const auto& [value, fraction] : sketch.cdf(req.points)) {
                out.begin_array()
                    .number(round_significant(value))
                    .number(round_significant(fraction))
                    .end_array();
            }
        }
        out.end_array();
        out.end_object();
    }
    out.end_array();
    out.key("truncated").boolean(groups.size() > max_series);
    out.end_object();
    return out.take();
}

std::string render_gateway(const ApiRequest& req, const Groups& groups, std::uint64_t min_samples) {
    Aggregate total;
    for (const auto& [key, aggregate] : groups) {
        total.merge(aggregate, 1.0, metric_bit(Metric::overhead));
    }
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("requests").unsigned_integer(total.first_attempts);
    out.key("attempts").unsigned_integer(total.samples);
    out.key("errors").unsigned_integer(total.errors());
    out.key("cache").begin_object();
    for (std::size_t i = 0; i < kCacheNames.size(); ++i) {
        out.key(kCacheNames[i]).unsigned_integer(total.cache[i]);
    }
    out.end_object();
    out.key("route").begin_object();
    for (std::size_t i = 0; i < kRouteNames.size(); ++i) {
        out.key(kRouteNames[i]).unsigned_integer(total.route[i]);
    }
    out.end_object();
    out.key("status").begin_object();
    for (const auto& [status, n] : total.statuses) out.key(status).unsigned_integer(n);
    out.end_object();
    out.key("overhead_ms");
    write_quantiles(out, total.sketch(Metric::overhead), min_samples, false);
    write_gateway_keys(out, groups, min_samples);
    out.end_object();
    return out.take();
}

std::string render_heatmap(const ApiRequest& req, const Groups& groups, const cctz::time_zone& zone,
                           std::uint64_t min_samples) {
    const bool by_model = req.heatmap_by == HeatmapBy::model;
    // (provider, model, weekday, hour): by=weekday leaves the names empty, by=model the
    // weekday 0, so the map's order is the answer's.
    using HeatKey = std::tuple<std::string, std::string, int, int>;
    std::map<HeatKey, stats::DdSketch> cells;
    std::map<std::int64_t, LocalSlot> slots;  // many groups share a bucket
    for (const auto& [key, aggregate] : groups) {
        auto slot = slots.find(key.bucket_us);
        if (slot == slots.end()) {
            slot = slots.emplace(key.bucket_us, local_slot(key.bucket_us, kHourUs, zone)).first;
        }
        HeatKey cell{by_model && !key.labels.empty() ? key.labels[0] : std::string(),
                     by_model && key.labels.size() > 1 ? key.labels[1] : std::string(),
                     by_model ? 0 : slot->second.weekday, slot->second.hour};
        // Only the chosen metric is merged: a fifth of Aggregate::merge's work. Merging
        // fails only past 2^53 samples.
        (void)cells[cell].merge(aggregate.sketch(req.metric));
    }
    // by=model: the first `limit` models (in name order), 24 cells each at most.
    bool truncated = false;
    if (by_model) {
        std::size_t models = 0;
        const HeatKey* last = nullptr;
        for (auto it = cells.begin(); it != cells.end(); ++it) {
            const auto& [provider, model, weekday, hour] = it->first;
            if (last == nullptr || std::get<0>(*last) != provider || std::get<1>(*last) != model) {
                if (models++ == limit_of(req)) {
                    cells.erase(it, cells.end());
                    truncated = true;
                    break;
                }
            }
            last = &it->first;
        }
    }
    JsonOut out;
    write_head(out, req, min_samples);
    out.key("metric").string(metric_name(req.metric));
    out.key("q").number(req.quantiles.front());
    out.key("tz").string(req.tz);
    out.key("by").string(by_model ? "model" : "weekday");
    out.key("cells").begin_array();
    for (const auto& [cell, sketch] : cells) {
        const auto& [provider, model, weekday, hour] = cell;
        const bool show = enough(sketch, min_samples);
        out.begin_object();
        out.key("hour").integer(hour);
        if (by_model) {
            out.key("provider").string(provider);
            out.key("model").string(model);
        } else {
            out.key("weekday").integer(weekday);
        }
        out.key("value");
        rounded_or_null(out, show ? sketch.quantile(req.quantiles.front()) : std::nullopt);
        out.key("samples").unsigned_integer(count_of(sketch));
        out.key("insufficient").boolean(!show);
        out.end_object();
    }
    out.end_array();
    out.key("truncated").boolean(truncated);
    out.end_object();
    return out.take();
}

std::string render_labels(const ApiRequest& req,
                          const std::array<std::vector<std::string>, kCellLabelCount>& labels) {
    JsonOut out;
    out.begin_object();
    out.key("window").string(req.window_text);
    out.key("labels").begin_object();
    bool truncated = false;
    for (std::size_t i = 0; i < kCellLabelCount; ++i) {
        out.key(label_name(kCellLabels[i])).begin_array();
        const std::size_t shown = std::min(labels[i].size(), kMaxLabelValuesShown);
        truncated = truncated || shown < labels[i].size();
        for (std::size_t v = 0; v < shown; ++v) out.string(labels[i][v]);
        out.end_array();
    }
    out.end_object();
    out.key("truncated").boolean(truncated);
    out.end_object();
    return out.take();
}

std::string with_generated_at(std::string_view body, std::int64_t now_us) {
    JsonOut stamp;
    stamp.begin_object().key("generated_at").string(rfc3339_utc(now_us));
    std::string out = stamp.take();  // {"generated_at":"..."
    if (body.size() > 2) out += ',';
    out.append(body.substr(1));
    return out;
}

}  // namespace tokenradar::observatory
