#include "records.hpp"

#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string_view>

namespace tokenradar::bench_observatory {
namespace {

constexpr std::int64_t kMsNs = 1'000'000;

struct Provider {
    std::string_view name, api, region;
    std::array<std::string_view, 3> models;
    bool busy_in_us_hours;
};
constexpr std::array<Provider, 8> kProviders = {{
    {"openai", "openai", "us-east", {"gpt-4o", "gpt-4o-mini", "o3-mini"}, true},
    {"anthropic",
     "anthropic",
     "us-east",
     {"claude-3-5-sonnet", "claude-3-5-haiku", "claude-3-opus"},
     true},
    {"google",
     "gemini",
     "us-central",
     {"gemini-1.5-pro", "gemini-1.5-flash", "gemini-2.0-flash"},
     false},
    {"together", "openai", "us-west", {"llama-3-70b", "llama-3-8b", "mixtral-8x22b"}, true},
    {"fireworks", "openai", "us-west", {"llama-3-70b", "qwen-2.5-72b", "deepseek-v3"}, false},
    {"groq", "openai", "us-east", {"llama-3-70b", "llama-3-8b", "gemma-2-9b"}, false},
    {"mistral", "openai", "eu-west", {"mistral-large", "mistral-small", "codestral"}, true},
    {"deepseek",
     "openai",
     "ap-east",
     {"deepseek-chat", "deepseek-reasoner", "deepseek-coder"},
     false},
}};
constexpr std::array<std::string_view, 4> kClientRegions = {"us-east", "us-west", "eu-west",
                                                            "ap-south"};
struct Task {
    std::string_view name;
    double tokens;
};
constexpr std::array<Task, 5> kTasks = {
    {{"chat", 150}, {"gen-500", 500}, {"long-context", 300}, {"code", 400}, {"prefix-reuse", 200}}};
// Client shares: one heavy submitter (40%), five at 12%.
constexpr std::array<std::string_view, 6> kClients = {"ip:10.0.0.1", "ip:10.0.0.2", "ip:10.0.0.3",
                                                      "ip:10.0.0.4", "ip:10.0.0.5", "ip:10.0.0.6"};
constexpr std::array<double, 6> kClientShare = {0.40, 0.12, 0.12, 0.12, 0.12, 0.12};

std::int64_t ns(double ms) { return static_cast<std::int64_t>(ms * kMsNs); }

}  // namespace

RecordGenerator::RecordGenerator(std::uint64_t seed, std::int64_t from_us, std::int64_t to_us,
                                 std::size_t total)
    : rng_(seed), from_us_(from_us), to_us_(to_us), total_(total) {}

std::string RecordGenerator::provider_of(std::size_t model) {
    return std::string(kProviders[model / 3].name);
}

std::string RecordGenerator::model_of(std::size_t model) {
    return std::string(kProviders[model / 3].models[model % 3]);
}

void RecordGenerator::next(Measurement& m, std::uint64_t id_salt) {
    const std::size_t i = next_++;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::size_t model = rng_() % kModels;
    const Provider& p = kProviders[model / 3];
    const Task& task = kTasks[rng_() % kTasks.size()];
    double pick = unit(rng_);
    std::size_t client = 0;
    while (client + 1 < kClients.size() && pick >= kClientShare[client])
        pick -= kClientShare[client++];
    // Many submitters: the heavy one keeps its 40%, the rest spread over submitters - 1.
    std::size_t many = 0;
    if (submitters > kClients.size() && client > 0) {
        const double rest = unit(rng_);
        many = 1 + static_cast<std::size_t>(rest * static_cast<double>(submitters - 1));
        many = std::min(many, submitters - 1);
    }

    m = Measurement();
    const auto seq = static_cast<std::uint64_t>(i + 1);
    const std::uint64_t mixed = (seq + id_salt * 0x100000000ull) * 0x9e3779b97f4a7c15ull;
    m.request_id = fmt::format("{:016x}{:016x}", mixed, ~seq * 0xbf58476d1ce4e5b9ull + id_salt);
    if (many > 0) {
        m.client_id =
            fmt::format("ip:172.{}.{}.{}", 16 + (many >> 16), (many >> 8) & 0xFF, many & 0xFF);
    } else {
        m.client_id = kClients[client];
    }
    m.labels.provider = p.name;
    m.labels.model = p.models[model % 3];
    m.labels.endpoint = fmt::format("api.{}.example", p.name);
    m.labels.upstream_region = p.region;
    m.labels.client_region = kClientRegions[rng_() % kClientRegions.size()];
    m.labels.task = task.name;
    m.labels.source = "bench";
    m.labels.api = p.api;
    m.labels.stream = unit(rng_) < 0.8;
    const double span = static_cast<double>(to_us_ - from_us_);
    m.ts_us = from_us_ + static_cast<std::int64_t>(static_cast<double>(i) * span /
                                                   static_cast<double>(total_));
    if (time_ordered_ids) {
        m.request_id = fmt::format("{:012x}{}", m.ts_us / 1000, m.request_id.substr(12));
    }

    const double fail = unit(rng_);
    if (fail < 0.013) {
        const bool limited = fail < 0.01;
        m.status = RequestStatus::http(limited ? 429 : 500);
        m.http_status = limited ? 429 : 500;
        m.t.headers = ns(40 + 20 * unit(rng_));
        m.t.done = *m.t.headers + ns(1);
        return;
    }
    m.http_status = 200;
    const int hour = static_cast<int>((m.ts_us / kHourUs) % 24);
    const double busy = p.busy_in_us_hours && hour >= 13 && hour < 21 ? 1.4 : 1.0;
    const double ttft_median = 180.0 + 420.0 * static_cast<double>((model * 7) % kModels) / kModels;
    const double tpot_median = 8.0 + 27.0 * static_cast<double>((model * 11) % kModels) / kModels;
    const double ttft =
        busy * ttft_median * std::exp(0.35 * std::normal_distribution<double>()(rng_));
    const double tpot =
        busy * tpot_median * std::exp(0.2 * std::normal_distribution<double>()(rng_));
    const auto tokens = static_cast<std::int64_t>(task.tokens * (0.5 + unit(rng_)));
    m.prompt_tokens = 200 + static_cast<std::int64_t>(rng_() % 4000);
    m.cached_prompt_tokens = task.name == "prefix-reuse" ? *m.prompt_tokens / 2 : 0;
    m.output_tokens = tokens;
    m.connect_ns = 0;
    const double e2e = ttft + static_cast<double>(tokens - 1) * tpot;
    if (m.labels.stream) {
        m.t.headers = ns(ttft * 0.6);
        m.t.first_chunk = ns(ttft * 0.95);
        m.t.first_token = ns(ttft);
        m.t.first_answer = m.t.first_token;
        m.t.last_token = ns(e2e);
        m.t.done = ns(e2e + 0.5);
        m.output_events = tokens;
        m.chunk_gap_p50_ns = ns(tpot);
        m.chunk_gap_p99_ns = ns(tpot * 2.5);
        m.chunk_gap_max_ns = ns(tpot * 6);
    } else {
        m.t.headers = ns(e2e);
        m.t.done = ns(e2e + 0.5);
    }
}

std::string ndjson_body(RecordGenerator& gen, std::size_t n, std::uint64_t id_salt) {
    std::string body;
    body.reserve(n * 1100);
    Measurement m;
    for (std::size_t i = 0; i < n && !gen.done(); ++i) {
        gen.next(m, id_salt);
        body += boost::json::serialize(to_json(m));
        body += '\n';
    }
    return body;
}

double thread_cpu_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double process_cpu_seconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::size_t rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "N kB"
    }
    return 0;
}

}  // namespace tokenradar::bench_observatory
