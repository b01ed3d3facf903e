#include "routing.hpp"

#include <tokenradar/core/ids.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tokenradar::gateway {
namespace {

namespace json = boost::json;

bool upstream_failed(RequestStatus status) {
    if (status.kind() != RequestStatus::http_error) return true;
    const int code = status.http_code();
    return code == 429 || code >= 500;  // other 4xx: the request's fault, not the upstream's
}

}  // namespace

AttemptLease::AttemptLease(route::UpstreamEstimate& estimate, std::int64_t prompt_tokens,
                           std::int64_t now_ns)
    : estimate_(&estimate), prompt_tokens_(prompt_tokens), started_ns_(now_ns) {
    estimate_->started(now_ns);
}

AttemptLease::~AttemptLease() {
    if (!ended_) estimate_->abandoned();
}

void AttemptLease::first_token(std::int64_t now_ns, std::int64_t ttft_ns) {
    if (first_token_seen_) return;
    first_token_seen_ = true;
    estimate_->first_token(now_ns, ttft_ns, prompt_tokens_);
}

void AttemptLease::end(const Measurement& m) {
    if (ended_) return;
    ended_ = true;
    const std::int64_t now = m.t.done.value_or(m.t.send);
    if (m.status.is_ok()) {
        // A whole answer has no first token, and its time to the head is the whole
        // generation: counting it as TTFT swung the estimates 0.3-15 s with the answers'
        // lengths. It is a success (the breaker closes), not a latency sample.
        if (!first_token_seen_) estimate_->answered(now);
        // metrics.md TPOT, without derive()'s other figures (this runs for every attempt).
        double tpot_ns = 0;
        const std::int64_t n = m.output_tokens.value_or(0);
        if (m.t.first_token && m.t.last_token && n > 1) {
            tpot_ns = static_cast<double>(*m.t.last_token - *m.t.first_token) /
                      static_cast<double>(n - 1);
        }
        estimate_->finished(now, m.prompt_tokens.value_or(0) + n, tpot_ns);
    } else if (m.status.kind() == RequestStatus::cancelled || first_token_seen_ ||
               !upstream_failed(m.status)) {
        // Cancelled (a hedge's loser, a client that left), a client error, or a stream that
        // broke after its first token (already observed): no verdict on the upstream's speed.
        estimate_->abandoned();
    } else {
        estimate_->failed(now, now - started_ns_);
    }
}

Routing::Routing(const GatewayConfig& config) : config_(config) {
    for (const VirtualModel& vm : config.models) {
        auto model = std::make_unique<Model>();
        std::vector<std::shared_ptr<route::UpstreamEstimate>> members;
        const std::size_t n = vm.upstreams.size() + (vm.offload ? 1 : 0);
        for (std::size_t i = 0; i < n; ++i) {
            const UpstreamRef& ref = member(vm, i);
            const std::size_t u = upstream_index(ref.provider, ref.model);
            model->upstream_of_member.push_back(u);
            members.push_back(upstreams_[u].estimate);
        }
        // The same seed on every node: only P2C's draws use it.
        model->router =
            std::make_unique<route::Router>(vm.routing, std::move(members), fnv1a64(vm.name));
        model->picks.resize(n);
        models_.push_back(std::move(model));
    }
}

std::size_t Routing::upstream_index(std::size_t provider, const std::string& model) {
    for (std::size_t i = 0; i < upstreams_.size(); ++i) {
        if (upstreams_[i].provider == provider && upstreams_[i].model == model) return i;
    }
    upstreams_.push_back({provider, model,
                          std::make_shared<route::UpstreamEstimate>(
                              route::EstimatePolicy{}, config_.providers[provider].limits)});
    return upstreams_.size() - 1;
}

const UpstreamRef& Routing::member(const VirtualModel& model, std::size_t i) {
    return i < model.upstreams.size() ? model.upstreams[i] : *model.offload;
}

route::Router& Routing::router(const VirtualModel& model) const {
    return *models_[static_cast<std::size_t>(&model - config_.models.data())]->router;
}

void Routing::picked(const VirtualModel& model, std::size_t member, std::int64_t now_ns) {
    Model& m = *models_[static_cast<std::size_t>(&model - config_.models.data())];
    const std::lock_guard lock(m.mutex);
    m.picks[member].add(now_ns, 1);
}

std::vector<double> Routing::shares(const Model& m, std::int64_t now_ns) const {
    std::vector<double> out(m.picks.size(), 0.0);
    double total = 0;
    const std::lock_guard lock(m.mutex);
    for (std::size_t member = 0; member < out.size(); ++member) {
        out[member] = static_cast<double>(m.picks[member].sum(now_ns));
        total += out[member];
    }
    for (double& s : out) s = total > 0 ? s / total : 0.0;
    return out;
}

std::string Routing::upstreams_json(std::int64_t now_ns) const {
    const auto round = [](double v, double unit) { return std::round(v / unit) * unit; };
    json::array upstreams;
    for (const Upstream& u : upstreams_) {
        const route::UpstreamSnapshot s = u.estimate->snapshot(now_ns);
        const ProviderConfig& p = config_.providers[u.provider];
        upstreams.push_back(json::object{
            {"provider", p.name},
            {"model", u.model},
            {"region", p.region},
            {"measured", s.measured},
            {"ttft_ms", round(s.ttft_ms, 0.01)},
            {"ttft_p95_ms", round(s.ttft_p95_ms, 0.01)},
            {"tpot_ms", round(s.tpot_ms, 0.001)},
            {"in_flight", s.in_flight},
            {"error_rate", round(s.error_rate, 0.0001)},
            {"breaker", route::to_string(s.breaker)},
            {"attempts", s.attempts},
            {"failures", s.failures},
            {"breaker_opens", s.breaker_opens},
            {"tokens_last_minute", s.tokens_last_minute},
            {"hedges",
             json::object{{"sent", s.hedges_sent}, {"won", s.hedges_won}, {"lost", s.hedges_lost}}},
        });
    }
    json::array models;
    for (std::size_t mi = 0; mi < models_.size(); ++mi) {
        const VirtualModel& vm = config_.models[mi];
        const Model& m = *models_[mi];
        const std::vector<double> share = shares(m, now_ns);
        json::array members;
        for (std::size_t i = 0; i < share.size(); ++i) {
            const Upstream& u = upstreams_[m.upstream_of_member[i]];
            members.push_back(json::object{{"provider", config_.providers[u.provider].name},
                                           {"model", u.model},
                                           {"local", m.router->is_local(i)},
                                           {"share", round(share[i], 0.0001)}});
        }
        const route::RoutingPolicy& policy = vm.routing;
        json::value hedge = "off";
        if (policy.hedge.enabled) {
            hedge = policy.hedge.delay_ns > 0
                        ? json::value(static_cast<double>(policy.hedge.delay_ns) / 1e6)
                        : json::value(fmt::format("p{:g}", policy.hedge.quantile * 100));
        }
        models.push_back(
            json::object{{"name", vm.name},
                         {"routing", route::to_string(policy.strategy)},
                         {"hedge", std::move(hedge)},
                         {"ttft_deadline_ms", static_cast<double>(policy.ttft_deadline_ns) / 1e6},
                         {"members", std::move(members)}});
    }
    return json::serialize(json::object{{"upstreams", std::move(upstreams)},
                                        {"models", std::move(models)},
                                        {"hedges_cancelled", hedges_cancelled_.load()}});
}

void Routing::render(PrometheusText& out, std::int64_t now_ns) const {
    std::vector<route::UpstreamSnapshot> snaps;
    snaps.reserve(upstreams_.size());
    for (const Upstream& u : upstreams_) snaps.push_back(u.estimate->snapshot(now_ns));
    const auto each = [&](std::string_view name, MetricType type, std::string_view help,
                          auto value) {
        out.family(name, type, help);
        for (std::size_t i = 0; i < upstreams_.size(); ++i) {
            out.sample(name,
                       {{"provider", config_.providers[upstreams_[i].provider].name},
                        {"model", upstreams_[i].model}},
                       value(snaps[i]));
        }
    };
    using Snap = route::UpstreamSnapshot;
    each("tokenradar_upstream_ttft_estimate_seconds", MetricType::gauge,
         "Peak-EWMA of each upstream's TTFT (per prompt unit) that latency routing compares",
         [](const Snap& s) { return s.ttft_ms / 1e3; });
    each("tokenradar_upstream_in_flight", MetricType::gauge, "Attempts in flight to each upstream",
         [](const Snap& s) { return s.in_flight; });
    each("tokenradar_upstream_breaker_open", MetricType::gauge,
         "1 while the upstream's circuit breaker is open or half open",
         [](const Snap& s) { return s.breaker == route::BreakerState::closed ? 0 : 1; });
    each("tokenradar_upstream_breaker_opens_total", MetricType::counter,
         "Times the upstream's circuit breaker opened",
         [](const Snap& s) { return s.breaker_opens; });
    each("tokenradar_hedges_sent_total", MetricType::counter,
         "Hedged attempts sent to each upstream", [](const Snap& s) { return s.hedges_sent; });
    each("tokenradar_hedges_won_total", MetricType::counter,
         "Hedged attempts that gave the first token", [](const Snap& s) { return s.hedges_won; });
    each("tokenradar_hedges_lost_total", MetricType::counter,
         "Hedged attempts cancelled because the other attempt gave the first token",
         [](const Snap& s) { return s.hedges_lost; });
    out.family("tokenradar_hedges_cancelled_total", MetricType::counter,
               "Attempts cancelled because a hedge or the other attempt won");
    out.sample("tokenradar_hedges_cancelled_total", hedges_cancelled_.load());
    out.family("tokenradar_route_share", MetricType::gauge,
               "Share of a virtual model's attempts each member got over the last minute");
    for (std::size_t mi = 0; mi < models_.size(); ++mi) {
        const Model& m = *models_[mi];
        const std::vector<double> share = shares(m, now_ns);
        for (std::size_t i = 0; i < share.size(); ++i) {
            const Upstream& u = upstreams_[m.upstream_of_member[i]];
            out.sample("tokenradar_route_share",
                       {{"virtual_model", config_.models[mi].name},
                        {"provider", config_.providers[u.provider].name},
                        {"model", u.model}},
                       share[i]);
        }
    }
}

}  // namespace tokenradar::gateway
