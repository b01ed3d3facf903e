#include <tokenradar/gateway/prometheus.hpp>

#include <algorithm>
#include <mutex>
#include <tuple>
#include <utility>

namespace tokenradar::gateway {
namespace {

// OpenTelemetry GenAI's advised bucket boundaries (seconds).
constexpr std::array<double, 16> kTtftBounds{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                             0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
constexpr std::array<double, 13> kTpotBounds{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                             0.3,  0.4,   0.5,  0.75,  1.0, 2.5};
constexpr std::array<double, 14> kDurationBounds{0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                                 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
// The gateway's own cost: tens of microseconds, up to a slow millisecond.
constexpr std::array<double, 12> kOverheadBounds{
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1};

// Relaying one chunk costs microseconds and the relay's bound is 100 us at p99, so the buckets
// around it are finer (75 and 150 us). Measured delays: docs/NOTES.md "Performance facts".
constexpr std::array<double, 14> kRelayBounds{0.000005, 0.00001, 0.000025, 0.00005, 0.000075,
                                              0.0001,   0.00015, 0.00025,  0.0005,  0.001,
                                              0.0025,   0.005,   0.01,     0.1};

// TTFT with and without a provider prompt-cache hit: finer than kTtftBounds where a prefill
// saved shows (tens to hundreds of ms), so the estimated quantiles can tell them apart.
constexpr std::array<double, 28> kCacheTtftBounds{
    0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3,  0.4,  0.5,
    0.6,   0.75, 1.0,  1.25, 1.5,  2.0,   2.5, 3.0,   4.0,  5.0, 7.5,  10.0, 15.0, 20.0};
constexpr std::string_view kCacheTtftName = "tokenradar_provider_cache_ttft_seconds";

using Kind = MetricType;

// Length-prefixed parts, so no label value (a configured name may hold any byte) can make two
// label sets one key.
void append_key_part(std::string& key, std::string_view part) {
    const auto size = static_cast<std::uint32_t>(part.size());
    key.append(reinterpret_cast<const char*>(&size), sizeof size);
    key.append(part);
}

void labels_into(MetricLabels labels, std::string& out) {
    out.clear();
    PrometheusText::append_labels(out, labels);
}

// The series key of one observation, built in a buffer the thread reuses: a series is found
// by a string_view, and a string is allocated only for a new series (an attempt built 5 label
// strings before).
std::string_view scratch_labels(
    std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
    thread_local std::string buffer;
    labels_into(labels, buffer);
    return buffer;
}

// The value of `key` in a map of owned values (their addresses never change), made on first
// use; a shared lock for the usual find.
template <class Map, class Make>
auto& find_or_add(std::shared_mutex& mu, Map& map, std::string_view key, Make make) {
    {
        std::shared_lock lock(mu);
        if (auto it = map.find(key); it != map.end()) return *it->second;
    }
    std::unique_lock lock(mu);
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(std::string(key), make()).first;
    return *it->second;
}

// The series in `slot`, found by `find` the first time.
template <class Series, class Find>
Series& resolved(std::atomic<Series*>& slot, Find find) {
    Series* series = slot.load(std::memory_order_acquire);
    if (series == nullptr) {
        series = &find();
        slot.store(series, std::memory_order_release);
    }
    return *series;
}

}  // namespace

std::string prometheus_labels(
    std::initializer_list<std::pair<std::string_view, std::string_view>> labels) {
    std::string out;
    labels_into(labels, out);
    return out;
}

HistogramSeries::HistogramSeries(std::span<const double> bounds)
    : bounds_(bounds), counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds.size() + 1)) {}

void HistogramSeries::observe(double seconds) noexcept {
    std::size_t i = 0;
    while (i < bounds_.size() && seconds > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    const double ns = seconds > 0 ? seconds * 1e9 : 0.0;
    sum_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

std::optional<double> HistogramSeries::quantile(double q) const noexcept {
    const std::uint64_t total = count();
    if (total == 0) return std::nullopt;
    const double rank = q * static_cast<double>(total);
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < bounds_.size(); ++i) {
        const std::uint64_t in_bucket = counts_[i].load(std::memory_order_relaxed);
        if (in_bucket > 0 && static_cast<double>(below + in_bucket) >= rank) {
            const double lower = i == 0 ? 0.0 : bounds_[i - 1];
            const double into =
                (rank - static_cast<double>(below)) / static_cast<double>(in_bucket);
            return lower + (bounds_[i] - lower) * std::clamp(into, 0.0, 1.0);
        }
        below += in_bucket;
    }
    return bounds_.empty() ? 0.0 : bounds_.back();
}

void HistogramSeries::render(std::string_view name, std::string_view labels,
                             PrometheusText& out) const {
    std::vector<std::uint64_t> cumulative(bounds_.size() + 1);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        sum += counts_[i].load(std::memory_order_relaxed);
        cumulative[i] = sum;
    }
    out.histogram(name, labels, bounds_, cumulative,
                  static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9,
                  count_.load(std::memory_order_relaxed));
}

struct Metrics::Family {
    std::string name;
    std::string help;
    Kind kind;
    std::span<const double> bounds;
    mutable std::shared_mutex mu;
    std::map<std::string, std::unique_ptr<HistogramSeries>, std::less<>> histograms;
    std::map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>, std::less<>> counters;

    HistogramSeries& histogram(std::string_view labels) {
        return find_or_add(mu, histograms, labels,
                           [&] { return std::make_unique<HistogramSeries>(bounds); });
    }
    std::atomic<std::uint64_t>& counter(std::string_view labels) {
        return find_or_add(mu, counters, labels,
                           [] { return std::make_unique<std::atomic<std::uint64_t>>(0); });
    }
    void render(PrometheusText& out) const {
        out.family(name, kind, help);
        std::shared_lock lock(mu);
        for (const auto& [labels, h] : histograms) h->render(name, labels, out);
        for (const auto& [labels, c] : counters) {
            out.series(name, labels, c->load(std::memory_order_relaxed));
        }
    }
};

// TTFT of one (provider, model)'s ok attempts by provider prompt-cache hit and miss (rendered
// by render(), read by provider_cache_ttft()).
struct Metrics::CacheTtft {
    CacheTtft(std::string_view provider_name, std::string_view model_name)
        : provider(provider_name), model(model_name) {}
    std::string provider;
    std::string model;
    HistogramSeries hit{kCacheTtftBounds};
    HistogramSeries miss{kCacheTtftBounds};
};

// The series an attempt of one (provider, model, status, route) touches, found with one lookup
// (seven label sets were built and looked up per attempt). Each is filled when first needed, so
// a series still appears in /metrics only once something was observed in it.
struct Metrics::AttemptSeries {
    std::atomic<HistogramSeries*> ttft{nullptr};
    std::atomic<HistogramSeries*> tpot{nullptr};
    std::atomic<HistogramSeries*> duration{nullptr};
    std::atomic<HistogramSeries*> overhead{nullptr};
    std::atomic<std::atomic<std::uint64_t>*> input_tokens{nullptr};
    std::atomic<std::atomic<std::uint64_t>*> cached_input_tokens{nullptr};
    std::atomic<std::atomic<std::uint64_t>*> output_tokens{nullptr};
    std::atomic<std::atomic<std::uint64_t>*> attempts{nullptr};
    std::atomic<CacheTtft*> cache_ttft{nullptr};
};

namespace {
enum FamilyIndex { kTtft, kTpot, kDuration, kTokens, kOverhead, kAttempts, kRequests };
}

Metrics::Metrics() : relay_(kRelayBounds) {
    auto add = [this](std::string name, std::string help, Kind kind,
                      std::span<const double> bounds) {
        auto f = std::make_unique<Family>();
        f->name = std::move(name);
        f->help = std::move(help);
        f->kind = kind;
        f->bounds = bounds;
        families_.push_back(std::move(f));
    };
    add("gen_ai_server_time_to_first_token_seconds",
        "Upstream time to first token (metrics.md TTFT), per attempt.", Kind::histogram,
        kTtftBounds);
    add("gen_ai_server_time_per_output_token_seconds",
        "Upstream time per output token after the first (metrics.md TPOT).", Kind::histogram,
        kTpotBounds);
    add("gen_ai_server_request_duration_seconds", "Upstream attempt duration (metrics.md E2E).",
        Kind::histogram, kDurationBounds);
    add("gen_ai_usage_tokens_total",
        "Tokens by type (input, cached_input, output) from upstream usage or estimates.",
        Kind::counter, {});
    add("tokenradar_gateway_overhead_seconds",
        "Time the gateway itself added (metrics.md overhead_ns).", Kind::histogram,
        kOverheadBounds);
    add("tokenradar_upstream_attempts_total", "Upstream attempts by outcome and route.",
        Kind::counter, {});
    add("tokenradar_requests_total", "Client requests by the status they ended with.",
        Kind::counter, {});
}

Metrics::~Metrics() = default;

Metrics::AttemptSeries& Metrics::attempt_series(const Measurement& m) {
    thread_local std::string key;
    key.clear();
    for (std::string_view part :
         {std::string_view(m.labels.provider), std::string_view(m.labels.model),
          to_string(m.status), to_string(m.labels.route)}) {
        append_key_part(key, part);
    }
    return find_or_add(attempts_mu_, attempts_, key,
                       [] { return std::make_unique<AttemptSeries>(); });
}

Metrics::CacheTtft& Metrics::cache_ttft(std::string_view provider, std::string_view model) {
    thread_local std::string key;
    key.clear();
    append_key_part(key, provider);
    append_key_part(key, model);
    return find_or_add(cache_ttft_mu_, cache_ttft_, key,
                       [&] { return std::make_unique<CacheTtft>(provider, model); });
}

void Metrics::observe_attempt(const Measurement& m) {
    const Derived d = derive(m);
    AttemptSeries& series = attempt_series(m);
    const std::string_view provider = m.labels.provider;
    const std::string_view model = m.labels.model;
    auto by_status = [&](std::atomic<HistogramSeries*>& slot,
                         FamilyIndex family) -> HistogramSeries& {
        return resolved(slot, [&]() -> HistogramSeries& {
            return families_[family]->histogram(scratch_labels(
                {{"provider", provider}, {"model", model}, {"status", to_string(m.status)}}));
        });
    };
    if (d.ttft_ms) by_status(series.ttft, kTtft).observe(*d.ttft_ms / 1e3);
    if (d.ttft_ms && m.status == RequestStatus::ok) {
        CacheTtft& by_cache = resolved(series.cache_ttft,
                                       [&]() -> CacheTtft& { return cache_ttft(provider, model); });
        (m.cached_prompt_tokens.value_or(0) > 0 ? by_cache.hit : by_cache.miss)
            .observe(*d.ttft_ms / 1e3);
    }
    if (d.tpot_ms) by_status(series.tpot, kTpot).observe(*d.tpot_ms / 1e3);
    if (d.e2e_ms) by_status(series.duration, kDuration).observe(*d.e2e_ms / 1e3);
    if (m.overhead_ns) {
        resolved(series.overhead, [&]() -> HistogramSeries& {
            return families_[kOverhead]->histogram(
                scratch_labels({{"provider", provider}, {"model", model}}));
        }).observe(static_cast<double>(*m.overhead_ns) / 1e9);
    }
    auto tokens = [&](std::atomic<std::atomic<std::uint64_t>*>& slot, std::string_view type,
                      const std::optional<std::int64_t>& n) {
        if (!n || *n <= 0) return;
        resolved(slot, [&]() -> std::atomic<std::uint64_t>& {
            return families_[kTokens]->counter(
                scratch_labels({{"provider", provider}, {"model", model}, {"type", type}}));
        }).fetch_add(static_cast<std::uint64_t>(*n), std::memory_order_relaxed);
    };
    tokens(series.input_tokens, "input", m.prompt_tokens);
    tokens(series.cached_input_tokens, "cached_input", m.cached_prompt_tokens);
    tokens(series.output_tokens, "output", m.output_tokens);
    resolved(series.attempts, [&]() -> std::atomic<std::uint64_t>& {
        return families_[kAttempts]->counter(
            scratch_labels({{"provider", provider},
                            {"model", model},
                            {"status", to_string(m.status)},
                            {"route", to_string(m.labels.route)}}));
    }).fetch_add(1, std::memory_order_relaxed);
}

void Metrics::observe_request(RequestStatus status) {
    families_[kRequests]
        ->counter(scratch_labels({{"status", to_string(status)}}))
        .fetch_add(1, std::memory_order_relaxed);
}

std::vector<ProviderCacheTtft> Metrics::provider_cache_ttft() const {
    const auto side = [](const HistogramSeries& h) {
        ProviderCacheTtft::Side s;
        s.samples = h.count();
        if (s.samples == 0) return s;
        s.mean_ms = h.sum_seconds() * 1e3 / static_cast<double>(s.samples);
        s.p50_ms = h.quantile(0.5).value_or(0) * 1e3;
        s.p95_ms = h.quantile(0.95).value_or(0) * 1e3;
        return s;
    };
    std::vector<ProviderCacheTtft> out;
    {
        std::shared_lock lock(cache_ttft_mu_);
        out.reserve(cache_ttft_.size());
        for (const auto& [key, c] : cache_ttft_) {
            out.push_back({c->provider, c->model, side(c->hit), side(c->miss)});
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.provider, a.model) < std::tie(b.provider, b.model);
    });
    return out;
}

std::string Metrics::render(const std::function<void(PrometheusText&)>& extra) const {
    std::string out;
    out.reserve(16 * 1024);
    PrometheusText text(out);
    for (const auto& f : families_) f->render(text);
    text.family(kCacheTtftName, MetricType::histogram,
                "Upstream TTFT of ok attempts, with (hit) and without (miss) cached prompt tokens "
                "in the provider's usage.");
    {
        std::shared_lock lock(cache_ttft_mu_);
        for (const auto& [key, c] : cache_ttft_) {
            for (const auto& [name, h] : {std::pair{"hit", &c->hit}, std::pair{"miss", &c->miss}}) {
                if (h->count() == 0) continue;
                h->render(
                    kCacheTtftName,
                    prometheus_labels(
                        {{"provider", c->provider}, {"model", c->model}, {"provider_cache", name}}),
                    text);
            }
        }
    }
    text.family("tokenradar_relay_delay_seconds", MetricType::histogram,
                "Per chunk: upstream read to client write done.");
    relay_.render("tokenradar_relay_delay_seconds", "", text);
    text.family("tokenradar_active_requests", MetricType::gauge, "Client requests in flight.");
    text.sample("tokenradar_active_requests", active_.load(std::memory_order_relaxed));
    if (extra) extra(text);
    return out;
}

}  // namespace tokenradar::gateway
