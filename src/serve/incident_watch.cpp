#include "incident_watch.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/thread_name.hpp>

#include <spdlog/spdlog.h>

namespace tokenradar::serve {

IncidentWatch::IncidentWatch(const observatory::RollupIndex& index,
                             observatory::IncidentConfig config, std::function<bool()> loaded,
                             std::string ca_file)
    : monitor_(index, std::move(config)), loaded_(std::move(loaded)) {
    const observatory::IncidentConfig& c = monitor_.config();
    if (c.webhooks.empty()) return;
    std::vector<net::Url> urls;
    for (const std::string& url : c.webhooks) urls.push_back(*net::parse_url(url));  // checked
    observatory::WebhookOptions options;
    options.queue_capacity = c.webhook_queue;
    options.max_attempts = c.webhook_attempts;
    options.client.ca_file = std::move(ca_file);
    options.client.total_timeout = std::chrono::seconds(10);
    webhooks_ = std::make_unique<observatory::Webhooks>(std::move(urls), options);
}

IncidentWatch::~IncidentWatch() { stop(); }

void IncidentWatch::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] {
        name_this_thread("tr-incidents");
        run();
    });
}

void IncidentWatch::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
    if (webhooks_) webhooks_->stop();
}

void IncidentWatch::run() {
    const auto every = monitor_.config().every;
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, every, [this] { return stopping_; })) {
        if (loaded_ && !loaded_()) continue;
        lock.unlock();
        for (const observatory::IncidentEvent& e : monitor_.evaluate(wall_now_us())) {
            const observatory::Incident& i = e.incident;
            if (e.kind == observatory::IncidentEvent::Kind::opened) {
                spdlog::warn("incident {} opened: {} {} ({} cell(s), {} x{:.2f})", i.id, i.provider,
                             i.model, i.cells.size(),
                             observatory::kWatchedNames[static_cast<std::size_t>(i.worst_stat)],
                             i.worst_ratio);
            } else {
                spdlog::info("incident {} closed: {} {} after {} s", i.id, i.provider, i.model,
                             (i.end_us - i.start_us) / 1'000'000);
            }
            if (webhooks_) webhooks_->push(observatory::event_json(e));
        }
        lock.lock();
    }
}

void IncidentWatch::metrics(PrometheusText& out) const {
    constexpr std::string_view kOpen = "tokenradar_incidents_open";
    out.family(kOpen, MetricType::gauge, "Latency incidents open now.");
    out.sample(kOpen, monitor_.open_count());
    constexpr std::string_view kEvaluations = "tokenradar_incidents_evaluations_total";
    out.family(kEvaluations, MetricType::counter, "Incident evaluations over the rollups.");
    out.sample(kEvaluations, monitor_.evaluations());
    if (!webhooks_) return;
    const observatory::Webhooks::Counters c = webhooks_->counters();
    constexpr std::string_view kHooks = "tokenradar_incident_webhooks_total";
    out.family(kHooks, MetricType::counter, "Incident webhook deliveries by outcome.");
    out.sample(kHooks, {{"outcome", "delivered"}}, c.delivered);
    out.sample(kHooks, {{"outcome", "failed"}}, c.failed);
    out.sample(kHooks, {{"outcome", "retried"}}, c.retries);
    out.sample(kHooks, {{"outcome", "dropped"}}, c.dropped);
}

}  // namespace tokenradar::serve
