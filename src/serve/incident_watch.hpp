#pragma once
// Private to serve: [incidents] running. Every `every` (once the rollups are loaded) a thread
// of its own (`tr-incidents`) evaluates the observatory's IncidentMonitor, logs what opened
// and closed and hands each event to the webhooks. GET /api/v1/incidents reads the monitor.
//
// Threads: construct, start() and stop() from one thread; stop() wakes and joins the thread,
// then gives the queued webhooks one attempt each.

#include <tokenradar/core/prometheus_text.hpp>
#include <tokenradar/observatory/incident_monitor.hpp>
#include <tokenradar/observatory/webhooks.hpp>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace tokenradar::serve {

class IncidentWatch {
  public:
    // `loaded` says whether the rollups are ready (the keeper's); `ca_file` is for webhooks.
    IncidentWatch(const observatory::RollupIndex& index, observatory::IncidentConfig config,
                  std::function<bool()> loaded, std::string ca_file = {});
    ~IncidentWatch();
    IncidentWatch(const IncidentWatch&) = delete;
    IncidentWatch& operator=(const IncidentWatch&) = delete;

    void start();
    void stop();

    [[nodiscard]] observatory::IncidentMonitor& monitor() noexcept { return monitor_; }
    // tokenradar_incidents_* families: open incidents, evaluations, webhook deliveries.
    void metrics(PrometheusText& out) const;

  private:
    void run();

    observatory::IncidentMonitor monitor_;
    std::function<bool()> loaded_;
    std::unique_ptr<observatory::Webhooks> webhooks_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace tokenradar::serve
