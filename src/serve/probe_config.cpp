// [probes]: what serve probes, how often, and what that may cost (README "Scheduled probes").
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/serve/config.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tokenradar::serve {
namespace {

constexpr std::int64_t kDaySeconds = 24 * 3600;

std::string cost_text(const ProbeConfig& p) {
    return fmt::format(
        "every {}s x {} request(s) = {} requests and up to {} tokens ({} per request) "
        "a day per target",
        p.interval.count(), p.requests, p.requests_per_day(), p.tokens_per_day(),
        p.tokens_per_request());
}

}  // namespace

std::int64_t ProbeConfig::requests_per_day() const noexcept {
    const std::int64_t every = std::max<std::int64_t>(1, interval.count());
    return (kDaySeconds + every - 1) / every * requests;
}

std::int64_t ProbeConfig::tokens_per_request() const {
    // The prompt is the same size for every request (a topic and a nonce apart): request 0's.
    const bench::PromptSpec prompt = bench::make_prompt(workload, 1, 0);
    return estimate_tokens(prompt.system) + estimate_tokens(prompt.user) + workload.max_tokens;
}

void check_probe_cost(const ProbeConfig& p, const ConfigTable* table) {
    if (p.targets.empty()) return;
    const auto refuse = [&](std::string_view key, std::int64_t needed) {
        const std::string expected =
            fmt::format("at least {} for the schedule ({}); raise it, or probes.interval", needed,
                        cost_text(p));
        if (table != nullptr) table->fail(key, expected);
        throw ConfigError(fmt::format("probes.{}: expected {}", key, expected));
    };
    if (p.requests_per_day() > p.max_requests_per_day) {
        refuse("max_requests_per_day", p.requests_per_day());
    }
    if (p.tokens_per_day() > p.max_tokens_per_day) refuse("max_tokens_per_day", p.tokens_per_day());
}

ProbeConfig load_probe_config(const std::optional<ConfigTable>& table,
                              const gateway::GatewayConfig& gateway,
                              const std::filesystem::path& workloads_dir) {
    ProbeConfig p;
    if (!table) return p;
    const ConfigTable& t = *table;
    t.reject_unknown_keys({"region", "interval", "jitter", "workload", "requests",
                           "max_requests_per_day", "max_tokens_per_day", "targets"});
    p.region = t.get_string("region", "");
    if (!p.region.empty() && !is_simple_name(p.region)) t.fail("region", kSimpleNameRule);
    const auto seconds = [&](std::string_view key, std::chrono::seconds fallback) {
        return std::chrono::duration_cast<std::chrono::seconds>(t.get_duration(key, fallback));
    };
    p.interval = seconds("interval", p.interval);
    if (p.interval.count() < 1) t.fail("interval", "at least 1s");
    p.jitter = seconds("jitter", p.jitter);
    if (p.jitter.count() < 0 || p.jitter > p.interval) {
        t.fail("jitter", "from 0s to the interval");
    }
    p.requests = t.get_integer("requests", p.requests, 1, 100);
    p.max_requests_per_day =
        t.get_integer("max_requests_per_day", p.max_requests_per_day, 1, 100'000'000);
    p.max_tokens_per_day =
        t.get_integer("max_tokens_per_day", p.max_tokens_per_day, 1, 100'000'000'000);
    p.workload_name = t.get_string("workload", p.workload_name);
    p.workload = bench::load_workload(
        p.workload_name, workloads_dir.empty() ? find_resource_dir("workloads") : workloads_dir);
    for (const ConfigTable& target : t.tables("targets")) {
        target.reject_unknown_keys({"provider", "model"});
        const std::string provider = target.require_string("provider");
        const auto& providers = gateway.providers;
        const auto it = std::find_if(providers.begin(), providers.end(),
                                     [&](const auto& c) { return c.name == provider; });
        if (it == providers.end()) {
            target.fail("provider", "the name of a [[providers]] table");
        }
        ProbeTarget pt;
        pt.provider = static_cast<std::size_t>(it - providers.begin());
        pt.model = target.require_string("model");
        if (pt.model.empty()) target.fail("model", "the provider's model name");
        p.targets.push_back(std::move(pt));
    }
    if (p.targets.empty()) t.fail("targets", "at least one [[probes.targets]] table");
    check_probe_cost(p, &t);
    return p;
}

}  // namespace tokenradar::serve
