#pragma once
// A simulated provider's latency profile, loaded from a strict TOML file (profiles/README.md
// documents every key, unit and default). Loading throws ConfigError naming file:line:key.

#include <tokenradar/sim/peak_curve.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar {
class ConfigTable;
}

namespace tokenradar::sim {

// TTFT (before queueing) = (base_ms + prefill_ms_per_1k_tokens * uncached_prompt / 1000
//                           + LogNormal(median noise_median_ms, sigma noise_sigma)) * peak
// Median TTFT is therefore base + prefill + noise_median exactly (a constant shifts a median).
struct TtftParams {
    double base_ms = 0;
    double prefill_ms_per_1k_tokens = 0;
    double noise_median_ms = 0;
    double noise_sigma = 0;  // 0 = the noise is exactly noise_median_ms
};

struct DecodeParams {
    double tokens_per_s = 0;   // 0 = no decode delay (every token at the first token's time)
    double request_sigma = 0;  // per-request speed factor ~ LogNormal(median 1, sigma)
    double token_jitter = 0;   // coefficient of variation of the gaps inside one request
    int tokens_per_chunk_min = 1;
    int tokens_per_chunk_max = 1;
    std::int64_t default_max_tokens = 500;
    double stop_probability = 0;  // per token after the first; 0 = always run to max_tokens
};

struct CapacityParams {
    std::int64_t max_concurrent = 0;  // 0 = unlimited
    std::int64_t queue_limit = 0;     // waiting requests beyond this get 429
};

struct PrefixCacheParams {
    std::int64_t block_tokens = 16;
    std::int64_t capacity_blocks = 0;  // 0 = no cache
};

struct FaultParams {
    double rate_429 = 0;
    double rate_500 = 0;
    double rate_503 = 0;
    double rate_disconnect = 0;
    double rate_stall = 0;
    double stall_ms = 0;
    double rate_malformed = 0;
};

// What a request is answered with besides text. A request with response_format JSON always
// gets JSON text (real APIs honour it); tool calls follow the request's tool_choice, and
// this rate when the model may choose (tool_choice auto or absent).
struct AnswerParams {
    // Chance that a request declaring tools, whose tool_choice is auto and whose last message
    // is not a tool result, is answered with a call of one of its tools. 0 = text only.
    double tool_call_rate = 0;
};

// A heavy tail: with probability `rate` a request's TTFT is multiplied by `ttft_multiplier`,
// the extra time spent as a simulated queue wait (what real heavy tails are: a long queue).
struct TailParams {
    double rate = 0;
    double ttft_multiplier = 1;
};

// A replica's degraded condition, from a scheduled episode or the control endpoint
// (control.hpp): TTFT and every token gap multiplied, a fraction of requests answered 503.
// Applies to every request, x-sim-* overrides included: the replica is slow, whatever asks.
struct Condition {
    double ttft_multiplier = 1;
    double tpot_multiplier = 1;
    double error_rate = 0;

    [[nodiscard]] bool normal() const noexcept {
        return ttft_multiplier == 1 && tpot_multiplier == 1 && error_rate == 0;
    }
};

// A scheduled slowdown or failure: active from `after_ns` since the server started for
// `duration_ns`, and again every `every_ns` (0: once). every_ns > duration_ns.
struct Episode {
    std::int64_t after_ns = 0;
    std::int64_t duration_ns = 0;
    std::int64_t every_ns = 0;
    Condition condition;
};

struct Profile {
    std::string name;
    std::vector<std::string> models;  // the server answers 404 for any other model
    std::uint64_t seed = 0;           // default: fnv1a64(name)
    std::string source;               // file the profile came from (for messages)
    TtftParams ttft;
    DecodeParams decode;
    CapacityParams capacity;
    PeakCurve peak;
    PrefixCacheParams prefix_cache;
    FaultParams faults;
    AnswerParams answers;
    TailParams tail;
    std::vector<Episode> episodes;  // in file order; the first active one counts

    [[nodiscard]] bool serves(std::string_view model) const;
};

// `name_or_path` is a profile name ("gpt-4o-like" -> profiles_dir/gpt-4o-like.toml) when it
// has no '/' and no ".toml" suffix; otherwise a file path. Throws ConfigError.
Profile load_profile(std::string_view name_or_path, const std::filesystem::path& profiles_dir);

// The same from TOML text (tests, embedded profiles). Throws ConfigError.
Profile parse_profile(std::string_view toml_text, std::string source_name);

// From an already-parsed document. Throws ConfigError.
Profile profile_from_config(const ConfigTable& root);

// The seed a profile gets in a run seeded with `run_seed` (`--seed`): reproducible, and
// different for each profile of the run.
std::uint64_t profile_seed_for_run(std::uint64_t run_seed, std::string_view profile_name);

// Replicas: a run may serve one profile on several ports. Each profile whose seed an earlier
// one already has (another replica of it) gets a seed of its own, or the replicas would draw
// the same sequence request by request; the first keeps its seed, so a run of distinct
// profiles draws exactly as before. Returns each profile's replica index (0 for the first).
std::vector<unsigned> make_replicas_distinct(std::vector<Profile>& profiles);

// The seed of replica `replica` of a profile seeded `seed`: `seed` itself for replica 0.
std::uint64_t replica_seed(std::uint64_t seed, unsigned replica);

}  // namespace tokenradar::sim
