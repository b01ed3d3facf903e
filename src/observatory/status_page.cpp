#include "status_page.hpp"

#include "json_out.hpp"
#include "query_render.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace tokenradar::observatory {
namespace {

constexpr std::int64_t kWeekUs = 7 * kDayUs;
constexpr int kRatioDigits = 3;

using ModelKey = std::pair<std::string, std::string>;

enum class State { none, green, amber, red };

std::string_view state_name(State s) {
    switch (s) {
        case State::green:
            return "green";
        case State::amber:
            return "amber";
        case State::red:
            return "red";
        case State::none:
            break;
    }
    return "none";
}

// What the two queries say about one model, per bucket of the window.
struct ModelStrip {
    std::vector<const Aggregate*> recent;       // nullptr: no record in that hour
    std::vector<std::vector<CellStats>> weeks;  // the bucket's baseline weeks
    std::vector<const Incident*> incidents;     // overlapping the window
};

bool allowed(const Filter& filter, Label label, const std::string& value) {
    const auto& values = filter.allowed[cell_slot(label)];
    return values.empty() || std::find(values.begin(), values.end(), value) != values.end();
}

bool overlaps(const Incident& i, std::int64_t from_us, std::int64_t to_us, std::int64_t now_us) {
    const std::int64_t end = i.end_us < 0 ? now_us : i.end_us;
    return i.start_us < to_us && end >= from_us;
}

void number_or_null(JsonOut& out, std::optional<double> v, int digits = 4) {
    if (v) {
        out.number(round_significant(*v, digits));
    } else {
        out.null();
    }
}

}  // namespace

StatusPlan plan_status(const ApiRequest& req, std::int64_t now_us, int baseline_weeks) {
    StatusPlan plan;
    plan.buckets = static_cast<std::size_t>(req.window_us / kHourUs);
    const std::int64_t current = now_us / kHourUs * kHourUs;
    const std::int64_t first = current - static_cast<std::int64_t>(plan.buckets - 1) * kHourUs;
    plan.first_bucket_us = first;

    Query& w = plan.window;
    w.from_us = first;
    w.to_us = now_us + 1;  // the hour in progress counts
    w.resolution = Resolution::hour;
    w.filter = req.filter;
    w.by = kModelLabels;
    w.by_bucket = true;
    w.metrics = metric_bit(Metric::ttft) | metric_bit(Metric::tpot);

    // One query from the first bucket's oldest week to the last bucket's latest: for a day's
    // window only the same 24 hours of each week are read, the rest is skipped unread.
    Query& b = plan.baselines;
    b = w;
    b.from_us = first - baseline_weeks * kWeekUs;
    b.to_us = current + kHourUs - kWeekUs;
    b.bucket_key = [first, current, baseline_weeks](std::int64_t bucket_us) -> std::int64_t {
        for (int week = 1; week <= baseline_weeks; ++week) {
            const std::int64_t target = bucket_us + week * kWeekUs;
            if (target >= first && target <= current) return bucket_us;
        }
        return kSkipBucket;
    };
    return plan;
}

std::string render_status(const ApiRequest& req, const StatusPlan& plan, const Groups& window,
                          const Groups& baselines, std::span<const Incident> incidents,
                          bool incidents_enabled, const StatusJudgement& judgement,
                          std::int64_t now_us) {
    const std::size_t n = plan.buckets;
    const std::int64_t first = plan.first_bucket_us;
    const std::int64_t end = first + static_cast<std::int64_t>(n) * kHourUs;
    std::map<ModelKey, ModelStrip> strips;
    const auto strip_of = [&](const std::string& provider, const std::string& model) -> auto& {
        auto [it, inserted] = strips.try_emplace(ModelKey{provider, model});
        if (inserted) {
            it->second.recent.assign(n, nullptr);
            it->second.weeks.resize(n);
        }
        return it->second;
    };
    const auto index_of = [&](std::int64_t bucket_us) {
        return static_cast<std::size_t>((bucket_us - first) / kHourUs);
    };

    for (const auto& [key, aggregate] : window) {
        if (key.bucket_us < first || key.bucket_us >= end) continue;
        strip_of(key.labels[0], key.labels[1]).recent[index_of(key.bucket_us)] = &aggregate;
    }
    for (const auto& [key, aggregate] : baselines) {
        const CellStats stats = cell_stats(aggregate);
        auto& strip = strip_of(key.labels[0], key.labels[1]);
        for (int week = 1; week <= judgement.baseline_weeks; ++week) {
            const std::int64_t target = key.bucket_us + week * kWeekUs;
            if (target >= first && target < end) strip.weeks[index_of(target)].push_back(stats);
        }
    }
    for (const Incident& incident : incidents) {
        if (!allowed(req.filter, Label::provider, incident.provider) ||
            !allowed(req.filter, Label::model, incident.model) ||
            !overlaps(incident, first, end, now_us)) {
            continue;
        }
        strip_of(incident.provider, incident.model).incidents.push_back(&incident);
    }
    // A model known only from its baselines has nothing to show in this window.
    std::erase_if(strips, [](const auto& entry) {
        const ModelStrip& s = entry.second;
        return s.incidents.empty() && std::all_of(s.recent.begin(), s.recent.end(),
                                                  [](const Aggregate* a) { return a == nullptr; });
    });

    const DetectorOptions& o = judgement.detector;
    JsonOut out;
    out.begin_object();
    out.key("window").string(req.window_text);
    out.key("bucket").string("hour");
    out.key("incidents_enabled").boolean(incidents_enabled);
    out.key("models").begin_array();
    std::size_t shown = 0;
    std::vector<Breach> breaches;
    for (const auto& [model, strip] : strips) {
        if (shown++ == req.limit) break;
        JsonOut buckets;  // written first: the model's state is its buckets' last
        buckets.begin_array();
        State latest = State::none;
        std::optional<std::uint64_t> open;
        for (const Incident* i : strip.incidents) {
            if (i->end_us < 0) open = i->id;
        }
        for (std::size_t b = 0; b < n; ++b) {
            const std::int64_t t = first + static_cast<std::int64_t>(b) * kHourUs;
            const CellStats recent = strip.recent[b] ? cell_stats(*strip.recent[b]) : CellStats{};
            std::optional<Baseline> baseline;
            if (!strip.weeks[b].empty()) baseline = baseline_of(strip.weeks[b], o);
            std::vector<std::uint64_t> ids;
            for (const Incident* i : strip.incidents) {
                if (overlaps(*i, t, t + kHourUs, now_us)) ids.push_back(i->id);
            }
            std::sort(ids.begin(), ids.end());
            State state = State::none;
            if (!ids.empty()) {
                state = State::red;
            } else if (recent.samples >= o.min_samples) {
                judge(recent, baseline ? &*baseline : nullptr, o, breaches);
                // The strips show p50s and errors; the p95s stay the incidents' business.
                const bool breached = std::any_of(breaches.begin(), breaches.end(), [](auto& x) {
                    return x.stat == Watched::ttft_p50 || x.stat == Watched::tpot_p50 ||
                           x.stat == Watched::error_rate;
                });
                state = breached ? State::amber : State::green;
            }
            if (state != State::none) latest = state;

            std::optional<double> ttft;
            if (recent.ttft_samples >= o.min_samples) ttft = recent.values[0];
            std::optional<double> base;
            if (baseline && baseline->median[0] > 0) base = baseline->median[0];
            std::optional<double> ratio;
            if (ttft && base) ratio = *ttft / *base;

            buckets.begin_object();
            buckets.key("t").string(rfc3339_utc(t));
            buckets.key("state").string(state_name(state));
            buckets.key("samples").unsigned_integer(recent.samples);
            buckets.key("errors").unsigned_integer(recent.errors);
            buckets.key("ttft_p50_ms");
            number_or_null(buckets, ttft);
            buckets.key("baseline_ttft_p50_ms");
            number_or_null(buckets, base);
            buckets.key("ratio");
            number_or_null(buckets, ratio, kRatioDigits);
            buckets.key("incidents").begin_array();
            for (std::uint64_t id : ids) buckets.unsigned_integer(id);
            buckets.end_array();
            buckets.end_object();
        }
        buckets.end_array();
        if (open) latest = State::red;

        out.begin_object();
        out.key("provider").string(model.first);
        out.key("model").string(model.second);
        out.key("state").string(state_name(latest));
        out.key("open_incident");
        if (open) {
            out.unsigned_integer(*open);
        } else {
            out.null();
        }
        out.key("buckets");
        out.raw(buckets.text());
        out.end_object();
    }
    out.end_array();
    out.key("truncated").boolean(strips.size() > req.limit);
    out.end_object();
    return out.take();
}

}  // namespace tokenradar::observatory
