#include "region_latency.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>

#include <boost/json/parse.hpp>

namespace tokenradar::serve {
namespace {

constexpr std::int64_t kRefreshUs = 30'000'000;
// One row per (client region, upstream region, provider, model) with enough samples.
constexpr std::string_view kQuery = "/api/v1/regions?window=1h&limit=500";

}  // namespace

void RegionLatency::refresh_locked(std::int64_t now_us) {
    refreshed_us_ = now_us;
    const auto answer = api_.query(kQuery, now_us);
    if (!answer) return;  // still loading: keep what we had
    if (answer->status != 200) {
        spdlog::warn("nearest region: {} answered {}", kQuery, answer->status);
        return;
    }
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(answer->body, ec);
    const auto* rows = ec ? nullptr : doc.as_object().if_contains("rows");
    if (rows == nullptr || !rows->is_array()) return;
    ttft_.clear();
    for (const auto& row : rows->as_array()) {
        const auto& r = row.as_object();
        const auto* p50 =
            r.at("ttft_ms").is_object() ? r.at("ttft_ms").as_object().if_contains("p50") : nullptr;
        if (p50 == nullptr || !p50->is_number()) continue;
        ttft_[{std::string(r.at("client_region").as_string()),
               std::string(r.at("provider").as_string()), std::string(r.at("model").as_string())}] =
            p50->to_number<double>();
    }
}

std::optional<double> RegionLatency::ttft_ms(std::string_view client_region,
                                             std::string_view provider, std::string_view model) {
    const std::lock_guard lock(mutex_);
    const std::int64_t now = wall_now_us();
    if (refreshed_us_ < 0 || now - refreshed_us_ >= kRefreshUs) refresh_locked(now);
    const auto it = ttft_.find(
        std::make_tuple(std::string(client_region), std::string(provider), std::string(model)));
    if (it == ttft_.end()) return std::nullopt;
    return it->second;
}

}  // namespace tokenradar::serve
