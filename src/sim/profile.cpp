#include <tokenradar/sim/profile.hpp>

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/ids.hpp>

#include <fmt/format.h>

#include "rng.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tokenradar::sim {
namespace {

// Ranges are generous but catch unit mistakes (seconds written as ms, a rate in percent).
constexpr double kMaxMs = 600'000;  // 10 minutes
constexpr double kMaxSigma = 3.0;   // lognormal sigma; e^3 = 20x between median and +1 sd

TtftParams read_ttft(const ConfigTable& t) {
    t.reject_unknown_keys(
        {"base_ms", "prefill_ms_per_1k_tokens", "noise_median_ms", "noise_sigma"});
    TtftParams p;
    p.base_ms = t.get_number("base_ms", 0, 0, kMaxMs);
    p.prefill_ms_per_1k_tokens = t.get_number("prefill_ms_per_1k_tokens", 0, 0, kMaxMs);
    p.noise_median_ms = t.get_number("noise_median_ms", 0, 0, kMaxMs);
    p.noise_sigma = t.get_number("noise_sigma", 0, 0, kMaxSigma);
    return p;
}

DecodeParams read_decode(const ConfigTable& t) {
    t.reject_unknown_keys({"tokens_per_s", "request_sigma", "token_jitter", "tokens_per_chunk",
                           "default_max_tokens", "stop_probability"});
    DecodeParams p;
    p.tokens_per_s = t.get_number("tokens_per_s", 0, 0, 1e6);
    if (p.tokens_per_s > 0 && p.tokens_per_s < 0.01) {
        t.fail("tokens_per_s", "0 (no decode delay) or a number from 0.01 to 1000000");
    }
    p.request_sigma = t.get_number("request_sigma", 0, 0, kMaxSigma);
    p.token_jitter = t.get_number("token_jitter", 0, 0, 10);
    constexpr std::int64_t kMaxChunk = 4096;
    if (t.contains("tokens_per_chunk")) {
        // Either an integer or a [min, max] range. ConfigTable has no type query, so try the
        // array first; anything else goes through get_integer, whose error names the key.
        std::vector<double> range;
        try {
            range = t.get_numbers("tokens_per_chunk");
        } catch (const ConfigError&) {
            auto v = t.get_integer("tokens_per_chunk", 1, 1, kMaxChunk);
            range = {static_cast<double>(v), static_cast<double>(v)};
        }
        auto is_count = [](double v) { return v >= 1 && v <= kMaxChunk && v == std::floor(v); };
        if (range.size() != 2 || !is_count(range[0]) || !is_count(range[1]) ||
            range[0] > range[1]) {
            t.fail("tokens_per_chunk",
                   fmt::format("an integer from 1 to {} or a range [min, max] of such integers "
                               "with min <= max",
                               kMaxChunk));
        }
        p.tokens_per_chunk_min = static_cast<int>(range[0]);
        p.tokens_per_chunk_max = static_cast<int>(range[1]);
    }
    p.default_max_tokens = t.get_integer("default_max_tokens", 500, 1, 1'000'000);
    p.stop_probability = t.get_number("stop_probability", 0, 0, 1);
    return p;
}

CapacityParams read_capacity(const ConfigTable& t) {
    t.reject_unknown_keys({"max_concurrent", "queue_limit"});
    CapacityParams p;
    p.max_concurrent = t.get_integer("max_concurrent", 0, 0, 1'000'000);
    p.queue_limit = t.get_integer("queue_limit", 0, 0, 10'000'000);
    return p;
}

PeakCurve read_peak(const ConfigTable& t) {
    t.reject_unknown_keys({"timezone", "hourly", "weekdays_only"});
    std::string tz = t.require_string("timezone");
    auto hourly = t.get_numbers("hourly");
    if (hourly.size() != 24) {
        t.fail("hourly", fmt::format("an array of 24 multipliers (index = local hour), got {} "
                                     "values",
                                     hourly.size()));
    }
    for (double f : hourly) {
        if (!(f > 0.0 && f <= 100.0)) t.fail("hourly", "24 multipliers each in (0, 100]");
    }
    bool weekdays_only = t.get_bool("weekdays_only", false);
    std::array<double, 24> h{};
    std::copy(hourly.begin(), hourly.end(), h.begin());
    try {
        return PeakCurve(std::move(tz), h, weekdays_only);
    } catch (const std::invalid_argument&) {
        t.fail("timezone", "an IANA time zone name such as America/New_York");
    }
}

PrefixCacheParams read_prefix_cache(const ConfigTable& t) {
    t.reject_unknown_keys({"block_tokens", "capacity_blocks"});
    PrefixCacheParams p;
    p.block_tokens = t.get_integer("block_tokens", 16, 1, 1'000'000);
    p.capacity_blocks = t.get_integer("capacity_blocks", 0, 0, 100'000'000);
    return p;
}

FaultParams read_faults(const ConfigTable& t) {
    t.reject_unknown_keys({"rate_429", "rate_500", "rate_503", "rate_disconnect", "rate_stall",
                           "stall_ms", "rate_malformed"});
    FaultParams p;
    p.rate_429 = t.get_number("rate_429", 0, 0, 1);
    p.rate_500 = t.get_number("rate_500", 0, 0, 1);
    p.rate_503 = t.get_number("rate_503", 0, 0, 1);
    p.rate_disconnect = t.get_number("rate_disconnect", 0, 0, 1);
    p.rate_stall = t.get_number("rate_stall", 0, 0, 1);
    p.stall_ms = t.get_number("stall_ms", 5000, 0, kMaxMs);
    p.rate_malformed = t.get_number("rate_malformed", 0, 0, 1);
    double sum =
        p.rate_429 + p.rate_500 + p.rate_503 + p.rate_disconnect + p.rate_stall + p.rate_malformed;
    if (sum > 1.0 + 1e-12) {
        // Name the first rate present, so the message carries a line number.
        for (std::string_view key : {"rate_429", "rate_500", "rate_503", "rate_disconnect",
                                     "rate_stall", "rate_malformed"}) {
            if (t.contains(key)) {
                t.fail(key, fmt::format("fault rates that sum to at most 1 (they sum to {})", sum));
            }
        }
    }
    return p;
}

AnswerParams read_answers(const ConfigTable& t) {
    t.reject_unknown_keys({"tool_call_rate"});
    AnswerParams p;
    p.tool_call_rate = t.get_number("tool_call_rate", 0, 0, 1);
    return p;
}

// Slower than this is a dead replica, which a stop of the sim simulates better.
constexpr double kMaxMultiplier = 1000;

TailParams read_tail(const ConfigTable& t) {
    t.reject_unknown_keys({"rate", "ttft_multiplier"});
    TailParams p;
    p.rate = t.get_number("rate", 0, 0, 1);
    p.ttft_multiplier = t.get_number("ttft_multiplier", 1, 1, kMaxMultiplier);
    return p;
}

std::int64_t read_span(const ConfigTable& t, std::string_view key, bool required) {
    if (required && !t.contains(key)) t.fail(key, "a duration such as \"20s\" or \"5m\"");
    return t.get_duration(key, std::chrono::nanoseconds(0)).count();
}

Episode read_episode(const ConfigTable& t) {
    t.reject_unknown_keys(
        {"after", "duration", "every", "ttft_multiplier", "tpot_multiplier", "error_rate"});
    Episode e;
    e.after_ns = read_span(t, "after", false);
    e.duration_ns = read_span(t, "duration", true);
    if (e.duration_ns <= 0) t.fail("duration", "a duration longer than 0, such as \"20s\"");
    e.every_ns = read_span(t, "every", false);
    if (t.contains("every") && e.every_ns <= e.duration_ns) {
        t.fail("every", "a repeat period longer than the episode's duration");
    }
    e.condition.ttft_multiplier = t.get_number("ttft_multiplier", 1, 1, kMaxMultiplier);
    e.condition.tpot_multiplier = t.get_number("tpot_multiplier", 1, 1, kMaxMultiplier);
    e.condition.error_rate = t.get_number("error_rate", 0, 0, 1);
    return e;
}

}  // namespace

bool Profile::serves(std::string_view model) const {
    return std::find(models.begin(), models.end(), model) != models.end();
}

Profile profile_from_config(const ConfigTable& root) {
    root.reject_unknown_keys({"name", "models", "seed", "ttft", "decode", "capacity", "peak",
                              "prefix_cache", "faults", "answers", "tail", "episodes"});
    Profile p;
    p.source = root.source_name();
    p.name = root.require_string("name");
    if (p.name.empty()) root.fail("name", "a non-empty string");
    if (!root.contains("models")) root.fail("models", "an array of model names");
    p.models = root.get_strings("models");
    if (p.models.empty()) root.fail("models", "at least one model name");
    p.seed = root.contains("seed") ? static_cast<std::uint64_t>(root.get_integer(
                                         "seed", 0, 0, std::numeric_limits<std::int64_t>::max()))
                                   : fnv1a64(p.name);
    if (auto t = root.table("ttft")) p.ttft = read_ttft(*t);
    if (auto t = root.table("decode")) p.decode = read_decode(*t);
    if (auto t = root.table("capacity")) p.capacity = read_capacity(*t);
    if (auto t = root.table("peak")) p.peak = read_peak(*t);
    if (auto t = root.table("prefix_cache")) p.prefix_cache = read_prefix_cache(*t);
    if (auto t = root.table("faults")) p.faults = read_faults(*t);
    if (auto t = root.table("answers")) p.answers = read_answers(*t);
    if (auto t = root.table("tail")) p.tail = read_tail(*t);
    for (const ConfigTable& t : root.tables("episodes")) p.episodes.push_back(read_episode(t));
    return p;
}

Profile parse_profile(std::string_view toml_text, std::string source_name) {
    return profile_from_config(ConfigTable::parse(toml_text, std::move(source_name)));
}

Profile load_profile(std::string_view name_or_path, const std::filesystem::path& profiles_dir) {
    const bool is_path =
        name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".toml");
    std::filesystem::path file = is_path ? std::filesystem::path(name_or_path)
                                         : profiles_dir / (std::string(name_or_path) + ".toml");
    if (!is_path && !std::filesystem::exists(file)) {
        throw ConfigError(
            fmt::format("unknown profile \"{}\": no file {}", name_or_path, file.string()));
    }
    return profile_from_config(ConfigTable::load_file(file));
}

std::uint64_t profile_seed_for_run(std::uint64_t run_seed, std::string_view profile_name) {
    return fnv1a64(fmt::format("{}:{}", run_seed, profile_name));
}

std::uint64_t replica_seed(std::uint64_t seed, unsigned replica) {
    return replica == 0 ? seed : combine_seeds(seed, combine_seeds(4, replica));
}

std::vector<unsigned> make_replicas_distinct(std::vector<Profile>& profiles) {
    std::vector<unsigned> replicas(profiles.size(), 0);
    std::vector<std::uint64_t> seeds;  // as loaded: a replica is counted by its profile's seed
    for (std::size_t i = 0; i < profiles.size(); ++i) {
        const std::uint64_t seed = profiles[i].seed;
        replicas[i] = static_cast<unsigned>(std::count(seeds.begin(), seeds.end(), seed));
        seeds.push_back(seed);
        profiles[i].seed = replica_seed(seed, replicas[i]);
    }
    return replicas;
}

}  // namespace tokenradar::sim
