#pragma once
// Benchmark workloads (workloads/*.toml): what each request asks for. Prompts are generated
// deterministically from (seed, request index) and are unique per request unless the
// workload says otherwise, so no cache flatters a result.

#include <boost/json/object.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::bench {

struct Workload {
    std::string name;
    std::string task;  // the `task` label of every record
    std::string description;
    std::int64_t max_tokens = 300;
    bool stream = true;
    std::optional<double> temperature;
    std::string system;                     // fixed system prompt (may be empty)
    std::int64_t shared_prefix_tokens = 0;  // a shared, deterministic system prefix of ~N tokens
    std::int64_t filler_tokens = 0;         // unique filler context of ~N tokens (long-context)
    std::string user_template;              // {topic}, {nonce} placeholders
    std::vector<std::string> topics;
    bool unique = true;  // add a per-request nonce
    // `[extra_body]`: fields merged into every request body (extra_body.hpp); a target's
    // extra fields win over these.
    boost::json::object extra_body;
};

// One request's prompt, ready for a dialect codec.
struct PromptSpec {
    std::string system;
    std::string user;
    std::int64_t max_tokens = 0;
    bool stream = true;
    std::optional<double> temperature;
};

// Loads a workload by name (workloads_dir/<name>.toml) or path. Throws ConfigError naming
// file, line and key.
Workload load_workload(std::string_view name_or_path, const std::filesystem::path& workloads_dir);

// The prompt of request `index` in a run seeded with `seed`. Pure and deterministic.
PromptSpec make_prompt(const Workload& w, std::uint64_t seed, std::uint64_t index);

}  // namespace tokenradar::bench
