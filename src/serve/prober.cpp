#include <tokenradar/serve/prober.hpp>

#include <tokenradar/bench/probe.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/thread_name.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <pthread.h>

#include <atomic>
#include <ctime>
#include <random>

namespace tokenradar::serve {

namespace asio = net::asio;
using asio::awaitable;

struct Prober::State {
    ProbeConfig config;
    std::vector<bench::Target> targets;
    std::vector<std::string> regions;                // per target: its provider's (upstream_region)
    std::vector<Result<bench::PreparedCall>> calls;  // per target, built once
    gateway::RecordSink sink;
    net::ClientOptions client_options;
    std::uint64_t seed = 1;
    asio::io_context io{1};
    std::vector<asio::cancellation_signal> cancel;  // per target loop
    std::atomic<bool> stopping{false};
    struct Tally {
        std::atomic<std::uint64_t> requests{0}, failures{0}, tokens{0};
    };
    std::unique_ptr<Tally[]> tallies;
    std::atomic<std::int64_t> cpu_ns{0};  // the thread's, at its end
    std::atomic<bool> running{false};
};

namespace {

std::int64_t thread_cpu_ns(clockid_t clock) {
    timespec ts{};
    if (clock_gettime(clock, &ts) != 0) return 0;
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One target's schedule, for ever (until cancelled).
awaitable<void> probe_loop(std::shared_ptr<Prober::State> s, net::HttpClient& client,
                           std::size_t index) {
    const ProbeConfig& c = s->config;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::mt19937_64 rng(s->seed * 0x9E3779B97F4A7C15ULL + index);
    const auto interval =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(c.interval);
    std::uniform_int_distribution<std::int64_t> jitter_ms(0, c.jitter.count() * 1000);
    const bench::Target& target = s->targets[index];
    Prober::State::Tally& tally = s->tallies[index];
    const std::uint64_t sequence = index;
    std::uint64_t next_prompt = 0;
    auto slot = std::chrono::steady_clock::now();
    while (!s->stopping) {
        timer.expires_at(slot + std::chrono::milliseconds(jitter_ms(rng)));
        co_await timer.async_wait(asio::use_awaitable);
        for (std::int64_t k = 0; k < c.requests && !s->stopping; ++k) {
            bench::ProbeRequest request;
            request.call = &s->calls[index];
            request.prompt = bench::make_prompt(c.workload, s->seed, next_prompt++, sequence);
            request.task = c.workload.task;
            request.request_id = new_request_id();
            bench::ProbeResult result =
                co_await bench::run_probe(client, target, std::move(request));
            if (s->stopping) co_return;  // cancelled by stop(): not a measurement
            Measurement& m = result.record;
            m.labels.source = "probe";
            m.labels.client_region = c.region;
            m.labels.upstream_region = s->regions[index];
            ++tally.requests;
            if (!m.status.is_ok()) {
                ++tally.failures;
                spdlog::debug("probe {} {}: {}", target.name, target.model, result.error);
            }
            tally.tokens += static_cast<std::uint64_t>(m.prompt_tokens.value_or(0) +
                                                       m.output_tokens.value_or(0));
            if (s->sink) s->sink(std::move(m));
        }
        slot += interval;
        const auto now = std::chrono::steady_clock::now();
        while (slot + interval <= now) slot += interval;  // overran: skip, do not bunch up
    }
}

void run_thread(const std::shared_ptr<Prober::State>& s) {
    name_this_thread("tr-probes");
    {
        net::HttpClient client(s->io.get_executor(), s->client_options);
        for (std::size_t i = 0; i < s->targets.size(); ++i) {
            asio::co_spawn(s->io, probe_loop(s, client, i),
                           asio::bind_cancellation_slot(
                               s->cancel[i].slot(), [s, i](const std::exception_ptr& e) {
                                   if (!e || s->stopping) return;
                                   try {
                                       std::rethrow_exception(e);
                                   } catch (const std::exception& ex) {
                                       spdlog::error("probes of {}: stopped: {}",
                                                     s->targets[i].name, ex.what());
                                   }
                               }));
        }
        s->io.run();  // until every loop ended (stop() cancels them)
    }
    s->cpu_ns = thread_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

}  // namespace

Prober::Prober(ProbeConfig config, const std::vector<gateway::ProviderConfig>& providers,
               gateway::RecordSink sink, net::ClientOptions client, std::uint64_t seed)
    : state_(std::make_shared<State>()) {
    State& s = *state_;
    s.config = std::move(config);
    s.sink = std::move(sink);
    s.client_options = std::move(client);
    s.seed = seed;
    s.cancel = std::vector<asio::cancellation_signal>(s.config.targets.size());
    s.tallies = std::make_unique<State::Tally[]>(s.config.targets.size());
    for (const ProbeTarget& pt : s.config.targets) {
        const gateway::ProviderConfig& p = providers.at(pt.provider);
        bench::Target t;
        t.name = p.name;
        t.api = p.api;
        t.base = p.base;
        t.model = pt.model;
        t.key = p.key;
        t.key_env = p.key_env;
        s.calls.push_back(bench::PreparedCall::make(
            t, bench::make_prompt(s.config.workload, seed, 0), {}, s.config.workload.extra_body));
        s.targets.push_back(std::move(t));
        s.regions.push_back(p.region);
    }
}

Prober::~Prober() { stop(); }

void Prober::start() {
    if (state_->targets.empty() || thread_.joinable()) return;
    state_->running = true;
    thread_ = std::thread([s = state_] { run_thread(s); });
    if (pthread_getcpuclockid(thread_.native_handle(), &cpu_clock_) != 0) {
        cpu_clock_ = CLOCK_THREAD_CPUTIME_ID;  // unreachable on Linux; reads the caller's
    }
}

void Prober::stop() {
    if (!thread_.joinable()) return;
    state_->stopping = true;
    asio::post(state_->io, [s = state_] {
        for (auto& signal : s->cancel) signal.emit(asio::cancellation_type::terminal);
    });
    state_->running = false;
    thread_.join();
}

std::vector<Prober::Counters> Prober::counters() const {
    std::vector<Counters> out;
    for (std::size_t i = 0; i < state_->targets.size(); ++i) {
        const State::Tally& t = state_->tallies[i];
        out.push_back(Counters{state_->targets[i].name, state_->targets[i].model, t.requests.load(),
                               t.failures.load(), t.tokens.load()});
    }
    return out;
}

double Prober::cpu_seconds() const {
    const std::int64_t ns = state_->running ? thread_cpu_ns(cpu_clock_) : state_->cpu_ns.load();
    return static_cast<double>(ns) / 1e9;
}

void Prober::metrics(PrometheusText& out) const {
    const std::vector<Counters> counters = this->counters();
    if (counters.empty()) return;
    constexpr std::string_view kRequests = "tokenradar_probe_requests_total";
    out.family(kRequests, MetricType::counter, "Probe requests recorded, by target and outcome.");
    for (const Counters& c : counters) {
        out.sample(kRequests, {{"provider", c.provider}, {"model", c.model}, {"outcome", "ok"}},
                   c.requests - c.failures);
        out.sample(kRequests, {{"provider", c.provider}, {"model", c.model}, {"outcome", "failed"}},
                   c.failures);
    }
    constexpr std::string_view kTokens = "tokenradar_probe_tokens_total";
    out.family(kTokens, MetricType::counter,
               "Prompt and output tokens the probe records report, by target.");
    for (const Counters& c : counters) {
        out.sample(kTokens, {{"provider", c.provider}, {"model", c.model}}, c.tokens);
    }
    const ProbeConfig& p = state_->config;
    constexpr std::string_view kPlanned = "tokenradar_probe_planned_per_day";
    out.family(kPlanned, MetricType::gauge,
               "The probe schedule's cost per target and day: requests, and tokens at most "
               "(prompt estimate + max_tokens).");
    for (const Counters& c : counters) {
        out.sample(kPlanned, {{"provider", c.provider}, {"model", c.model}, {"unit", "requests"}},
                   p.requests_per_day());
        out.sample(kPlanned, {{"provider", c.provider}, {"model", c.model}, {"unit", "tokens"}},
                   p.tokens_per_day());
    }
    constexpr std::string_view kCpu = "tokenradar_probe_cpu_seconds_total";
    out.family(kCpu, MetricType::counter, "CPU time of the probe thread.");
    out.sample(kCpu, cpu_seconds());
}

}  // namespace tokenradar::serve
