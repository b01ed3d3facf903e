#include "region_latency.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>

#include <boost/json/parse.hpp>

#include <algorithm>

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
    const auto* rows = ec || !doc.is_object() ? nullptr : doc.get_object().if_contains("rows");
    if (rows == nullptr || !rows->is_array()) return;
    ttft_.clear();
    const auto text = [](const boost::json::object& row, std::string_view key) {
        const auto* v = row.if_contains(key);
        return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    for (const auto& row : rows->as_array()) {
        if (!row.is_object()) continue;
        const auto& r = row.get_object();
        const auto* ttft = r.if_contains("ttft_ms");
        const auto* p50 =
            ttft != nullptr && ttft->is_object() ? ttft->get_object().if_contains("p50") : nullptr;
        if (p50 == nullptr || !p50->is_number()) continue;
        // One provider's model may be measured in several upstream regions: the fastest.
        const double ms = p50->to_number<double>();
        auto [it, fresh] = ttft_.try_emplace(
            std::make_tuple(text(r, "client_region"), text(r, "provider"), text(r, "model")), ms);
        if (!fresh) it->second = std::min(it->second, ms);
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
