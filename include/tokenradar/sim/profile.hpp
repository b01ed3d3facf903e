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

}  // namespace tokenradar::sim
