#pragma once
// Benchmark workloads (workloads/*.toml): what each request asks for. Prompts are generated
// deterministically from (seed, sequence, request index) and are unique per request unless the
// workload says otherwise (`unique = false`, or `repeat_exact` / `repeat_reworded`: requests
// that ask an earlier request's question again, for response caches), so no cache flatters a
// result by accident.

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
    // How many distinct shared prefixes (applications with their own long system prompt): a
    // request takes one of them by its seed. 1 = every request shares the one prefix.
    std::int64_t shared_prefixes = 1;
    std::int64_t filler_tokens = 0;  // unique filler context of ~N tokens (long-context)
    std::string user_template;       // {topic}, {nonce} placeholders
    std::vector<std::string> topics;
    bool unique = true;  // add a per-request nonce; without it topics are asked in turn
    // Fractions of requests (0..1, sum <= 1) that re-ask an earlier request's question of their
    // sequence exactly, or reworded as a semantic cache should still recognise (reword()).
    double repeat_exact = 0;
    double repeat_reworded = 0;
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

// The prompt of request `index` of sequence `sequence` in a run seeded with `seed`. Pure and
// deterministic. A repeat re-asks an earlier index of the same (seed, sequence): a runner gives
// each stream of requests whose repeats should meet the same cache (a target and workload) its
// own sequence and counts its indexes from 0. The shared system prefix depends on the seed only.
PromptSpec make_prompt(const Workload& w, std::uint64_t seed, std::uint64_t index,
                       std::uint64_t sequence = 0);

// Where request `index`'s question comes from. `of` is the earlier request it repeats (itself
// for `fresh`); a reworded repeat rewords `of`'s question, which is always a fresh one; an
// exact repeat copies `of`'s prompt, which may itself be a rewording. Repeats pick among the
// kRepeatWindow requests before them (recent questions come back; a cache's TTL holds them).
enum class Repeat { fresh, exact, reworded };
struct PromptOrigin {
    Repeat repeat = Repeat::fresh;
    std::uint64_t of = 0;
};
inline constexpr std::uint64_t kRepeatWindow = 256;
PromptOrigin prompt_origin(const Workload& w, std::uint64_t seed, std::uint64_t index,
                           std::uint64_t sequence = 0);

// `text` reworded as people reword a question they ask again: casing, punctuation,
// whitespace, a polite prefix or suffix, a contraction ("what is" <-> "what's") and its
// sentences in another order. Never a number, a negation or any other word changes, so a
// semantic cache's lexical guard accepts it. `variant` picks the combination; the result
// always differs from `text`.
std::string reword(std::string_view text, std::uint64_t variant);

}  // namespace tokenradar::bench
