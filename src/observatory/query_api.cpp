#include "csv_export.hpp"
#include "query_params.hpp"
#include "query_render.hpp"
#include "status_page.hpp"
#include "time_zone.hpp"

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>
#include <tokenradar/observatory/query_api.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace tokenradar::observatory {
namespace {

constexpr std::string_view kCacheControl = "public, max-age=10";
constexpr std::string_view kNoStore = "no-store";

std::int64_t floor_to(std::int64_t t, std::int64_t unit) {
    const std::int64_t q = t / unit;
    return (t % unit != 0 && t < 0 ? q - 1 : q) * unit;
}

// What the index is asked for one request at `now_us`; `skip` when the answer is known to be
// empty without asking (a gateway query filtered to sources other than gateway).
struct Plan {
    Query query;
    bool skip = false;
    std::optional<StatusPlan> status;  // /status: its two queries instead of `query`
};

Plan plan_for(const ApiRequest& req, std::int64_t now_us, int baseline_weeks) {
    Plan plan;
    if (req.endpoint == Endpoint::status) {
        plan.status = plan_status(req, now_us, baseline_weeks);
        plan.query = plan.status->window;
        return plan;
    }
    Query& q = plan.query;
    q.resolution = req.window_us >= kHourUs ? Resolution::hour : Resolution::minute;
    if (req.endpoint == Endpoint::timeseries) q.resolution = req.bucket;
    if (req.endpoint == Endpoint::heatmap || req.endpoint == Endpoint::labels) {
        q.resolution = Resolution::hour;  // local hours are made of UTC hours
    }
    const std::int64_t unit = q.resolution == Resolution::hour ? kHourUs : kMinuteUs;
    q.from_us = floor_to(now_us - req.window_us, unit);
    q.to_us = now_us + 1;  // the bucket in progress counts
    q.filter = req.filter;
    // Only the sketches an answer shows are merged.
    q.metrics = metric_bit(req.metric);
    switch (req.endpoint) {
        case Endpoint::leaderboard:
            q.by = req.by;
            q.metrics = metric_bit(Metric::ttft) | metric_bit(Metric::tpot) |
                        metric_bit(Metric::e2e) | metric_bit(Metric::e2e500);
            break;
        case Endpoint::regions:
            q.by = kRegionLabels;
            q.metrics = metric_bit(Metric::ttft) | metric_bit(Metric::e2e);
            break;
        case Endpoint::distribution:
            q.by = kModelLabels;
            q.counts = false;  // these three show sketch counts only
            break;
        case Endpoint::timeseries:
            q.by = kModelLabels;
            q.by_bucket = true;
            q.counts = false;
            break;
        case Endpoint::heatmap: {
            const bool by_model = req.heatmap_by == HeatmapBy::model;
            if (by_model) q.by = kModelLabels;
            q.by_bucket = true;
            q.counts = false;
            // One group per local slot, not per hour: render_heatmap maps the group's bucket
            // to the same slot again.
            q.bucket_key = [zone = req.zone, by_model](std::int64_t bucket_us) -> std::int64_t {
                const LocalSlot slot = local_slot(bucket_us, kHourUs, zone);
                return by_model ? slot.hour : slot.weekday * 24 + slot.hour;
            };
            break;
        }
        case Endpoint::gateway: {
            // One group per client key: the answer's totals and its `keys` rows.
            q.by = {Label::client_key};
            q.metrics =
                metric_bit(Metric::overhead) | metric_bit(Metric::ttft) | metric_bit(Metric::e2e);
            auto& sources = q.filter.allowed[cell_slot(Label::source)];
            plan.skip = !sources.empty() &&
                        std::find(sources.begin(), sources.end(), "gateway") == sources.end();
            sources = {"gateway"};
            break;
        }
        case Endpoint::labels:
        case Endpoint::status:
            break;
    }
    return plan;
}

ApiResponse error_response(const RequestError& e) {
    ApiResponse r;
    r.status = http_status(e.errc);
    r.body = openai_error_body(e.errc, e.message, e.param);
    r.cache_control = kNoStore;
    return r;
}

// The opaque part of an entity tag: `"x"` of `W/"x"`.
std::string_view opaque(std::string_view tag) {
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    return tag;
}

}  // namespace

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
    const std::string_view ours = opaque(etag);
    std::string_view rest = if_none_match;
    while (true) {
        const auto start = rest.find_first_not_of(" \t,");
        if (start == std::string_view::npos) return false;
        rest.remove_prefix(start);
        if (rest.front() == '*') return true;
        std::size_t open = rest.starts_with("W/") ? 2 : 0;
        if (rest.size() <= open || rest[open] != '"') return false;  // malformed: no match
        const auto close = rest.find('"', open + 1);
        if (close == std::string_view::npos) return false;
        if (rest.substr(open, close + 1 - open) == ours) return true;
        rest.remove_prefix(close + 1);
    }
}

struct Answer {
    std::string body;
    std::string etag;
    std::int64_t computed_us = 0;
    std::uint64_t generation = 0;  // of the index before it was read
    std::int64_t from_us = 0;      // the window's snapped start
};
using AnswerPtr = std::shared_ptr<const Answer>;

struct QueryApi::Cache {
    std::mutex mutex;
    // A pending entry is a computation in progress; others wait for it.
    std::unordered_map<std::string, std::shared_future<AnswerPtr>> entries;
};

namespace {

bool ready(const std::shared_future<AnswerPtr>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// What an answer is computed from besides the request.
struct Sources {
    const RollupIndex& index;
    const IncidentMonitor* monitor;
    const StatusJudgement& judgement;
    std::uint64_t min_samples;
};

std::string status_body(const Sources& from, const ApiRequest& req, const StatusPlan& plan,
                        std::int64_t now_us) {
    const Groups window = from.index.query(plan.window);
    const Groups baselines = from.index.query(plan.baselines);
    std::vector<Incident> incidents;
    if (from.monitor != nullptr) incidents = from.monitor->incidents();
    return render_status(req, plan, window, baselines, incidents, from.monitor != nullptr,
                         from.judgement, now_us);
}

AnswerPtr compute_answer(const Sources& from, const ApiRequest& req, const Plan& plan,
                         std::int64_t now_us, std::uint64_t version) {
    const RollupIndex& index = from.index;
    const std::uint64_t min = from.min_samples;
    auto answer = std::make_shared<Answer>();
    answer->generation = version;  // taken before reading: a racing add() re-misses
    answer->computed_us = now_us;
    answer->from_us = plan.query.from_us;
    const auto groups = [&] { return plan.skip ? Groups{} : index.query(plan.query); };
    std::string body;
    switch (req.endpoint) {
        case Endpoint::leaderboard:
            body = render_leaderboard(req, groups(), min);
            break;
        case Endpoint::heatmap:
            body = render_heatmap(req, groups(), req.zone, min);
            break;
        case Endpoint::timeseries:
            body = render_timeseries(req, groups(), min);
            break;
        case Endpoint::distribution:
            body = render_distribution(req, groups(), min);
            break;
        case Endpoint::regions:
            body = render_regions(req, groups(), min);
            break;
        case Endpoint::gateway:
            body = render_gateway(req, groups(), min);
            break;
        case Endpoint::labels:
            body = render_labels(req, index.labels(plan.query.from_us, plan.query.to_us));
            break;
        case Endpoint::status:
            body = status_body(from, req, *plan.status, now_us);
            break;
    }
    if (req.format == Format::csv) {
        // No generated_at in a CSV (it has no header for it): the tag is the table's hash,
        // so it differs from the JSON's.
        answer->body = csv_from_json(endpoint_name(req.endpoint), body);
        answer->etag = fmt::format("\"{:016x}\"", fnv1a64(answer->body));
        return answer;
    }
    answer->etag = fmt::format("\"{:016x}\"", fnv1a64(body));
    answer->body = with_generated_at(body, now_us);
    return answer;
}

}  // namespace

QueryApi::QueryApi(const RollupIndex& index, QueryApiOptions options)
    : index_(index), options_(options), cache_(std::make_unique<Cache>()) {}

QueryApi::~QueryApi() = default;

ApiResponse QueryApi::get(std::string_view target, std::string_view if_none_match,
                          std::int64_t now_us) const {
    const ParamLimits limits{.max_window = options_.max_window,
                             .minute_retention = index_.options().minute_retention};
    const auto parsed = parse_request(target, limits);
    if (!parsed) return error_response(parsed.error());
    const ApiRequest& req = *parsed;
    const Plan plan = plan_for(req, now_us, judgement_.baseline_weeks);
    const std::int64_t ttl_us =
        std::chrono::duration_cast<std::chrono::microseconds>(options_.cache_ttl).count();
    const bool status = req.endpoint == Endpoint::status;

    const auto compute = [&] {
        const Sources from{index_, monitor_, judgement_, options_.min_samples};
        return compute_answer(from, req, plan, now_us, data_version(status));
    };
    const auto fresh = [&](const Answer& a) {
        return now_us - a.computed_us < ttl_us ||
               (a.generation == data_version(status) && a.from_us == plan.query.from_us);
    };

    AnswerPtr answer;
    if (ttl_us <= 0) {
        answer = compute();
    } else {
        const std::string key = req.cache_key();
        std::shared_future<AnswerPtr> pending;
        std::promise<AnswerPtr> mine;
        {
            std::lock_guard lock(cache_->mutex);
            auto& entries = cache_->entries;
            if (const auto it = entries.find(key); it != entries.end()) {
                if (!ready(it->second)) {
                    pending = it->second;
                } else if (fresh(*it->second.get())) {
                    answer = it->second.get();
                }
            }
            if (!answer && !pending.valid()) {
                if (entries.size() >= options_.cache_entries) evict(now_us);
                entries.insert_or_assign(key, mine.get_future().share());
            }
        }
        if (pending.valid()) {
            answer = pending.get();
        } else if (!answer) {
            try {
                answer = compute();
                mine.set_value(answer);
            } catch (...) {
                {
                    // Out of the map first, so nobody finds the failure ready and throws it
                    // while holding the mutex; waiters hold their own copy of the future.
                    std::lock_guard lock(cache_->mutex);
                    cache_->entries.erase(key);
                }
                mine.set_exception(std::current_exception());
                throw;
            }
        }
    }

    ApiResponse response;
    response.etag = answer->etag;
    response.cache_control = kCacheControl;
    if (req.format == Format::csv) {
        response.content_type = kCsvContentType;
        response.filename = csv_filename(endpoint_name(req.endpoint), req.window_text);
    }
    if (!if_none_match.empty() && etag_matches(if_none_match, answer->etag)) {
        response.status = 304;
    } else {
        response.body = answer->body;
    }
    return response;
}

void QueryApi::attach_incidents(const IncidentMonitor* monitor, StatusJudgement judgement) {
    monitor_ = monitor;
    judgement_ = judgement;
}

std::uint64_t QueryApi::data_version(bool status) const {
    std::uint64_t version = index_.generation();
    // An incident opens or closes only at an evaluation: a new evaluation count is a new
    // version (a large odd multiplier keeps it from colliding with a generation step).
    if (status && monitor_ != nullptr) version += monitor_->evaluations() * 0x9E3779B97F4A7C15ULL;
    return version;
}

void QueryApi::evict(std::int64_t now_us) const {
    // Called with the cache's mutex held. Expired answers go first; if none has, the oldest.
    auto& entries = cache_->entries;
    const std::int64_t ttl_us =
        std::chrono::duration_cast<std::chrono::microseconds>(options_.cache_ttl).count();
    auto oldest = entries.end();
    for (auto it = entries.begin(); it != entries.end();) {
        if (!ready(it->second)) {
            ++it;
            continue;
        }
        const std::int64_t computed = it->second.get()->computed_us;
        if (now_us - computed >= ttl_us) {
            it = entries.erase(it);
            continue;
        }
        if (oldest == entries.end() || computed < oldest->second.get()->computed_us) oldest = it;
        ++it;
    }
    if (entries.size() >= options_.cache_entries && oldest != entries.end()) entries.erase(oldest);
}

}  // namespace tokenradar::observatory
