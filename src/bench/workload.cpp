#include <tokenradar/bench/workload.hpp>

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/ids.hpp>

#include <fmt/format.h>

#include <array>
#include <random>

namespace tokenradar::bench {
namespace {

// Ordinary English words for filler text: the token estimate of 4 bytes per token holds
// roughly for them, and they tokenize like real prose on real providers.
constexpr std::array<std::string_view, 64> kWords = {
    "the",      "system",   "latency", "model",   "request", "answer",  "network", "token",
    "stream",   "provider", "region",  "measure", "careful", "quickly", "because", "between",
    "result",   "history",  "river",   "garden",  "market",  "window",  "silver",  "orange",
    "mountain", "evening",  "library", "kitchen", "teacher", "science", "journey", "picture",
    "morning",  "village",  "weather", "ancient", "machine", "thought", "balance", "process",
    "number",   "surface",  "pattern", "storage", "reading", "writing", "example", "problem",
    "simple",   "general",  "special", "certain", "natural", "average", "popular", "private",
    "public",   "central",  "western", "eastern", "digital", "written", "spoken",  "careful"};

std::string filler(std::uint64_t seed, std::int64_t tokens) {
    std::mt19937_64 rng(seed);
    std::string text;
    const auto target_bytes = static_cast<std::size_t>(tokens) * 4;
    text.reserve(target_bytes + 16);
    std::size_t words = 0;
    while (text.size() < target_bytes) {
        if (!text.empty()) text.push_back(' ');
        text.append(kWords[rng() % kWords.size()]);
        if (++words % 14 == 0) text.push_back('.');
    }
    return text;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

}  // namespace

Workload load_workload(std::string_view name_or_path, const std::filesystem::path& workloads_dir) {
    std::filesystem::path path(name_or_path);
    if (path.extension() != ".toml") path = workloads_dir / fmt::format("{}.toml", name_or_path);
    if (!std::filesystem::exists(path)) {
        throw ConfigError(fmt::format(
            "workload '{}': no file {} (give a workload name from {} or a path to a .toml file)",
            name_or_path, path.string(), workloads_dir.string()));
    }
    auto cfg = ConfigTable::load_file(path);
    cfg.reject_unknown_keys({"name", "task", "description", "max_tokens", "stream", "temperature",
                             "prompt", "extra_body"});
    Workload w;
    w.name = cfg.get_string("name", path.stem().string());
    w.task = cfg.get_string("task", w.name);
    w.description = cfg.get_string("description", "");
    w.max_tokens = cfg.get_integer("max_tokens", 300, 1, 1'000'000);
    w.stream = cfg.get_bool("stream", true);
    w.temperature = cfg.optional_number("temperature");
    if (w.temperature && (*w.temperature < 0 || *w.temperature > 2)) {
        cfg.fail("temperature", "a number from 0 to 2");
    }
    if (auto extra = cfg.json_object("extra_body")) w.extra_body = std::move(*extra);
    auto prompt = cfg.table("prompt");
    if (!prompt) cfg.fail("prompt", "a [prompt] table with at least `user`");
    prompt->reject_unknown_keys(
        {"system", "shared_prefix_tokens", "filler_tokens", "user", "topics", "unique"});
    w.system = prompt->get_string("system", "");
    w.shared_prefix_tokens = prompt->get_integer("shared_prefix_tokens", 0, 0, 1'000'000);
    w.filler_tokens = prompt->get_integer("filler_tokens", 0, 0, 2'000'000);
    w.user_template = prompt->require_string("user");
    w.topics = prompt->get_strings("topics");
    w.unique = prompt->get_bool("unique", true);
    if (w.user_template.find("{topic}") != std::string::npos && w.topics.empty()) {
        prompt->fail("topics", "a non-empty array of strings (prompt.user uses {topic})");
    }
    return w;
}

PromptSpec make_prompt(const Workload& w, std::uint64_t seed, std::uint64_t index) {
    PromptSpec p;
    p.max_tokens = w.max_tokens;
    p.stream = w.stream;
    p.temperature = w.temperature;
    // The shared prefix depends on the seed only, so every request of a run shares it.
    if (w.shared_prefix_tokens > 0) {
        p.system = filler(fnv1a64(fmt::format("{}:{}", w.name, seed)), w.shared_prefix_tokens);
        if (!w.system.empty()) p.system = fmt::format("{}\n\n{}", w.system, p.system);
    } else {
        p.system = w.system;
    }
    const std::uint64_t request_seed = fnv1a64(fmt::format("{}:{}", seed, index));
    std::string user = w.user_template;
    if (!w.topics.empty()) {
        user = replace_all(std::move(user), "{topic}", w.topics[request_seed % w.topics.size()]);
    }
    const std::string nonce = w.unique ? fmt::format("{:016x}", request_seed) : std::string("0");
    if (user.find("{nonce}") != std::string::npos) {
        user = replace_all(std::move(user), "{nonce}", nonce);
    } else if (w.unique) {
        user = fmt::format("[{}] {}", nonce, user);
    }
    if (w.filler_tokens > 0) {
        user = fmt::format("{}\n\n{}", filler(request_seed, w.filler_tokens), user);
    }
    p.user = std::move(user);
    return p;
}

}  // namespace tokenradar::bench
