#include <tokenradar/gateway/config.hpp>

#include <tokenradar/core/labels.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/net/redis_protocol.hpp>
#include <tokenradar/net/server_tls.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <thread>

namespace tokenradar::gateway {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

milliseconds ms(const ConfigTable& t, std::string_view key, milliseconds fallback) {
    return duration_cast<milliseconds>(t.get_duration(key, fallback));
}

bool is_loopback(std::string_view host) {
    return host == "127.0.0.1" || host == "::1" || host == "localhost" ||
           host.substr(0, 4) == "127.";
}

ProviderConfig load_provider(const ConfigTable& t, const EnvLookup& getenv_fn) {
    t.reject_unknown_keys({"name", "api", "base_url", "key_env", "region", "connect_timeout",
                           "first_token_timeout", "idle_timeout", "total_timeout", "weight",
                           "max_in_flight", "max_tokens_per_minute"});
    ProviderConfig p;
    p.name = t.require_string("name");
    if (!is_simple_name(p.name)) t.fail("name", kSimpleNameRule);
    const std::string api = t.require_string("api");
    auto parsed_api = dialect::parse_api(api);
    if (!parsed_api) t.fail("api", "one of openai, anthropic, gemini");
    if (*parsed_api == dialect::Api::openai_responses) {
        // Clients speak it at the /v1/responses door; upstreams are asked in Chat Completions.
        t.fail("api",
               "one of openai, anthropic, gemini (openai-responses is a door the gateway "
               "serves, not an upstream dialect: an OpenAI upstream is api = \"openai\")");
    }
    p.api = *parsed_api;
    auto url = net::parse_url(t.require_string("base_url"));
    if (!url) t.fail("base_url", url.error().message);
    p.base = std::move(*url);
    if (p.base.target == "/") p.base.target.clear();
    while (!p.base.target.empty() && p.base.target.back() == '/') p.base.target.pop_back();
    p.key_env = t.get_string("key_env", std::string(dialect::default_key_env(p.api)));
    if (!p.key_env.empty()) {
        const char* value = getenv_fn(p.key_env.c_str());
        if (value == nullptr || *value == '\0') {
            t.fail("key_env", fmt::format("the name of a set environment variable ({} is not set; "
                                          "use key_env = \"\" for an upstream without a key)",
                                          p.key_env));
        }
        p.key = Secret(value);
    }
    p.region = t.get_string("region", "");
    if (!p.region.empty() && !is_simple_name(p.region)) t.fail("region", kSimpleNameRule);
    p.connect_timeout = ms(t, "connect_timeout", p.connect_timeout);
    p.first_token_timeout = ms(t, "first_token_timeout", p.first_token_timeout);
    p.idle_timeout = ms(t, "idle_timeout", p.idle_timeout);
    p.total_timeout = ms(t, "total_timeout", p.total_timeout);
    p.limits.weight = t.get_number("weight", 1.0, 0.01, 1000.0);
    p.limits.max_in_flight = t.get_integer("max_in_flight", 0, 0, 1'000'000);
    p.limits.max_tokens_per_minute = t.get_integer("max_tokens_per_minute", 0, 0, 1LL << 40);
    return p;
}

// "provider/model" naming a configured provider (an upstream or the embedder).
UpstreamRef upstream_ref(const ConfigTable& t, std::string_view key, const std::string& ref,
                         const std::vector<ProviderConfig>& providers) {
    // "provider/model": provider names have no '/', model names may ("meta-llama/...").
    const auto slash = ref.find('/');
    const std::string provider = ref.substr(0, slash);
    auto it = std::find_if(providers.begin(), providers.end(),
                           [&](const ProviderConfig& p) { return p.name == provider; });
    if (slash == std::string::npos || slash + 1 == ref.size() || it == providers.end()) {
        t.fail(key,
               fmt::format("\"PROVIDER/MODEL\" naming a configured provider (got \"{}\")", ref));
    }
    return {static_cast<std::size_t>(it - providers.begin()), ref.substr(slash + 1)};
}

// The cache_* and semantic_* keys of a [[models]] table.
ModelCache load_model_cache(const ConfigTable& t, const std::vector<ProviderConfig>& providers) {
    ModelCache c;
    const std::string mode = t.get_string("cache", "off");
    if (mode == "exact") {
        c.mode = ModelCache::Mode::exact;
    } else if (mode == "semantic") {
        c.mode = ModelCache::Mode::semantic;
    } else if (mode != "off") {
        t.fail("cache", "one of \"off\", \"exact\", \"semantic\"");
    }
    c.ttl = std::chrono::duration_cast<std::chrono::seconds>(t.get_duration("cache_ttl", c.ttl));
    if (c.ttl.count() < 1) t.fail("cache_ttl", "a duration of at least 1s");
    c.max_entry_bytes = static_cast<std::size_t>(t.get_integer(
        "cache_max_entry_bytes", static_cast<std::int64_t>(c.max_entry_bytes), 1, 64 << 20));
    const std::string replay = t.get_string("cache_replay", "instant");
    if (replay == "paced") {
        c.replay = ModelCache::Replay::paced;
    } else if (replay != "instant") {
        t.fail("cache_replay", "\"instant\" or \"paced\"");
    }
    c.sampling = t.get_bool("cache_sampling", c.sampling);
    if (t.optional_number("semantic_threshold")) {
        c.semantic_threshold = t.get_number("semantic_threshold", 1.0, 0.5, 1.0);
    }
    c.semantic_max_turns = static_cast<std::size_t>(t.get_integer(
        "semantic_max_turns", static_cast<std::int64_t>(c.semantic_max_turns), 1, 16));
    const std::string embedder = t.get_string("semantic_embedder", "builtin");
    if (embedder != "builtin") {
        c.embedder = upstream_ref(t, "semantic_embedder", embedder, providers);
        if (providers[c.embedder->provider].api != dialect::Api::openai) {
            t.fail("semantic_embedder", "\"builtin\" or an OpenAI-compatible provider's model");
        }
        if (!c.semantic_threshold) {
            t.fail("semantic_threshold",
                   "a similarity (0.5-1) calibrated for this embedder: an upstream model's "
                   "scale is not the built-in one's");
        }
    }
    return c;
}

// `prompt_cache`: "off" (default) or "auto" (dialect/prompt_cache.hpp).
dialect::PromptCache prompt_cache_mode(const ConfigTable& t) {
    const auto mode = dialect::parse_prompt_cache(t.get_string("prompt_cache", "off"));
    if (!mode) t.fail("prompt_cache", "\"off\" or \"auto\"");
    return mode.value_or(dialect::PromptCache::off);
}

std::int64_t ns(const ConfigTable& t, std::string_view key, std::int64_t fallback) {
    return t.get_duration(key, std::chrono::nanoseconds(fallback)).count();
}

// `hedge`: "off", "pNN" (the primary's recent TTFT percentile) or a fixed delay ("300ms").
route::HedgePolicy load_hedge(const ConfigTable& t) {
    route::HedgePolicy h;
    const std::string mode = t.get_string("hedge", "off");
    if (mode.size() == 3 && mode[0] == 'p' && std::isdigit(static_cast<unsigned char>(mode[1])) &&
        std::isdigit(static_cast<unsigned char>(mode[2]))) {
        const int percentile = (mode[1] - '0') * 10 + (mode[2] - '0');
        if (percentile < 50) t.fail("hedge", "a percentile from \"p50\" to \"p99\"");
        h.enabled = true;
        h.quantile = percentile / 100.0;
    } else if (mode != "off") {
        h.enabled = true;
        h.delay_ns = ns(t, "hedge", 0);
        if (h.delay_ns <= 0) {
            t.fail("hedge", "\"off\", a percentile (\"p95\") or a delay such as \"300ms\"");
        }
    }
    h.min_delay_ns = ns(t, "hedge_min_delay", 20'000'000);
    h.budget = t.get_number("hedge_budget", h.budget, 0.0, 1.0);
    h.tools = t.get_bool("hedge_tools", h.tools);
    return h;
}

// The local server of `offload` and its rules.
void load_offload(const ConfigTable& t, const std::vector<ProviderConfig>& providers,
                  VirtualModel& m) {
    const std::string ref = t.get_string("offload", "");
    for (std::string_view key : {"offload_max_prompt_tokens", "offload_max_tokens", "offload_tasks",
                                 "offload_max_in_flight", "offload_max_ttft"}) {
        if (ref.empty() && t.contains(key)) t.fail(key, "an `offload` upstream first");
    }
    if (ref.empty()) return;
    m.offload = upstream_ref(t, "offload", ref, providers);
    route::OffloadPolicy& o = m.routing.offload;
    o.enabled = true;
    o.max_prompt_tokens =
        t.get_integer("offload_max_prompt_tokens", o.max_prompt_tokens, 1, 10'000'000);
    o.max_tokens = t.get_integer("offload_max_tokens", o.max_tokens, 1, 10'000'000);
    o.tasks = t.get_strings("offload_tasks");
    for (const auto& task : o.tasks) {
        if (!is_simple_name(task)) t.fail("offload_tasks", kSimpleNameRule);
    }
    o.max_in_flight = t.get_integer("offload_max_in_flight", o.max_in_flight, 1, 1'000'000);
    o.max_ttft_ns = ns(t, "offload_max_ttft", 0);
}

// routing, hedge_*, ttft_deadline, affinity_*, offload_*.
void load_routing(const ConfigTable& t, const std::vector<ProviderConfig>& providers,
                  VirtualModel& m) {
    route::RoutingPolicy& r = m.routing;
    const std::string strategy = t.get_string("routing", "priority");
    if (strategy == "round_robin") {
        r.strategy = route::Strategy::round_robin;
    } else if (strategy == "latency") {
        r.strategy = route::Strategy::latency;
    } else if (strategy == "affinity") {
        r.strategy = route::Strategy::affinity;
    } else if (strategy != "priority") {
        t.fail("routing", "one of \"priority\", \"round_robin\", \"latency\", \"affinity\"");
    }
    r.hedge = load_hedge(t);
    r.ttft_deadline_ns = ns(t, "ttft_deadline", 0);
    r.nearest_region = t.get_bool("nearest_region", false);
    if (r.ttft_deadline_ns < 0) t.fail("ttft_deadline", "a duration, or \"0s\" for none");
    route::AffinityPolicy& a = r.affinity;
    a.block_bytes = static_cast<std::size_t>(t.get_integer(
        "affinity_block_bytes", static_cast<std::int64_t>(a.block_bytes), 16, 1 << 20));
    a.min_match = t.get_number("affinity_min_match", a.min_match, 0.0, 1.0);
    a.load_slack = t.get_integer("affinity_load_slack", a.load_slack, 0, 1'000'000);
    a.load_ratio = t.get_number("affinity_load_ratio", a.load_ratio, 1.0, 1000.0);
    load_offload(t, providers, m);
}

VirtualModel load_model(const ConfigTable& t, const std::vector<ProviderConfig>& providers) {
    t.reject_unknown_keys({"name",
                           "upstreams",
                           "task",
                           "prompt_cache",
                           "cache",
                           "cache_ttl",
                           "cache_max_entry_bytes",
                           "cache_replay",
                           "cache_sampling",
                           "semantic_threshold",
                           "semantic_max_turns",
                           "semantic_embedder",
                           "routing",
                           "hedge",
                           "hedge_min_delay",
                           "hedge_budget",
                           "hedge_tools",
                           "nearest_region",
                           "ttft_deadline",
                           "affinity_block_bytes",
                           "affinity_min_match",
                           "affinity_load_slack",
                           "affinity_load_ratio",
                           "offload",
                           "offload_max_prompt_tokens",
                           "offload_max_tokens",
                           "offload_tasks",
                           "offload_max_in_flight",
                           "offload_max_ttft"});
    VirtualModel m;
    m.name = t.require_string("name");
    if (m.name.empty() || m.name.size() > 256) t.fail("name", "a model name of 1-256 characters");
    m.task = t.get_string("task", "chat");
    if (!is_simple_name(m.task)) t.fail("task", kSimpleNameRule);
    m.prompt_cache = prompt_cache_mode(t);
    for (const std::string& ref : t.get_strings("upstreams")) {
        m.upstreams.push_back(upstream_ref(t, "upstreams", ref, providers));
    }
    if (m.upstreams.empty()) t.fail("upstreams", "at least one \"PROVIDER/MODEL\"");
    if (m.upstreams.size() > 63) t.fail("upstreams", "at most 63 upstreams");
    m.cache = load_model_cache(t, providers);
    load_routing(t, providers, m);
    return m;
}

// [listener]: the address, and the Host / Origin values accepted.
void read_listener(const ConfigTable& l, GatewayConfig& c) {
    l.reject_unknown_keys({"host", "port", "threads", "accept", "allowed_hosts", "cors_origins",
                           "tls_cert", "tls_key"});
    c.host = l.get_string("host", c.host);
    c.port = static_cast<std::uint16_t>(l.get_integer("port", c.port, 0, 65535));
    c.threads = static_cast<std::size_t>(l.get_integer("threads", 0, 0, 256));
    const std::string accept = l.get_string("accept", "deal");
    if (accept != "deal" && accept != "reuseport") {
        l.fail("accept", fmt::format("\"deal\" or \"reuseport\", not '{}'", accept));
    }
    c.accept_per_thread = accept == "reuseport";
    c.allowed_hosts = l.get_strings("allowed_hosts");
    for (const auto& h : c.allowed_hosts) {
        if (h.empty() || h.find_first_of(":/ ") != std::string::npos) {
            l.fail("allowed_hosts", fmt::format("host names without port or scheme, not '{}'", h));
        }
    }
    c.tls_cert_file = l.get_string("tls_cert", "");
    c.tls_key_file = l.get_string("tls_key", "");
    if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
        l.fail(c.tls_cert_file.empty() ? "tls_cert" : "tls_key",
               "a PEM file here too: listener.tls_cert and listener.tls_key go together");
    }
    if (!c.tls_cert_file.empty()) {
        // Read now, so a bad file stops the start (and --check-config) with its line.
        if (auto tls = net::ServerTls::load(c.tls_cert_file, c.tls_key_file); !tls) {
            const bool key = tls.error().message.rfind("tls_key", 0) == 0;
            l.fail(key ? "tls_key" : "tls_cert",
                   fmt::format("a PEM file that loads ({})", tls.error().message));
        }
    }
    c.cors_origins = l.get_strings("cors_origins");
    for (const auto& o : c.cors_origins) {
        if (o.rfind("http://", 0) != 0 && o.rfind("https://", 0) != 0) {
            l.fail("cors_origins",
                   fmt::format("origins such as \"https://app.example\", not '{}'", o));
        }
    }
}

// [auth]: "none" only on a loopback listener (read before).
void read_auth(const ConfigTable& a, GatewayConfig& c) {
    a.reject_unknown_keys({"mode", "keys", "admin_keys", "registry", "refresh"});
    const std::string mode = a.get_string("mode", "keys");
    if (mode != "keys" && mode != "none") a.fail("mode", "\"keys\" or \"none\"");
    c.auth_required = mode == "keys";
    if (!c.auth_required && !is_loopback(c.host)) {
        a.fail("mode", fmt::format("\"keys\": auth = \"none\" is allowed only on a loopback "
                                   "listener, not {}",
                                   c.host));
    }
    c.client_keys = net::load_api_keys(a.tables("keys"));
    c.admin_keys = net::load_api_keys(a.tables("admin_keys"));
    for (const auto& admin : c.admin_keys) {
        for (const auto& client : c.client_keys) {
            if (admin.sha256 == client.sha256) {
                a.fail("admin_keys", fmt::format("a key of its own: '{}' is also client key '{}'",
                                                 admin.name, client.name));
            }
        }
    }
    c.key_registry = a.get_string("registry", c.key_registry);
    if (c.key_registry.empty()) {
        a.fail("registry", "\"auto\", \"off\", a file path or a postgresql:// URL");
    }
    c.keys_refresh = ms(a, "refresh", c.keys_refresh);
    if (c.keys_refresh < std::chrono::milliseconds(100) ||
        c.keys_refresh > std::chrono::minutes(10)) {
        a.fail("refresh", "a duration from \"100ms\" to \"10m\"");
    }
}

void read_limits(const ConfigTable& l, GatewayConfig& c) {
    l.reject_unknown_keys({"max_body_bytes", "max_body_bytes_in_flight", "max_concurrent_per_key",
                           "heartbeat_interval", "header_timeout", "idle_timeout", "shutdown_grace",
                           "redis", "redis_timeout"});
    c.max_body_bytes = static_cast<std::size_t>(l.get_integer(
        "max_body_bytes", static_cast<std::int64_t>(c.max_body_bytes), 1024, 1 << 30));
    c.max_body_bytes_in_flight = static_cast<std::size_t>(l.get_integer(
        "max_body_bytes_in_flight", static_cast<std::int64_t>(c.max_body_bytes_in_flight), 1024,
        std::int64_t{1} << 40));
    c.max_concurrent_per_key = static_cast<std::size_t>(
        l.get_integer("max_concurrent_per_key", static_cast<std::int64_t>(c.max_concurrent_per_key),
                      1, 1'000'000));
    c.heartbeat_interval = ms(l, "heartbeat_interval", c.heartbeat_interval);
    c.header_timeout = ms(l, "header_timeout", c.header_timeout);
    c.idle_timeout = ms(l, "idle_timeout", c.idle_timeout);
    c.shutdown_grace = ms(l, "shutdown_grace", c.shutdown_grace);
    if (auto redis = l.optional_string("redis")) {
        if (!redis->empty()) {
            if (auto url = net::parse_redis_url(*redis); !url) l.fail("redis", url.error().message);
        }
        c.limits_redis_url = std::move(*redis);
        c.limits_redis_set = true;
    }
    c.limits_redis_timeout = ms(l, "redis_timeout", c.limits_redis_timeout);
}

void read_cache(const ConfigTable& t, GatewayConfig& c) {
    t.reject_unknown_keys({"memory_bytes", "redis", "redis_timeout", "keyless",
                           "semantic_max_entries", "local", "local_bytes"});
    c.cache.memory_bytes = static_cast<std::size_t>(
        t.get_integer("memory_bytes", static_cast<std::int64_t>(c.cache.memory_bytes), 1 << 20,
                      std::int64_t{1} << 40));
    c.cache.redis_url = t.get_string("redis", "");
    if (!c.cache.redis_url.empty()) {
        if (auto url = net::parse_redis_url(c.cache.redis_url); !url) {
            t.fail("redis", url.error().message);
        }
    }
    c.cache.redis_timeout = ms(t, "redis_timeout", c.cache.redis_timeout);
    c.cache.local = t.get_string("local", c.cache.local);
    if (c.cache.local.empty()) t.fail("local", "\"auto\", \"off\" or a file path");
    if (!c.cache.redis_url.empty() && c.cache.local != "auto" && c.cache.local != "off") {
        t.fail("local", "\"auto\" or \"off\" with redis set (choose one shared tier)");
    }
    c.cache.local_bytes = static_cast<std::uint64_t>(
        t.get_integer("local_bytes", static_cast<std::int64_t>(c.cache.local_bytes), 1 << 20,
                      std::int64_t{1} << 50));
    c.cache.keyless = t.get_bool("keyless", c.cache.keyless);
    c.cache.semantic_max_entries = static_cast<std::size_t>(
        t.get_integer("semantic_max_entries",
                      static_cast<std::int64_t>(c.cache.semantic_max_entries), 1, 100'000'000));
}

// [[providers]] and the [[models]] that route to them; names are unique within each.
void read_upstreams(const ConfigTable& root, const EnvLookup& getenv_fn, GatewayConfig& c) {
    std::set<std::string> provider_names;
    for (const ConfigTable& p : root.tables("providers")) {
        c.providers.push_back(load_provider(p, getenv_fn));
        if (!provider_names.insert(c.providers.back().name).second) {
            p.fail("name", "a name not used by another provider");
        }
    }
    std::set<std::string> model_names;
    for (const ConfigTable& m : root.tables("models")) {
        c.models.push_back(load_model(m, c.providers));
        if (!model_names.insert(c.models.back().name).second) {
            m.fail("name", "a name not used by another model");
        }
    }
}

// A gateway with providers needs models (none at all is an observatory alone: serve's check).
void check_has_models(const GatewayConfig& c) {
    if (!c.providers.empty() && c.models.empty()) {
        throw ConfigError(
            fmt::format("{}: models: expected at least one [[models]] table", c.source));
    }
}

}  // namespace

bool has_key_registry(const GatewayConfig& c) {
    return c.key_registry != "off" && (!c.admin_keys.empty() || c.key_registry != "auto");
}

bool any_model_caches(const GatewayConfig& config) {
    for (const auto& m : config.models) {
        if (m.cache.mode != ModelCache::Mode::off) return true;
    }
    return false;
}

const VirtualModel* GatewayConfig::find_model(std::string_view name) const {
    for (const auto& m : models) {
        if (m.name == name) return &m;
    }
    return nullptr;
}

GatewayConfig load_gateway_config(const ConfigTable& root, const EnvLookup& getenv_fn) {
    GatewayConfig c;
    c.source = root.source_name();
    if (auto listener = root.table("listener")) read_listener(*listener, c);
    if (auto auth = root.table("auth")) read_auth(*auth, c);
    if (c.auth_required && c.client_keys.empty() && !has_key_registry(c)) {
        throw ConfigError(fmt::format(
            "{}: auth: expected at least one [[auth.keys]] entry, [[auth.admin_keys]] to create "
            "keys at run time, or [auth] mode = \"none\" on a loopback listener",
            c.source));
    }
    if (auto limits = root.table("limits")) read_limits(*limits, c);
    if (auto d = root.table("dashboard")) {
        d->reject_unknown_keys({"enabled", "dir"});
        c.dashboard = d->get_bool("enabled", c.dashboard);
        c.dashboard_dir = d->get_string("dir", "");
    }
    if (auto cache = root.table("cache")) read_cache(*cache, c);
    // Limits share the cache's Redis unless [limits] says otherwise ("" = local buckets).
    if (!c.limits_redis_set) c.limits_redis_url = c.cache.redis_url;
    read_upstreams(root, getenv_fn, c);
    check_has_models(c);
    return c;
}

namespace {

// ", routing latency, hedge after p95 (budget 10%), ..." for a model's line; "" for priority
// routing with nothing else.
std::string describe_routing(const GatewayConfig& c, const VirtualModel& m) {
    const route::RoutingPolicy& r = m.routing;
    std::string out;
    if (r.strategy != route::Strategy::priority) {
        out += fmt::format(", routing {}", route::to_string(r.strategy));
    }
    if (r.hedge.enabled) {
        out += r.hedge.delay_ns > 0
                   ? fmt::format(", hedge after {} ms", r.hedge.delay_ns / 1'000'000)
                   : fmt::format(", hedge after the TTFT p{:g}", r.hedge.quantile * 100);
        out += fmt::format(" (budget {:g}%)", r.hedge.budget * 100);
    }
    if (r.ttft_deadline_ns > 0) {
        out += fmt::format(", TTFT deadline {} ms", r.ttft_deadline_ns / 1'000'000);
    }
    if (r.nearest_region) out += ", nearest region";
    if (m.offload) {
        out += fmt::format(", offload to {}/{}", c.providers[m.offload->provider].name,
                           m.offload->model);
    }
    return out;
}

}  // namespace

std::size_t io_threads(const GatewayConfig& config) {
    if (config.threads > 0) return config.threads;
    return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

std::string describe(const GatewayConfig& c, std::string_view services) {
    std::string out = fmt::format(
        "{}: valid\nlistener  {}://{}:{}, {} I/O thread(s){}\n", c.source,
        c.tls_cert_file.empty() ? "http" : "https", c.host, c.port, io_threads(c),
        c.tls_cert_file.empty() ? std::string() : fmt::format(", certificate {}", c.tls_cert_file));
    out += c.auth_required ? fmt::format("auth      {} client key(s)\n", c.client_keys.size())
                           : std::string("auth      none (loopback only)\n");
    out += fmt::format("limits    body {} bytes, {} concurrent per key, heartbeat {} ms\n",
                       c.max_body_bytes, c.max_concurrent_per_key, c.heartbeat_interval.count());
    if (!c.admin_keys.empty() || !c.key_registry_shown.empty()) {
        out += fmt::format(
            "keys      {} admin key(s), registry {}, read every {} ms{}\n", c.admin_keys.size(),
            c.key_registry_shown.empty() ? std::string("none") : c.key_registry_shown,
            c.keys_refresh.count(),
            c.limits_redis_url.empty() ? std::string(", limits per node")
                                       : ", limits shared in redis " +
                                             net::parse_redis_url(c.limits_redis_url)->authority());
    }
    out += services;
    if (c.providers.empty()) out += "gateway   off (no providers): observatory only\n";
    for (const auto& p : c.providers) {
        out += fmt::format("provider  {} = {} {}://{}{} key {}{}\n", p.name,
                           dialect::to_string(p.api), p.base.scheme, p.base.authority(),
                           p.base.target, p.key_env.empty() ? "none" : "from $" + p.key_env,
                           p.region.empty() ? "" : ", region " + p.region);
    }
    bool caches = false;
    for (const auto& m : c.models) {
        out += fmt::format("model     {} (task {}) ->", m.name, m.task);
        for (const auto& u : m.upstreams)
            out += fmt::format(" {}/{}", c.providers[u.provider].name, u.model);
        if (m.cache.mode != ModelCache::Mode::off) {
            caches = true;
            out += fmt::format(", cache {} for {} s",
                               m.cache.mode == ModelCache::Mode::semantic ? "semantic" : "exact",
                               m.cache.ttl.count());
        }
        out += describe_routing(c, m);
        out += '\n';
    }
    if (caches) {
        // The Redis URL's host and port only: its user info may hold a password.
        const auto redis = c.cache.redis_url.empty()
                               ? std::optional<net::RedisUrl>()
                               : net::parse_redis_url(c.cache.redis_url).value();
        std::string shared;
        if (redis) {
            shared = ", shared redis " + redis->authority();
        } else if (!c.cache.local_path.empty()) {
            shared = fmt::format(", shared local file {} (at most {} MiB)",
                                 c.cache.local_path.string(), c.cache.local_bytes >> 20);
        }
        out += fmt::format("cache     memory {} MiB{}{}\n", c.cache.memory_bytes >> 20, shared,
                           !c.auth_required && !c.cache.keyless
                               ? " (keyless listener without [cache] keyless: nothing cached)"
                               : "");
    }
    return out;
}

}  // namespace tokenradar::gateway
