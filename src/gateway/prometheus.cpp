#include <tokenradar/gateway/prometheus.hpp>

#include <fmt/format.h>

#include <mutex>

namespace tokenradar::gateway {
namespace {

// OpenTelemetry GenAI's advised bucket boundaries (seconds).
constexpr std::array<double, 16> kTtftBounds{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                             0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0};
constexpr std::array<double, 13> kTpotBounds{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                             0.3,  0.4,   0.5,  0.75,  1.0, 2.5};
constexpr std::array<double, 14> kDurationBounds{0.01, 0.02, 0.04, 0.08, 0.16,  0.32,  0.64,
                                                 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
// The gateway's own cost: tens of microseconds, up to a slow millisecond.
constexpr std::array<double, 12> kOverheadBounds{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                                 0.001,   0.0025,   0.005,   0.01,   0.025,   0.1};

// Relaying one chunk costs microseconds; the bound is 100 us at p99, so the buckets
// around it are finer (75 and 150 us): a write wakes the client, ~50 us on a small VM.
constexpr std::array<double, 14> kRelayBounds{0.000005, 0.00001, 0.000025, 0.00005, 0.000075,
                                              0.0001,   0.00015, 0.00025,  0.0005,  0.001,
                                              0.0025,   0.005,   0.01,     0.1};

enum class Kind { histogram, counter };

void escape_into(std::string_view value, std::string& out) {
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
}

void labels_into(std::initializer_list<std::pair<std::string_view, std::string_view>> labels,
                 std::string& out) {
    out.clear();
    for (const auto& [key, value] : labels) {
        if (!out.empty()) out += ',';
        out += key;
        out += "=\"";
        escape_into(value, out);
        out += '"';
    }
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

void HistogramSeries::render(std::string_view name, std::string_view labels, std::string& out) const {
    const std::string sep = labels.empty() ? "" : ",";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        cumulative += counts_[i].load(std::memory_order_relaxed);
        const std::string le = i < bounds_.size() ? fmt::format("{}", bounds_[i]) : "+Inf";
        fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                       le, cumulative);
    }
    fmt::format_to(std::back_inserter(out), "{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels,
                   static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9, name, labels,
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

    template <class Map, class Make>
    auto& series(Map& map, std::string_view labels, Make make) {
        {
            std::shared_lock lock(mu);
            if (auto it = map.find(labels); it != map.end()) return *it->second;
        }
        std::unique_lock lock(mu);
        auto it = map.find(labels);
        if (it == map.end()) it = map.emplace(std::string(labels), make()).first;
        return *it->second;
    }
    void observe(std::string_view labels, double seconds) {
        series(histograms, labels, [&] { return std::make_unique<HistogramSeries>(bounds); })
            .observe(seconds);
    }
    void add(std::string_view labels, std::uint64_t n) {
        series(counters, labels, [] { return std::make_unique<std::atomic<std::uint64_t>>(0); })
            .fetch_add(n, std::memory_order_relaxed);
    }
    void render(std::string& out) const {
        fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name,
                       kind == Kind::histogram ? "histogram" : "counter");
        std::shared_lock lock(mu);
        for (const auto& [labels, h] : histograms) h->render(name, labels, out);
        for (const auto& [labels, c] : counters) {
            fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels,
                           c->load(std::memory_order_relaxed));
        }
    }
};

namespace {
enum FamilyIndex { kTtft, kTpot, kDuration, kTokens, kOverhead, kAttempts, kRequests };
}

Metrics::Metrics() : relay_(kRelayBounds) {
    auto add = [this](std::string name, std::string help, Kind kind, std::span<const double> bounds) {
        auto f = std::make_unique<Family>();
        f->name = std::move(name);
        f->help = std::move(help);
        f->kind = kind;
        f->bounds = bounds;
        families_.push_back(std::move(f));
    };
    add("gen_ai_server_time_to_first_token_seconds",
        "Upstream time to first token (metrics.md TTFT), per attempt.", Kind::histogram, kTtftBounds);
    add("gen_ai_server_time_per_output_token_seconds",
        "Upstream time per output token after the first (metrics.md TPOT).", Kind::histogram, kTpotBounds);
    add("gen_ai_server_request_duration_seconds", "Upstream attempt duration (metrics.md E2E).",
        Kind::histogram, kDurationBounds);
    add("gen_ai_usage_tokens_total", "Tokens by type (input, cached_input, output) from upstream usage or estimates.",
        Kind::counter, {});
    add("tokenradar_gateway_overhead_seconds",
        "Time the gateway itself added (metrics.md overhead_ns).", Kind::histogram, kOverheadBounds);
    add("tokenradar_upstream_attempts_total", "Upstream attempts by outcome and route.", Kind::counter, {});
    add("tokenradar_requests_total", "Client requests by the status they ended with.", Kind::counter, {});
}

Metrics::~Metrics() = default;

void Metrics::observe_attempt(const Measurement& m) {
    const Derived d = derive(m);
    const std::string_view labels =
        scratch_labels({{"provider", m.labels.provider}, {"model", m.labels.model}, {"status", m.status}});
    if (d.ttft_ms) families_[kTtft]->observe(labels, *d.ttft_ms / 1e3);
    if (d.tpot_ms) families_[kTpot]->observe(labels, *d.tpot_ms / 1e3);
    if (d.e2e_ms) families_[kDuration]->observe(labels, *d.e2e_ms / 1e3);
    if (m.overhead_ns) {
        families_[kOverhead]->observe(scratch_labels({{"provider", m.labels.provider}, {"model", m.labels.model}}),
                                      static_cast<double>(*m.overhead_ns) / 1e9);
    }
    auto tokens = [&](std::string_view type, const std::optional<std::int64_t>& n) {
        if (n && *n > 0) {
            families_[kTokens]->add(
                scratch_labels({{"provider", m.labels.provider}, {"model", m.labels.model}, {"type", type}}),
                static_cast<std::uint64_t>(*n));
        }
    };
    tokens("input", m.prompt_tokens);
    tokens("cached_input", m.cached_prompt_tokens);
    tokens("output", m.output_tokens);
    families_[kAttempts]->add(scratch_labels({{"provider", m.labels.provider},
                                              {"model", m.labels.model},
                                              {"status", m.status},
                                              {"route", m.labels.route}}),
                              1);
}

void Metrics::observe_request(std::string_view status) {
    families_[kRequests]->add(scratch_labels({{"status", status}}), 1);
}

std::string Metrics::render(std::string_view extra) const {
    std::string out;
    out.reserve(16 * 1024);
    for (const auto& f : families_) f->render(out);
    out += "# HELP tokenradar_relay_delay_seconds Per chunk: upstream read to client write done.\n"
           "# TYPE tokenradar_relay_delay_seconds histogram\n";
    relay_.render("tokenradar_relay_delay_seconds", "", out);
    fmt::format_to(std::back_inserter(out),
                   "# HELP tokenradar_active_requests Client requests in flight.\n"
                   "# TYPE tokenradar_active_requests gauge\ntokenradar_active_requests {}\n",
                   active_.load(std::memory_order_relaxed));
    out += extra;
    return out;
}

}  // namespace tokenradar::gateway
