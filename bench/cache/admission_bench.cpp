// cache_bench admission: MemoryTier's LRU and W-TinyLFU replaying the same key traces at
// several sizes. Per trace and size: hit ratio per policy and the CPU time of a get and of a
// put. bench/README.md ("L1 admission") has the command and the last numbers.

#include "bench_modes.hpp"

#include <tokenradar/cache/memory_tier.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tokenradar::bench_cache {
namespace {

using cache::Admission;

constexpr std::int64_t kNow = 1;
constexpr std::int64_t kNever = 1'000'000'000;
constexpr std::size_t kMinAnswer = 512;
constexpr std::size_t kMaxAnswer = 8192;
constexpr std::size_t kAnswerSizes = 64;  // distinct answer sizes (shared answer objects)
constexpr std::size_t kBatch = 256;       // requests per timed batch of gets

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Ranks 0..n-1 with P(r) proportional to 1 / (r + 1)^s.
class Zipf {
  public:
    Zipf(std::size_t n, double s) : cdf_(n) {
        double sum = 0;
        for (std::size_t r = 0; r < n; ++r) {
            cdf_[r] = sum += 1.0 / std::pow(static_cast<double>(r + 1), s);
        }
        for (double& c : cdf_) c /= sum;
    }
    std::uint32_t operator()(std::mt19937_64& rng) {
        const double u = std::uniform_real_distribution<double>{0.0, 1.0}(rng);
        const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
        return static_cast<std::uint32_t>(
            std::min<std::size_t>(it - cdf_.begin(), cdf_.size() - 1));
    }

  private:
    std::vector<double> cdf_;
};

struct Trace {
    std::string name;
    std::string what;
    std::vector<std::uint32_t> ids;  // one request each; an id is a question
};

// (a) a chat FAQ: half the requests ask one of `popular` questions, Zipf-distributed; the
// other half are fresh questions, each asked once.
Trace faq_trace(std::size_t requests, std::uint64_t seed) {
    constexpr std::size_t kPopular = 20'000;
    Trace t{"faq", "50% Zipf(0.9) over 20k questions, 50% one-off questions", {}};
    std::mt19937_64 rng{seed};
    Zipf zipf{kPopular, 0.9};
    std::bernoulli_distribution fresh{0.5};
    auto next_fresh = static_cast<std::uint32_t>(kPopular);
    for (std::size_t i = 0; i < requests; ++i)
        t.ids.push_back(fresh(rng) ? next_fresh++ : zipf(rng));
    return t;
}

// (b) every request from one Zipf distribution.
Trace zipf_trace(std::size_t requests, std::uint64_t seed) {
    Trace t{"zipf", "Zipf(0.9) over 100k questions", {}};
    std::mt19937_64 rng{seed};
    Zipf zipf{100'000, 0.9};
    for (std::size_t i = 0; i < requests; ++i) t.ids.push_back(zipf(rng));
    return t;
}

// (c) a hot set interrupted by scans: blocks of 10k Zipf requests over 10k hot questions,
// each followed by 10k consecutive questions of a 200k-question loop (a crawler walking a
// catalogue: each scanned question comes back only once the loop wraps).
Trace scan_trace(std::size_t requests, std::uint64_t seed) {
    constexpr std::uint32_t kHot = 10'000;
    constexpr std::uint32_t kLoop = 200'000;
    constexpr std::size_t kBlock = 10'000;
    Trace t{"scan", "10k Zipf(0.9) over 10k hot, then a 10k scan of a 200k loop, repeated", {}};
    std::mt19937_64 rng{seed};
    Zipf zipf{kHot, 0.9};
    std::uint32_t cursor = 0;
    while (t.ids.size() < requests) {
        for (std::size_t i = 0; i < kBlock && t.ids.size() < requests; ++i)
            t.ids.push_back(zipf(rng));
        for (std::size_t i = 0; i < kBlock && t.ids.size() < requests; ++i) {
            t.ids.push_back(kHot + cursor);
            cursor = (cursor + 1) % kLoop;
        }
    }
    return t;
}

// (d) recency: 60% of the requests repeat a recent one (how far back: exponential, mean 300
// requests), 40% are new questions. Where LRU is known to beat LFU.
Trace recency_trace(std::size_t requests, std::uint64_t seed) {
    Trace t{"recency", "60% repeat a request ~Exp(mean 300) back, 40% new questions", {}};
    std::mt19937_64 rng{seed};
    std::bernoulli_distribution repeat{0.6};
    std::exponential_distribution<double> back{1.0 / 300};
    std::uint32_t next_new = 0;
    for (std::size_t i = 0; i < requests; ++i) {
        const auto d = static_cast<std::size_t>(back(rng)) + 1;
        if (repeat(rng) && d <= t.ids.size()) {
            t.ids.push_back(t.ids[t.ids.size() - d]);
        } else {
            t.ids.push_back(next_new++);
        }
    }
    return t;
}

// Keys look like the gateway's (32-byte digests); each question's answer is one of
// kAnswerSizes shared answers of 0.5-8 KB of text.
struct Universe {
    std::vector<std::string> keys;
    std::vector<std::uint8_t> answer_of;  // index into answers
    std::vector<cache::AnswerPtr> answers;

    explicit Universe(std::size_t questions) {
        for (std::size_t s = 0; s < kAnswerSizes; ++s) {
            auto a = std::make_shared<cache::CachedAnswer>();
            a->text.assign(kMinAnswer + s * (kMaxAnswer - kMinAnswer) / (kAnswerSizes - 1), 'x');
            answers.push_back(std::move(a));
        }
        keys.reserve(questions);
        answer_of.reserve(questions);
        for (std::size_t i = 0; i < questions; ++i) {
            std::string k(32, '\0');
            for (std::size_t w = 0; w < 4; ++w) {
                const std::uint64_t h = splitmix(i * 4 + w);
                for (std::size_t b = 0; b < 8; ++b) k[w * 8 + b] = static_cast<char>(h >> (8 * b));
            }
            keys.push_back(std::move(k));
            answer_of.push_back(static_cast<std::uint8_t>(splitmix(~i) % kAnswerSizes));
        }
    }
    const cache::AnswerPtr& answer(std::uint32_t id) const { return answers[answer_of[id]]; }
};

struct Timing {
    double get_ns = 0;      // CPU per get
    double put_ns = 0;      // CPU per put
    double request_ns = 0;  // CPU per request: its get, and a miss's put
};

struct Result {
    double hit_ratio = 0;
    std::uint64_t rejected = 0;
    Timing cpu;  // the least over the timed runs: other load only ever adds
};

// Exactly as the gateway does it (get; on a miss, put), on a fresh tier: the hit ratio.
Result hit_replay(const Trace& trace, const Universe& u, const cache::MemoryTierOptions& o) {
    cache::MemoryTier tier(o);
    std::size_t hits = 0;
    for (const std::uint32_t id : trace.ids) {
        if (tier.get(u.keys[id], kNow) != nullptr) {
            ++hits;
        } else {
            tier.put(u.keys[id], u.answer(id), kNever);
        }
    }
    return {static_cast<double>(hits) / static_cast<double>(trace.ids.size()),
            tier.stats().rejected,
            {}};
}

// In batches on a fresh tier (kBatch gets timed, then the misses' puts timed): the CPU split.
Timing timed_replay(const Trace& trace, const Universe& u, const cache::MemoryTierOptions& o) {
    cache::MemoryTier tier(o);
    std::vector<std::uint32_t> misses;
    double get_ns = 0;
    double put_ns = 0;
    std::size_t puts = 0;
    for (std::size_t start = 0; start < trace.ids.size(); start += kBatch) {
        const std::size_t end = std::min(trace.ids.size(), start + kBatch);
        misses.clear();
        const double t0 = thread_cpu_us();
        for (std::size_t i = start; i < end; ++i) {
            if (tier.get(u.keys[trace.ids[i]], kNow) == nullptr) misses.push_back(trace.ids[i]);
        }
        const double t1 = thread_cpu_us();
        for (const std::uint32_t id : misses) tier.put(u.keys[id], u.answer(id), kNever);
        put_ns += (thread_cpu_us() - t1) * 1e3;
        get_ns += (t1 - t0) * 1e3;
        puts += misses.size();
    }
    const auto requests = static_cast<double>(trace.ids.size());
    return {get_ns / requests, puts > 0 ? put_ns / static_cast<double>(puts) : 0,
            (get_ns + put_ns) / requests};
}

void keep_least(Timing& least, const Timing& t, bool first) {
    least.get_ns = first ? t.get_ns : std::min(least.get_ns, t.get_ns);
    least.put_ns = first ? t.put_ns : std::min(least.put_ns, t.put_ns);
    least.request_ns = first ? t.request_ns : std::min(least.request_ns, t.request_ns);
}

std::string percent(double ratio) { return fmt::format("{:.1f}%", 100 * ratio); }

}  // namespace

int run_admission(const AdmissionBenchOptions& options) {
    std::vector<Trace> traces;
    for (const std::string& name : options.traces) {
        if (name == "faq") {
            traces.push_back(faq_trace(options.requests, options.seed));
        } else if (name == "zipf") {
            traces.push_back(zipf_trace(options.requests, options.seed));
        } else if (name == "scan") {
            traces.push_back(scan_trace(options.requests, options.seed));
        } else if (name == "recency") {
            traces.push_back(recency_trace(options.requests, options.seed));
        } else {
            throw std::invalid_argument("unknown trace " + name + " (faq, zipf, scan, recency)");
        }
    }
    std::uint32_t questions = 0;
    for (const Trace& t : traces) {
        questions = std::max(questions, *std::max_element(t.ids.begin(), t.ids.end()) + 1);
    }
    const Universe u{questions};

    fmt::print(
        "{} requests a trace, seed {}, {} shards; answers {}-{} B of text; CPU: the least of {} "
        "timed runs\n",
        options.requests, options.seed, options.shards, kMinAnswer, kMaxAnswer, options.timed_runs);
    fmt::print(
        "size = % of the distinct questions' answer bytes; CPU ns per get and per put; request: "
        "CPU per request (its get, a miss's put), TinyLFU / LRU\n\n");
    fmt::print(
        "{:<8} {:>5} {:>10} | {:>7} {:>7} {:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>7} | {:>9}\n",
        "trace", "size", "MiB", "LRU", "TinyLFU", "delta", "get LRU", "get TLFU", "put LRU",
        "put TLFU", "request", "rejected");
    for (const Trace& t : traces) {
        std::vector<bool> seen(questions);
        double distinct_bytes = 0;
        for (const std::uint32_t id : t.ids) {
            if (seen[id]) continue;
            seen[id] = true;
            distinct_bytes += static_cast<double>(u.answer(id)->bytes());
        }
        for (const double pct : options.sizes_percent) {
            const auto bytes = static_cast<std::size_t>(distinct_bytes * pct / 100);
            const cache::MemoryTierOptions lru_options{bytes, options.shards, Admission::lru};
            const cache::MemoryTierOptions lfu_options{bytes, options.shards, Admission::tinylfu};
            Result lru = hit_replay(t, u, lru_options);
            Result lfu = hit_replay(t, u, lfu_options);
            for (std::size_t run = 0; run < std::max<std::size_t>(1, options.timed_runs); ++run) {
                keep_least(lru.cpu, timed_replay(t, u, lru_options), run == 0);
                keep_least(lfu.cpu, timed_replay(t, u, lfu_options), run == 0);
            }
            fmt::print(
                "{:<8} {:>4}% {:>10.1f} | {:>7} {:>7} {:>+7.1f} | {:>9.0f} {:>9.0f} | {:>9.0f} "
                "{:>9.0f} | {:>6.2f}x | {:>9}\n",
                t.name, pct, static_cast<double>(bytes) / (1 << 20), percent(lru.hit_ratio),
                percent(lfu.hit_ratio), 100 * (lfu.hit_ratio - lru.hit_ratio), lru.cpu.get_ns,
                lfu.cpu.get_ns, lru.cpu.put_ns, lfu.cpu.put_ns,
                lfu.cpu.request_ns / lru.cpu.request_ns, lfu.rejected);
        }
    }
    fmt::print("\ntraces:\n");
    for (const Trace& t : traces) fmt::print("  {:<8} {}\n", t.name, t.what);
    return 0;
}

}  // namespace tokenradar::bench_cache
