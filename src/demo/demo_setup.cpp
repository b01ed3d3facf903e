// What `tokenradar demo` runs, as data: the providers, the gateway configuration, and the
// history it writes into the store before the gateway starts.

#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/demo/demo.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/net/url.hpp>
#include <tokenradar/observatory/config.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

namespace tokenradar::demo {
namespace {

constexpr std::size_t kPage = 4096;             // records read per page looking for sim history
constexpr std::size_t kBatch = 5000;            // records per insert transaction
constexpr std::int64_t kMinGapUs = 60'000'000;  // shorter stretches without history are left
constexpr std::uint64_t kPromptSamples = 16;    // prompts measured per workload
constexpr std::size_t kQueuedBatches = 4;       // generated, not yet inserted

// The simulated clients: one next to the providers (the published comparison's numbers) and
// one across the Atlantic, whose requests take a round trip longer.
const std::vector<sim::ClientRegion> kClientRegions = {{"us-east", 0.0}, {"eu-west", 80.0}};

bool is_sim(const Measurement& m) { return m.labels.source == "sim"; }

// Batches of history records from the generator threads to the inserting thread; bounded, so
// generation never runs far ahead of the disk.
class BatchQueue {
  public:
    BatchQueue(std::size_t capacity, std::size_t producers)
        : capacity_(capacity), producers_(producers) {}
    // False once the queue was closed (the batch is dropped).
    bool push(std::vector<Measurement> batch) {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return closed_ || batches_.size() < capacity_; });
        if (closed_) return false;
        batches_.push_back(std::move(batch));
        changed_.notify_all();
        return true;
    }
    void producer_done() {
        std::lock_guard lock(mutex_);
        ++done_;
        changed_.notify_all();
    }
    void close() {
        std::lock_guard lock(mutex_);
        closed_ = true;
        changed_.notify_all();
    }
    // The next batch; nullopt once every producer is done and the queue is empty.
    std::optional<std::vector<Measurement>> pop() {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return !batches_.empty() || done_ == producers_; });
        if (batches_.empty()) return std::nullopt;
        auto batch = std::move(batches_.front());
        batches_.pop_front();
        changed_.notify_all();
        return batch;
    }

  private:
    const std::size_t capacity_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::vector<Measurement>> batches_;
    const std::size_t producers_;
    std::size_t done_ = 0;
    bool closed_ = false;
};

// The stamp of the first sim record in the query's order, read a page at a time so that a
// store holding much gateway traffic after its history is not read whole.
Result<std::optional<std::int64_t>> first_sim_record(store::MeasurementStore& store,
                                                     store::RecordQuery query) {
    query.limit = kPage;
    while (true) {
        std::optional<std::int64_t> found;
        std::size_t seen = 0;
        std::int64_t edge = 0;
        auto scanned = store.scan(query, [&](const Measurement& m) {
            ++seen;
            edge = m.ts_us;
            if (!found && is_sim(m)) found = m.ts_us;
        });
        if (!scanned) return scanned.error();
        if (found || seen < kPage) return found;
        // Go on from the last stamp seen: records sharing it are read again (harmless); a page
        // holding nothing but that stamp moves past it.
        if (query.newest_first) {
            query.to_ts_us = query.to_ts_us == edge + 1 ? edge : edge + 1;
        } else {
            query.from_ts_us = query.from_ts_us == edge ? edge + 1 : edge;
        }
    }
}

// The labels the demo's gateway gives the records of this provider (relay.cpp start_record).
Labels gateway_labels(const DemoProvider& p) {
    Labels labels;
    labels.provider = p.provider;
    labels.model = p.upstream_model;
    labels.endpoint = std::string(kDemoHost);
    labels.upstream_region = p.region;
    labels.api = std::string(dialect::to_string(p.api));
    return labels;
}

}  // namespace

const std::vector<DemoProvider>& demo_providers() {
    using Cache = gateway::ModelCache::Mode;
    static const std::vector<DemoProvider> providers = [] {
        std::vector<DemoProvider> list = {
            // Semantic: the faq traffic's reworded repeats hit too, and the Gateway page shows
            // the similarity histogram.
            {.profile = "gpt-4o-like",
             .provider = "openai-sim",
             .api = dialect::Api::openai,
             .upstream_model = "gpt-4o",
             .model = "gpt-4o",
             .region = "us-east-1",
             .fallback = "llama-sim",
             .cache = Cache::semantic},
            {.profile = "claude-3.5-sonnet-like",
             .provider = "anthropic-sim",
             .api = dialect::Api::anthropic,
             .upstream_model = "claude-3-5-sonnet-latest",
             .model = "claude-3-5-sonnet",
             .region = "us-west-2"},
            {.profile = "gemini-1.5-pro-like",
             .provider = "gemini-sim",
             .api = dialect::Api::gemini,
             .upstream_model = "gemini-1.5-pro",
             .model = "gemini-1.5-pro",
             .region = "us-central1"},
            {.profile = "llama-3-70b-like",
             .provider = "llama-sim",
             .api = dialect::Api::openai,
             .upstream_model = "llama-3-70b",
             .model = "llama-3-70b",
             .region = "us-east-1"},
        };
        // Self-hosted replicas of one model, as `hedge = "p95"`, `hedge_budget = 0.1` configure
        // them: the Gateway page's Routing section shows traffic leave the slow one and return.
        route::RoutingPolicy fleet;
        fleet.strategy = route::Strategy::latency;
        fleet.hedge.enabled = true;
        fleet.hedge.quantile = 0.95;
        fleet.hedge.min_delay_ns = 20'000'000;  // the config's hedge_min_delay default
        fleet.hedge.budget = 0.1;
        for (int replica = 1; replica <= 3; ++replica) {
            DemoProvider p{.profile = "llama-3-70b-like",
                           .provider = fmt::format("llama-replica-{}", replica),
                           .api = dialect::Api::openai,
                           .upstream_model = "llama-3-70b",
                           .model = "llama-3-70b-fleet",
                           .region = "us-east-1",
                           .routing = fleet,
                           .streamed_only = true,
                           .history = false};
            if (replica == 3) p.episodes.push_back(kFleetEpisode);
            list.push_back(std::move(p));
        }
        return list;
    }();
    return providers;
}

std::vector<std::string> demo_models() {
    std::vector<std::string> models;
    for (const DemoProvider& p : demo_providers()) {
        if (std::find(models.begin(), models.end(), p.model) == models.end())
            models.push_back(p.model);
    }
    return models;
}

DemoProfiles demo_profiles(const std::filesystem::path& profiles_dir,
                           std::optional<std::uint64_t> run_seed) {
    DemoProfiles loaded;
    for (const DemoProvider& p : demo_providers()) {
        sim::Profile profile = sim::load_profile(p.profile, profiles_dir);
        if (run_seed) profile.seed = sim::profile_seed_for_run(*run_seed, profile.name);
        profile.episodes.insert(profile.episodes.end(), p.episodes.begin(), p.episodes.end());
        loaded.profiles.push_back(std::move(profile));
    }
    loaded.replicas = sim::make_replicas_distinct(loaded.profiles);
    return loaded;
}

std::vector<bench::RunOptions> demo_traffic(const DemoOptions& options, std::uint16_t gateway_port,
                                            const std::vector<bench::Workload>& workloads,
                                            std::uint64_t seed) {
    const auto& providers = demo_providers();
    const std::vector<std::string> models = demo_models();
    const auto streamed_only = [&](const std::string& model) {
        return std::find_if(providers.begin(), providers.end(),
                            [&](const DemoProvider& p) { return p.model == model; })
            ->streamed_only;
    };
    const net::Url base =
        net::parse_url(fmt::format("http://{}:{}/v1", kDemoHost, gateway_port)).value();
    std::vector<bench::RunOptions> lanes;
    for (const bool streams : {false, true}) {
        bench::RunOptions run;
        for (const std::string& model : models) {
            if (streamed_only(model) != streams) continue;
            bench::Target target;
            target.name = model;
            target.api = dialect::Api::openai;
            target.base = base;
            target.model = model;
            run.targets.push_back(std::move(target));
        }
        if (run.targets.empty()) continue;
        for (const bench::Workload& w : workloads) {
            for (const bool stream : {true, false}) {
                if (streams && !stream) continue;
                bench::Workload variant = w;
                variant.stream = stream;
                run.mix.push_back(std::move(variant));
            }
        }
        run.workload = run.mix.front();
        run.rate = options.rate * static_cast<double>(run.targets.size()) /
                   static_cast<double>(models.size());
        run.arrival = bench::Arrival::poisson;
        run.preflight = false;  // the gateway and the sims are this process's own
        // The first lane keeps the run's seed; another lane draws a schedule of its own.
        run.seed = lanes.empty() ? seed : fnv1a64(fmt::format("{}:lane{}", seed, lanes.size()));
        run.threads = 1;
        run.task_header = true;
        lanes.push_back(std::move(run));
    }
    return lanes;
}

const std::vector<std::string>& demo_tasks() {
    static const std::vector<std::string> tasks = {"chat", "gen-500",      "long-context",
                                                   "code", "prefix-reuse", "faq"};
    return tasks;
}

serve::ServeConfig demo_serve_config(const DemoOptions& options,
                                     const std::vector<std::uint16_t>& sim_ports,
                                     const std::string& sim_key) {
    const auto& providers = demo_providers();
    assert(sim_ports.size() == providers.size());
    serve::ServeConfig serve;
    serve.store.path = options.db;
    // The dashboard's /api/v1, and anyone on this machine may submit records without a key
    // (the listener is loopback only), rate-limited per address as a public observatory is.
    serve.observatory.enabled = true;
    serve.observatory.ingest = observatory::IngestMode::open;
    gateway::GatewayConfig& c = serve.gateway;
    c.source = "tokenradar demo";
    c.host = std::string(kDemoHost);
    c.port = options.port;
    c.auth_required = false;  // loopback only
    c.dashboard = true;
    c.dashboard_dir = options.dashboard_dir;
    c.shutdown_grace = kGatewayGrace;
    // Every request of the demo comes from its own traffic: one tenant, whose answers the
    // cache may share (a keyless listener caches nothing without this).
    c.cache.keyless = true;
    for (std::size_t i = 0; i < providers.size(); ++i) {
        const DemoProvider& p = providers[i];
        gateway::ProviderConfig provider;
        provider.name = p.provider;
        provider.api = p.api;
        // Base URLs as each SDK writes them: OpenAI's includes /v1, the others' do not.
        const std::string base = fmt::format("http://{}:{}{}", kDemoHost, sim_ports[i],
                                             p.api == dialect::Api::openai ? "/v1" : "");
        provider.base = net::parse_url(base).value();
        provider.key = Secret(sim_key);
        provider.region = p.region;
        c.providers.push_back(std::move(provider));
    }
    for (const std::string& name : demo_models()) {
        gateway::VirtualModel model;
        model.name = name;
        const DemoProvider* first = nullptr;
        for (std::size_t i = 0; i < providers.size(); ++i) {
            if (providers[i].model != name) continue;
            if (!first) first = &providers[i];
            model.upstreams.push_back({i, providers[i].upstream_model});
        }
        assert(first);
        model.cache.mode = first->cache;
        model.routing = first->routing;
        for (std::size_t j = 0; j < providers.size(); ++j) {
            if (providers[j].provider == first->fallback)
                model.upstreams.push_back({j, providers[j].upstream_model});
        }
        c.models.push_back(std::move(model));
    }
    // Probes (README "Scheduled probes"): every sim's model once a minute from the demo's own
    // region label, so the observatory has source = "probe" rows beside the traffic's; and the
    // incident watch over the rollups (the history is its baseline).
    serve::ProbeConfig& probes = serve.probes;
    probes.workload = bench::load_workload(
        probes.workload_name,
        options.workloads_dir.empty() ? find_resource_dir("workloads") : options.workloads_dir);
    probes.region = "local";
    probes.interval = std::chrono::seconds(60);
    probes.jitter = std::chrono::seconds(10);
    for (std::size_t i = 0; i < providers.size(); ++i) {
        probes.targets.push_back({i, providers[i].upstream_model});
    }
    probes.max_requests_per_day = 1'440;
    probes.max_tokens_per_day = 100'000;
    serve::check_probe_cost(probes, nullptr);
    serve.incidents.enabled = true;
    return serve;
}

std::vector<sim::HistoryTask> history_tasks(const std::vector<bench::Workload>& workloads) {
    std::vector<sim::HistoryTask> tasks;
    for (const bench::Workload& w : workloads) {
        sim::HistoryTask task;
        task.name = w.task;
        task.max_tokens = w.max_tokens;
        task.prompt_tokens_min = std::numeric_limits<std::int64_t>::max();
        for (std::uint64_t i = 0; i < kPromptSamples; ++i) {
            const bench::PromptSpec prompt = bench::make_prompt(w, 1, i);
            // make_prompt puts a shared prefix into the system prompt, the same in every request.
            const std::int64_t system = estimate_tokens(prompt.system);
            task.shared_prefix_tokens = w.shared_prefix_tokens > 0 ? system : 0;
            const std::int64_t unique =
                system + estimate_tokens(prompt.user) - task.shared_prefix_tokens;
            task.prompt_tokens_min = std::min(task.prompt_tokens_min, unique);
            task.prompt_tokens_max = std::max(task.prompt_tokens_max, unique);
        }
        tasks.push_back(std::move(task));
    }
    return tasks;
}

Result<std::vector<TimeRange>> missing_history(store::MeasurementStore& store, std::int64_t from_us,
                                               std::int64_t to_us) {
    std::vector<TimeRange> out;
    if (to_us <= from_us) return out;
    store::RecordQuery query;
    query.from_ts_us = from_us;
    query.to_ts_us = to_us;
    auto oldest = first_sim_record(store, query);
    if (!oldest) return oldest.error();
    if (!*oldest) {
        out.push_back({from_us, to_us});
        return out;
    }
    query.newest_first = true;
    auto newest = first_sim_record(store, query);
    if (!newest) return newest.error();
    if (**oldest - from_us > kMinGapUs) out.push_back({from_us, **oldest});
    if (to_us - (**newest + 1) > kMinGapUs) out.push_back({**newest + 1, to_us});
    return out;
}

Result<std::size_t> write_history(store::MeasurementStore& store,
                                  const std::vector<sim::Profile>& profiles,
                                  const std::vector<sim::HistoryTask>& tasks, TimeRange range,
                                  double rate_per_s, std::uint64_t seed,
                                  const std::atomic<bool>& stop) {
    const auto& providers = demo_providers();
    assert(profiles.size() == providers.size());
    std::vector<std::size_t> with_history;
    for (std::size_t i = 0; i < providers.size(); ++i) {
        if (providers[i].history) with_history.push_back(i);
    }
    if (with_history.empty()) return std::size_t{0};
    // Drawing a record costs far more than inserting it (the model's per-token draws): the
    // providers' generators run on worker threads, one per core, and this thread inserts
    // their batches as they come.
    const auto workers =
        std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, with_history.size());
    BatchQueue queue(kQueuedBatches, workers);
    std::atomic<bool> abandon{false};
    std::mutex failure_mutex;
    std::optional<Error> failure;
    const auto fail = [&](Error e) {
        {
            std::lock_guard lock(failure_mutex);
            if (!failure) failure = std::move(e);
        }
        abandon = true;
        queue.close();
    };
    const auto generate = [&](std::size_t i) {
        sim::HistoryOptions options;
        options.from_us = range.from_us;
        options.to_us = range.to_us;
        options.rate_per_s = rate_per_s / static_cast<double>(with_history.size());
        // A top-up of the same store draws other records than the first fill.
        options.seed = fnv1a64(fmt::format("{}:{}:{}", seed, range.from_us, providers[i].provider));
        options.tasks = tasks;
        options.client_regions = kClientRegions;
        options.labels = gateway_labels(providers[i]);
        sim::HistoryGenerator generator(profiles[i], std::move(options));
        while (!stop.load() && !abandon.load()) {
            std::vector<Measurement> batch;
            batch.reserve(kBatch);
            if (generator.next(batch, kBatch) == 0 || !queue.push(std::move(batch))) return;
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            try {
                for (std::size_t k = w; k < with_history.size(); k += workers)
                    generate(with_history[k]);
            } catch (const std::exception& e) {
                fail(Error(Errc::internal, fmt::format("history: {}", e.what())));
            }
            queue.producer_done();
        });
    }
    std::size_t written = 0;
    while (auto batch = queue.pop()) {
        if (auto inserted = store.insert(*batch); !inserted) {
            fail(inserted.error());
            break;
        }
        written += batch->size();
    }
    for (auto& t : threads) t.join();
    if (failure) return *failure;
    return written;
}

}  // namespace tokenradar::demo
