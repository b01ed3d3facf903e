#pragma once
// Private to serve: what nearest-region routing measures, from the observatory's own rollups:
// the TTFT p50 from each client region to each provider's model over the last hour
// (GET /api/v1/regions, answered in process), reread at most every 30 s. Thread-safe.

#include <tokenradar/observatory/http_api.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace tokenradar::serve {

class RegionLatency {
  public:
    explicit RegionLatency(const observatory::HttpApi& api) : api_(api) {}

    // The measured TTFT p50 in ms; nullopt when the cell has too few samples or none.
    // Rereads the rollups when the table is older than 30 s (the query's own answer cache
    // makes that cheap); blocks while it does.
    [[nodiscard]] std::optional<double> ttft_ms(std::string_view client_region,
                                                std::string_view provider, std::string_view model);

  private:
    void refresh_locked(std::int64_t now_us);

    const observatory::HttpApi& api_;
    std::mutex mutex_;
    std::int64_t refreshed_us_ = -1;
    std::map<std::tuple<std::string, std::string, std::string>, double, std::less<>> ttft_;
};

}  // namespace tokenradar::serve
