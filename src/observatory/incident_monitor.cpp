#include <tokenradar/observatory/incident_monitor.hpp>

#include "csv_export.hpp"
#include "json_out.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/error.hpp>
#include <tokenradar/net/url.hpp>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

namespace tokenradar::observatory {
namespace {

constexpr std::int64_t kWeekUs = 7 * kDayUs;
constexpr std::int64_t kBaselineRefreshUs = 10 * kMinuteUs;
constexpr std::size_t kDefaultLimit = 100;

std::uint64_t weight_count(const stats::DdSketch& s) {
    return static_cast<std::uint64_t>(std::llround(s.count()));
}

// One query grouped by the detector's cell: provider, model, upstream region.
Groups by_cell(const RollupIndex& index, std::int64_t from_us, std::int64_t to_us,
               Resolution resolution) {
    Query q;
    q.from_us = from_us;
    q.to_us = to_us;
    q.resolution = resolution;
    q.by = {Label::provider, Label::model, Label::upstream_region};
    q.metrics = metric_bit(Metric::ttft) | metric_bit(Metric::tpot);
    return index.query(q);
}

CellRef ref_of(const GroupKey& key) { return CellRef{key.labels[0], key.labels[1], key.labels[2]}; }

void write_time(JsonOut& out, std::string_view name, std::int64_t us) {
    out.key(name);
    if (us < 0) {
        out.null();
    } else {
        out.string(rfc3339_utc(us));
    }
}

void write_incident(JsonOut& out, const Incident& i, std::int64_t now_us) {
    const std::int64_t end = i.end_us < 0 ? now_us : i.end_us;
    out.begin_object();
    out.key("id").unsigned_integer(i.id);
    out.key("state").string(i.end_us < 0 ? "open" : "closed");
    out.key("provider").string(i.provider);
    out.key("model").string(i.model);
    write_time(out, "start", i.start_us);
    write_time(out, "detected", i.detected_us);
    write_time(out, "end", i.end_us);
    out.key("duration_s").integer((end - i.start_us) / 1'000'000);
    out.key("size").begin_object();
    out.key("metric");
    if (i.worst_ratio > 0) {
        out.string(kWatchedNames[static_cast<std::size_t>(i.worst_stat)]);
    } else {
        out.null();
    }
    out.key("ratio").number(std::round(i.worst_ratio * 100) / 100);
    out.key("error_rate").number(std::round(i.worst_error_rate * 10000) / 10000);
    out.end_object();
    out.key("cells").begin_array();
    for (const AffectedCell& c : i.cells) {
        out.begin_object();
        out.key("provider").string(i.provider);
        out.key("model").string(i.model);
        out.key("upstream_region").string(c.region);
        write_time(out, "since", c.since_us);
        out.key("breaches").begin_array();
        for (const Breach& b : c.breaches) {
            out.begin_object();
            out.key("metric").string(kWatchedNames[static_cast<std::size_t>(b.stat)]);
            out.key("recent").number(std::round(b.recent * 1000) / 1000);
            out.key("baseline").number(std::round(b.baseline * 1000) / 1000);
            out.key("ratio").number(std::round(b.ratio * 100) / 100);
            out.end_object();
        }
        out.end_array();
        out.end_object();
    }
    out.end_array();
    out.end_object();
}

// Never cached: incidents open and close between two polls.
ApiResponse uncached(int status, std::string body) {
    ApiResponse r;
    r.status = status;
    r.body = std::move(body);
    r.cache_control = "no-store";
    return r;
}

ApiResponse bad_request(std::string_view message, std::string_view param) {
    return uncached(400, openai_error_body(Errc::bad_request, message, param));
}

}  // namespace

IncidentConfig load_incident_config(const std::optional<ConfigTable>& table) {
    IncidentConfig c;
    if (!table) return c;
    const ConfigTable& t = *table;
    t.reject_unknown_keys({"enabled", "every", "window", "baseline_weeks", "ratio", "ratio_p95",
                           "mad_k", "min_samples", "min_baseline_samples", "error_ratio",
                           "error_jump", "min_errors", "open_after", "close_after", "webhooks",
                           "webhook_queue", "webhook_attempts"});
    c.enabled = t.get_bool("enabled", true);
    const auto seconds = [&](std::string_view key, std::chrono::seconds fallback,
                             std::chrono::seconds min) {
        const auto value =
            std::chrono::duration_cast<std::chrono::seconds>(t.get_duration(key, fallback));
        if (value < min) t.fail(key, fmt::format("at least {}s", min.count()));
        return value;
    };
    c.every = seconds("every", c.every, std::chrono::seconds(1));
    c.window = seconds("window", c.window, std::chrono::seconds(60));
    c.baseline_weeks = static_cast<int>(t.get_integer("baseline_weeks", c.baseline_weeks, 1, 52));
    DetectorOptions& d = c.detector;
    d.ratio = t.get_number("ratio", d.ratio, 1.01, 100);
    d.ratio_p95 = t.get_number("ratio_p95", d.ratio_p95, 1.01, 100);
    d.mad_k = t.get_number("mad_k", d.mad_k, 0, 100);
    d.min_samples = static_cast<std::uint64_t>(
        t.get_integer("min_samples", static_cast<std::int64_t>(d.min_samples), 1, 1'000'000));
    d.min_baseline_samples = static_cast<std::uint64_t>(t.get_integer(
        "min_baseline_samples", static_cast<std::int64_t>(d.min_baseline_samples), 1, 100'000'000));
    d.error_ratio = t.get_number("error_ratio", d.error_ratio, 1, 1000);
    d.error_jump = t.get_number("error_jump", d.error_jump, 0, 1);
    d.min_errors = static_cast<std::uint64_t>(
        t.get_integer("min_errors", static_cast<std::int64_t>(d.min_errors), 1, 1'000'000));
    d.open_after_us = seconds("open_after", std::chrono::seconds(d.open_after_us / 1'000'000),
                              std::chrono::seconds(0))
                          .count() *
                      1'000'000;
    d.close_after_us = seconds("close_after", std::chrono::seconds(d.close_after_us / 1'000'000),
                               std::chrono::seconds(0))
                           .count() *
                       1'000'000;
    c.webhooks = t.get_strings("webhooks");
    for (const std::string& url : c.webhooks) {
        if (!net::parse_url(url)) t.fail("webhooks", "http(s) URLs (\"https://host/path\")");
    }
    c.webhook_queue = static_cast<std::size_t>(
        t.get_integer("webhook_queue", static_cast<std::int64_t>(c.webhook_queue), 1, 100'000));
    c.webhook_attempts =
        static_cast<int>(t.get_integer("webhook_attempts", c.webhook_attempts, 1, 20));
    return c;
}

CellStats cell_stats(const Aggregate& a) {
    CellStats s;
    s.samples = a.samples;
    s.errors = a.errors();
    const stats::DdSketch& ttft = a.sketch(Metric::ttft);
    const stats::DdSketch& tpot = a.sketch(Metric::tpot);
    s.ttft_samples = weight_count(ttft);
    s.tpot_samples = weight_count(tpot);
    s.values[0] = ttft.quantile(0.5).value_or(0);
    s.values[1] = ttft.quantile(0.95).value_or(0);
    s.values[2] = tpot.quantile(0.5).value_or(0);
    s.values[3] = tpot.quantile(0.95).value_or(0);
    return s;
}

std::string event_json(const IncidentEvent& event) {
    JsonOut out;
    out.begin_object();
    out.key("event").string(event.kind == IncidentEvent::Kind::opened ? "opened" : "closed");
    out.key("incident");
    const std::int64_t at = event.kind == IncidentEvent::Kind::opened ? event.incident.detected_us
                                                                      : event.incident.end_us;
    write_incident(out, event.incident, at);
    out.end_object();
    return out.take();
}

IncidentMonitor::IncidentMonitor(const RollupIndex& index, IncidentConfig config)
    : index_(index), config_(std::move(config)), detector_(config_.detector) {}

void IncidentMonitor::read_baselines(std::int64_t now_us) {
    const std::int64_t hour = now_us / kHourUs;
    std::map<CellRef, std::vector<CellStats>> weeks;
    for (int w = 1; w <= config_.baseline_weeks; ++w) {
        const std::int64_t from = hour * kHourUs - w * kWeekUs;
        for (const auto& [key, aggregate] :
             by_cell(index_, from, from + kHourUs, Resolution::hour)) {
            weeks[ref_of(key)].push_back(cell_stats(aggregate));
        }
    }
    detector_.clear_baselines();
    for (const auto& [ref, stats] : weeks) detector_.set_baseline(ref, stats);
    baselines_hour_ = hour;
    baselines_read_us_ = now_us;
}

std::vector<IncidentEvent> IncidentMonitor::evaluate(std::int64_t now_us) {
    const std::lock_guard lock(mutex_);
    if (now_us < last_evaluation_us_) now_us = last_evaluation_us_;  // the wall clock stepped back
    if (now_us / kHourUs != baselines_hour_ || now_us - baselines_read_us_ >= kBaselineRefreshUs) {
        read_baselines(now_us);
    }
    const std::int64_t window_us = config_.window.count() * 1'000'000;
    const Groups recent = by_cell(index_, now_us - window_us, now_us + 1, Resolution::minute);
    std::vector<std::pair<CellRef, CellStats>> cells;
    cells.reserve(recent.size());
    for (const auto& [key, aggregate] : recent)
        cells.emplace_back(ref_of(key), cell_stats(aggregate));
    ++evaluations_;
    last_evaluation_us_ = now_us;
    return detector_.evaluate(now_us, cells);
}

ApiResponse IncidentMonitor::answer(std::string_view target, std::int64_t now_us) const {
    bool open_only = false;
    bool csv = false;
    std::size_t limit = kDefaultLimit;
    const auto url = boost::urls::parse_origin_form(target);
    if (!url) return bad_request("incidents: expected a path and a percent-encoded query", "");
    for (const auto& p : url->params()) {
        if (p.key == "state") {
            if (p.value != "open" && p.value != "all") {
                return bad_request("state: expected open or all", "state");
            }
            open_only = p.value == "open";
        } else if (p.key == "limit") {
            std::size_t n = 0;
            const char* end = p.value.data() + p.value.size();
            const auto parsed = std::from_chars(p.value.data(), end, n);
            if (parsed.ec != std::errc() || parsed.ptr != end || n < 1 || n > 1000) {
                return bad_request("limit: expected an integer from 1 to 1000", "limit");
            }
            limit = n;
        } else if (p.key == "format") {
            if (p.value != "json" && p.value != "csv") {
                return bad_request(
                    fmt::format("format: expected json or csv, got '{}'", p.value.substr(0, 64)),
                    "format");
            }
            csv = p.value == "csv";
        } else {
            return bad_request(
                fmt::format("{}: unknown parameter (expected state, limit, format)", p.key), p.key);
        }
    }
    std::vector<Incident> incidents;
    std::uint64_t evaluations = 0;
    std::int64_t last = -1;
    {
        const std::lock_guard lock(mutex_);
        incidents = detector_.incidents();
        evaluations = evaluations_;
        last = last_evaluation_us_;
    }
    JsonOut out;
    out.begin_object();
    out.key("generated_at").string(rfc3339_utc(now_us));
    write_time(out, "evaluated_at", last);
    out.key("evaluations").unsigned_integer(evaluations);
    out.key("open").unsigned_integer(static_cast<std::uint64_t>(std::count_if(
        incidents.begin(), incidents.end(), [](const Incident& i) { return i.end_us < 0; })));
    out.key("incidents").begin_array();
    std::size_t written = 0;
    for (const Incident& i : incidents) {
        if (written == limit || (open_only && i.end_us >= 0)) break;
        write_incident(out, i, now_us);
        ++written;
    }
    out.end_array();
    out.end_object();
    if (!csv) return uncached(200, out.take());
    ApiResponse r = uncached(200, csv_from_json("incidents", out.text()));
    r.content_type = kCsvContentType;
    r.filename = csv_filename("incidents", "");
    return r;
}

std::vector<Incident> IncidentMonitor::incidents() const {
    const std::lock_guard lock(mutex_);
    return detector_.incidents();
}

std::size_t IncidentMonitor::open_count() const {
    const std::lock_guard lock(mutex_);
    return detector_.open_count();
}

std::uint64_t IncidentMonitor::evaluations() const {
    const std::lock_guard lock(mutex_);
    return evaluations_;
}

}  // namespace tokenradar::observatory
