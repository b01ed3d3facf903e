#pragma once
// The gateway's part of `tokenradar serve --config FILE`: listener, limits, client keys,
// dashboard, providers and virtual models (serve/config.hpp adds [store] and [observatory]).
// Loading validates everything and throws ConfigError naming file:line and the dotted key;
// nothing is checked lazily at request time. Upstream keys are read from the environment
// here, once, into Secrets.

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/prompt_cache.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/net/url.hpp>
#include <tokenradar/route/router.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::gateway {

struct ProviderConfig {
    std::string name;  // the `provider` label
    dialect::Api api = dialect::Api::openai;
    net::Url base;        // base URL; its path is the API base path ("/v1", "")
    std::string key_env;  // environment variable holding the key; "" = send no key
    Secret key;
    std::string region;  // the `upstream_region` label
    std::chrono::milliseconds connect_timeout{5'000};
    std::chrono::milliseconds first_token_timeout{60'000};  // upstream headers -> first token
    std::chrono::milliseconds idle_timeout{60'000};         // between upstream chunks
    std::chrono::milliseconds total_timeout{600'000};
    route::UpstreamLimits limits;  // weight and caps, per (this provider, one model)
};

struct UpstreamRef {
    std::size_t provider = 0;  // index into GatewayConfig::providers
    std::string model;         // the upstream's model name
};

// The response cache of one virtual model (README "Response cache").
struct ModelCache {
    enum class Mode { off, exact, semantic };  // semantic tries exact first
    enum class Replay { instant, paced };      // a hit's stream: at once, or the original gaps
    Mode mode = Mode::off;
    std::chrono::seconds ttl{3600};
    std::size_t max_entry_bytes = 1024 * 1024;  // an answer's text; larger ones are not stored
    Replay replay = Replay::instant;
    bool sampling = false;  // also cache sampled answers (temperature over 0, no seed)
    // Semantic: a hit needs this cosine similarity (and the lexical guard); only conversations
    // of up to `semantic_max_turns` user turns are embedded. Unset: the built-in embedder's
    // calibrated threshold (an upstream embedder's scale differs: the config must set it).
    std::optional<double> semantic_threshold;
    std::size_t semantic_max_turns = 1;
    std::optional<UpstreamRef> embedder;  // an OpenAI-compatible /v1/embeddings; none: built-in
};

struct VirtualModel {
    std::string name;                    // what clients put in "model"
    std::vector<UpstreamRef> upstreams;  // priority order: primary, then fallbacks
    // README "Routing": the strategy over `upstreams`, hedging, the TTFT deadline, affinity,
    // and the local server short requests are offloaded to (`offload`, policy.offload).
    route::RoutingPolicy routing;
    std::optional<UpstreamRef> offload;
    std::string task = "chat";  // default `task` label (x-tokenradar-task overrides)
    ModelCache cache;
    // "auto": Anthropic cache breakpoints on long stable prefixes the client left unmarked.
    dialect::PromptCache prompt_cache = dialect::PromptCache::off;
};

// [cache]: what every model's cache shares.
struct CacheConfig {
    std::size_t memory_bytes = 256U * 1024 * 1024;  // the in-process tier (L1)
    std::string redis_url;                          // the shared tier (L2); "" = none
    std::chrono::milliseconds redis_timeout{50};    // per command: an outage costs at most this
    // Without Redis, the shared tier in a local file: "auto" (beside the store: serve
    // resolves it), "off", or a path. A path together with `redis` is refused.
    std::string local = "auto";
    std::uint64_t local_bytes = std::uint64_t{1} << 30;  // the file's values, at most
    // The file the local tier uses, "" = none: `local` resolved by serve::load_serve_config
    // (it knows the store's path), and only when a model caches.
    std::filesystem::path local_path;
    // A keyless listener has one tenant for every client: its answers are shared only when
    // this says so.
    bool keyless = false;
    std::size_t semantic_max_entries = 100'000;  // over all models and tenants
};

using ClientKey = net::ApiKey;

struct GatewayConfig {
    std::string source;  // the file it came from, for messages

    // [listener]
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    // I/O threads, each with its own connections and upstream pools; 0 = one per core
    // (io_threads() resolves it).
    std::size_t threads = 0;
    // How new connections reach the threads: the first thread accepts and deals them
    // round-robin (false), or every thread accepts on its own SO_REUSEPORT socket (true,
    // `accept = "reuseport"`).
    bool accept_per_thread = false;
    // Host names a keyless listener answers besides localhost, 127.0.0.1, [::1] and `host`
    // (a page on another name reaching it through DNS rebinding gets 403).
    std::vector<std::string> allowed_hosts;
    // Browser origins answered with CORS headers ("https://app.example"); none by default.
    std::vector<std::string> cors_origins;
    // HTTPS on the listener: a PEM certificate chain and its private key (both or neither;
    // re-read on SIGHUP). Empty: plain HTTP.
    std::string tls_cert_file;
    std::string tls_key_file;

    // [auth]: mode "keys" (default) or "none" (loopback listeners only)
    bool auth_required = true;
    std::vector<ClientKey> client_keys;
    // Who may use the admin API (/admin/v1/keys): its own keys, never a client key's.
    std::vector<ClientKey> admin_keys;
    // The virtual key registry (README "Keys, limits and budgets"): "auto" (when admin_keys
    // are set: beside a SQLite store, tokenradar.db -> tokenradar.keys.db; in a PostgreSQL
    // store's database), "off", a file path or a postgresql:// URL.
    std::string key_registry = "auto";
    // `key_registry` resolved by serve::load_serve_config: a SQLite file or a PostgreSQL URL
    // (neither = none), and how the startup summary names it (a URL's password redacted).
    std::filesystem::path key_registry_path;
    std::string key_registry_url;
    std::string key_registry_shown;
    // How often a node reads the registry (keys created, rotated or revoked elsewhere; every
    // node's usage) and writes its own usage: the staleness bound of another node's change.
    std::chrono::milliseconds keys_refresh{2'000};

    // [limits]
    std::size_t max_body_bytes = 4 * 1024 * 1024;
    std::size_t max_body_bytes_in_flight =
        256 * 1024 * 1024;                     // all connections' bodies (503 beyond)
    std::size_t max_concurrent_per_key = 256;  // in-flight requests per client key (429 beyond)
    std::chrono::milliseconds heartbeat_interval{15'000};  // SSE comment while upstream is silent
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds idle_timeout{60'000};  // keep-alive idle between client requests
    std::chrono::milliseconds shutdown_grace{10'000};
    // Virtual keys' rpm/tpm buckets shared by every node (`[limits] redis`, by default
    // `[cache] redis`); "" = each node's own buckets.
    std::string limits_redis_url;
    std::chrono::milliseconds limits_redis_timeout{50};
    bool limits_redis_set = false;  // [limits] redis was given (else the cache's is used)

    // [dashboard]: web/dist served at "/"; "" = found beside the binary (resource_dir.hpp)
    bool dashboard = true;
    std::filesystem::path dashboard_dir;

    CacheConfig cache;
    std::vector<ProviderConfig> providers;
    std::vector<VirtualModel> models;

    const VirtualModel* find_model(std::string_view name) const;
};

// Whether virtual keys may come from a registry: admin keys set (they create keys), or a
// registry file named; and not `registry = "off"`.
bool has_key_registry(const GatewayConfig& config);

// Whether any model has a response cache.
bool any_model_caches(const GatewayConfig& config);

// Reads the environment variable of each provider's key_env through `getenv` (tests pass
// their own). Throws ConfigError.
using EnvLookup = std::function<const char*(const char*)>;
// Reads the gateway's tables of `root`: [listener], [auth], [limits], [dashboard],
// [[providers]], [[models]]. Other keys of `root` are the caller's to read and check
// (serve::load_serve_config), and so is whether no providers at all is fine.
GatewayConfig load_gateway_config(const ConfigTable& root, const EnvLookup& getenv_fn);

// The number of I/O threads `serve` runs: `threads`, or one per core when it is 0.
std::size_t io_threads(const GatewayConfig& config);

// A human-readable account of a valid configuration for --check-config (no secrets: key
// variables are named, never printed). `services` (lines for what runs beside the gateway:
// the store, the observatory) comes after the limits.
std::string describe(const GatewayConfig& config, std::string_view services = {});

}  // namespace tokenradar::gateway
