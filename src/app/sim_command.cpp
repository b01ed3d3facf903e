#include "commands.hpp"

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/duration.hpp>
#include <tokenradar/core/resource_dir.hpp>
#include <tokenradar/sim/sim_server.hpp>

#include <cctz/time_zone.h>
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <memory>

namespace tokenradar::app {
namespace {

struct SimArgs {
    std::vector<std::string> profiles;
    std::uint16_t port = 0;
    std::string host = "127.0.0.1";
    std::string profiles_dir;
    std::optional<std::uint64_t> seed;
    std::string trace;
    unsigned threads = 0;
    std::string pacing_quantum;
    bool realtime = false;
    std::string api_key_env;
    std::string at;
};

// "NAME_OR_FILE" or "NAME_OR_FILE:PORT".
sim::SimEndpoint parse_endpoint(const std::string& text, std::uint16_t default_port) {
    const std::size_t colon = text.rfind(':');
    if (colon != std::string::npos && colon + 1 < text.size() &&
        text.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
        unsigned port = 0;
        auto [end, ec] = std::from_chars(text.data() + colon + 1, text.data() + text.size(), port);
        if (ec != std::errc{} || port > 65535) {
            throw ConfigError(
                fmt::format("--profile {}: the port must be a number from 0 to 65535", text));
        }
        return {text.substr(0, colon), static_cast<std::uint16_t>(port)};
    }
    return {text, default_port};
}

std::int64_t parse_at(const std::string& text) {
    std::int64_t seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec == std::errc{} && end == text.data() + text.size()) return seconds * 1'000'000;
    std::chrono::system_clock::time_point tp;
    if (!cctz::parse("%Y-%m-%dT%H:%M:%E*S%Ez", text, cctz::utc_time_zone(), &tp)) {
        throw ConfigError(fmt::format(
            "--at {}: expected unix seconds or an RFC 3339 time such as 2026-11-30T17:00:00Z",
            text));
    }
    return std::chrono::duration_cast<std::chrono::microseconds>(tp.time_since_epoch()).count();
}

std::chrono::nanoseconds parse_pacing_quantum(const std::string& text) {
    constexpr auto kMax = std::chrono::milliseconds(10);
    auto quantum = parse_duration(text);
    if (!quantum || *quantum > kMax) {
        throw ConfigError(fmt::format(
            "--pacing-quantum {}: expected a duration from 0us to 10ms, e.g. 250us", text));
    }
    return *quantum;
}

int run(const SimArgs& args) {
    if (args.realtime) use_realtime_for_timing();  // before the sim's threads start
    sim::SimCommandOptions options;
    options.host = args.host;
    if (args.profiles.size() > 1 && args.port != 0) {
        throw ConfigError(
            "--port applies to a single --profile; with several, write --profile NAME:PORT");
    }
    for (const auto& p : args.profiles) options.endpoints.push_back(parse_endpoint(p, args.port));
    options.profiles_dir = args.profiles_dir.empty() ? find_resource_dir("profiles")
                                                     : std::filesystem::path(args.profiles_dir);
    options.seed = args.seed;
    options.trace_path = args.trace;
    options.threads = args.threads;
    if (!args.pacing_quantum.empty())
        options.pacing_quantum = parse_pacing_quantum(args.pacing_quantum);
    if (!args.api_key_env.empty()) {
        const char* key = std::getenv(args.api_key_env.c_str());
        if (key == nullptr || *key == '\0') {
            throw ConfigError(
                fmt::format("--api-key-env {}: the variable is not set", args.api_key_env));
        }
        options.api_key = key;
    }
    if (!args.at.empty()) options.pinned_wall_time_us = parse_at(args.at);
    options.announce = [](const std::string& line) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
    };
    return sim::run_sim_command(options);
}

}  // namespace

void register_sim(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<SimArgs>();
    CLI::App* sub = app.add_subcommand(
        "sim",
        "Simulated LLM providers (OpenAI, Anthropic, Gemini wire formats) with realistic latency");
    sub->add_option("--profile", args->profiles,
                    "Profile name (profiles/NAME.toml) or file, optionally NAME:PORT; repeatable")
        ->required();
    sub->add_option("--port", args->port, "Port for a single profile (0 = any free port)");
    sub->add_option("--host", args->host, "Address to listen on")->capture_default_str();
    sub->add_option("--profiles-dir", args->profiles_dir, "Where profile names are looked up");
    sub->add_option("--seed", args->seed, "Seed for reproducible latency draws and text");
    sub->add_option("--trace", args->trace,
                    "Append one JSON line per request with its intended timings to FILE");
    sub->add_option("--threads", args->threads, "I/O threads (0 = one per core)")
        ->capture_default_str();
    sub->add_option(
        "--pacing-quantum", args->pacing_quantum,
        "Wake paced writes on multiples of this duration (e.g. 250us): fewer wake-ups for many "
        "streams, each write late by less than it (default 0: exactly when due)");
    sub->add_flag(
        "--realtime", args->realtime,
        "Run the I/O threads under real-time scheduling (SCHED_FIFO; needs root or CAP_SYS_NICE) "
        "so other processes cannot delay paced writes");
    sub->add_option("--api-key-env", args->api_key_env,
                    "Require the key in this environment variable (default: any non-empty key)");
    sub->add_option(
        "--at", args->at,
        "Pin the simulated wall clock (peak hours) to unix seconds or an RFC 3339 time");
    sub->callback([args, &runner] { runner = [args] { return run(*args); }; });
}

}  // namespace tokenradar::app
