#include <tokenradar/sim/latency_model.hpp>

#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/sim/tokens.hpp>

#include "rng.hpp"

#include <algorithm>
#include <cmath>

namespace tokenradar::sim {
namespace {

constexpr std::int64_t kMaxOutputTokens = 1'000'000;
// Bounds on drawn delays: lognormal tails and peak factors multiply, and a plan must never
// overflow int64 nanoseconds (1e6 tokens x 10 min stays below 2^63 ns).
constexpr double kMaxTtftMs = 3'600'000;  // 1 hour
constexpr double kMaxGapNs = 600e9;       // 10 minutes

// Each aspect draws from its own stream, so overriding one (say the fault) leaves the others'
// draws unchanged for the same seed. New streams go last: a number is part of every seed.
enum Stream : std::uint64_t {
    kFault = 1,
    kTtft,
    kSpeed,
    kGaps,
    kChunks,
    kLength,
    kFaultAt,
    kAnswer,
    kTail,
    kConditionError
};

std::int64_t ms_to_ns(double ms) { return std::llround(ms * 1e6); }

FaultKind draw_fault(const FaultParams& f, Rng& rng) {
    const double u = rng.uniform();
    double edge = 0;
    for (auto [rate, kind] :
         {std::pair{f.rate_429, FaultKind::http_429}, std::pair{f.rate_500, FaultKind::http_500},
          std::pair{f.rate_503, FaultKind::http_503},
          std::pair{f.rate_disconnect, FaultKind::disconnect},
          std::pair{f.rate_stall, FaultKind::stall},
          std::pair{f.rate_malformed, FaultKind::malformed}}) {
        edge += rate;
        if (u < edge) return kind;
    }
    return FaultKind::none;
}

// Generation times of tokens 0..n-1 (token 0 at 0) with mean gap `gap_ns`. With jitter, gap
// i = gap_ns * w_i where w ~ LogNormal(mean 1, CV = jitter), rescaled so the gaps sum to
// exactly (n-1) * gap_ns: the request's TPOT is its mean gap, the jitter only reshapes it.
std::vector<std::int64_t> generation_offsets(std::int64_t n, double gap_ns, double jitter,
                                             Rng& rng) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(n), 0);
    if (n <= 1 || gap_ns <= 0) return out;
    if (jitter <= 0 || n == 2) {
        for (std::int64_t i = 1; i < n; ++i) {
            out[static_cast<std::size_t>(i)] = std::llround(static_cast<double>(i) * gap_ns);
        }
        return out;
    }
    const double sigma = std::sqrt(std::log1p(jitter * jitter));
    const double mu = -0.5 * sigma * sigma;
    std::vector<double> w(static_cast<std::size_t>(n - 1));
    double sum = 0;
    for (double& x : w) {
        x = std::exp(mu + sigma * rng.normal());
        sum += x;
    }
    const double scale = gap_ns * static_cast<double>(n - 1) / sum;
    double cum = 0;
    for (std::size_t i = 1; i < out.size(); ++i) {
        cum += w[i - 1];
        out[i] = std::llround(cum * scale);
    }
    out.back() = std::llround(static_cast<double>(n - 1) * gap_ns);  // no rounding drift
    for (std::size_t i = out.size() - 1; i-- > 1;) out[i] = std::min(out[i], out[i + 1]);
    return out;
}

}  // namespace

std::string_view to_string(FinishReason reason) noexcept {
    return reason == FinishReason::stop ? "stop" : "length";
}

bool Fault::is_http_error() const noexcept {
    return kind == FaultKind::http_429 || kind == FaultKind::http_500 ||
           kind == FaultKind::http_503;
}

int Fault::http_status() const noexcept {
    switch (kind) {
        case FaultKind::http_429:
            return 429;
        case FaultKind::http_500:
            return 500;
        case FaultKind::http_503:
            return 503;
        default:
            return 200;
    }
}

std::string RequestPlan::chunk_text(std::size_t chunk) const {
    const Chunk& c = chunks.at(chunk);
    return join_tokens(tokens, static_cast<std::size_t>(c.first_token),
                       static_cast<std::size_t>(c.token_count));
}

LatencyModel::LatencyModel(Profile profile)
    : profile_(std::move(profile)),
      cache_(profile_.prefix_cache.block_tokens, profile_.prefix_cache.capacity_blocks),
      gate_(profile_.capacity.max_concurrent, profile_.capacity.queue_limit) {}

namespace {

Rng stream_rng(std::uint64_t timing_seed, Stream stream) {
    return Rng(combine_seeds(timing_seed, stream));
}

// TTFT before queueing: network + prefill of the uncached prompt + noise, scaled by peak.
// The replica's condition multiplies the result, an override's too.
std::int64_t draw_ttft_ns(const TtftParams& ttft, const Overrides& ov, std::int64_t uncached_tokens,
                          double peak, double condition, std::uint64_t timing_seed) {
    if (ov.ttft_ms) return ms_to_ns(std::min(*ov.ttft_ms * condition, kMaxTtftMs));
    Rng rng = stream_rng(timing_seed, kTtft);
    const double uncached = static_cast<double>(uncached_tokens);
    const double ms = ttft.base_ms + ttft.prefill_ms_per_1k_tokens * uncached / 1000.0 +
                      rng.lognormal_median(ttft.noise_median_ms, ttft.noise_sigma);
    return ms_to_ns(std::min(ms * peak * condition, kMaxTtftMs));
}

// Whether the request falls into the heavy tail. An exact TTFT (x-sim-ttft-ms) draws none:
// only x-sim-tail: always puts it there.
bool draw_tail(const TailParams& tail, const Overrides& ov, std::uint64_t timing_seed) {
    if (ov.tail) return *ov.tail == TailMode::always;
    if (ov.ttft_ms || tail.rate <= 0) return false;
    Rng rng = stream_rng(timing_seed, kTail);
    return rng.uniform() < tail.rate;
}

// Output length: max_tokens, an override, or a natural stop (geometric length).
std::int64_t draw_output_tokens(const DecodeParams& decode, const Overrides& ov,
                                std::int64_t max_tokens, std::uint64_t timing_seed) {
    if (ov.output_tokens) return std::min(*ov.output_tokens, max_tokens);
    if (!(decode.stop_probability > 0 && max_tokens > 0)) return max_tokens;
    Rng rng = stream_rng(timing_seed, kLength);
    const double q = decode.stop_probability;
    const double u = 1.0 - rng.uniform();  // (0, 1]
    const double len = q >= 1.0 ? 1.0 : 1.0 + std::floor(std::log(u) / std::log1p(-q));
    return len >= static_cast<double>(max_tokens) ? max_tokens : static_cast<std::int64_t>(len);
}

// Generation times of the n output tokens. The per-request speed factor has median 1, so
// the median decode tokens/s over requests is tokens_per_s (at multiplier 1); the peak
// factor lengthens every gap.
std::vector<std::int64_t> draw_generation_offsets(const DecodeParams& decode, const Overrides& ov,
                                                  std::int64_t n, double peak, double condition,
                                                  std::uint64_t timing_seed) {
    double gap_ns = 0;
    double jitter = 0;
    if (ov.tpot_ms) {
        gap_ns = *ov.tpot_ms * 1e6;
    } else if (ov.tokens_per_s) {
        gap_ns = 1e9 / *ov.tokens_per_s;
    } else if (decode.tokens_per_s > 0) {
        Rng rng = stream_rng(timing_seed, kSpeed);
        const double factor = rng.lognormal_median(1.0, decode.request_sigma);
        const double rate = decode.tokens_per_s * factor;
        gap_ns = 1e9 / rate * peak;
        jitter = decode.token_jitter;
    }
    gap_ns = std::min(gap_ns * condition, kMaxGapNs);
    Rng gaps_rng = stream_rng(timing_seed, kGaps);
    return generation_offsets(n, gap_ns, jitter, gaps_rng);
}

// Chunk 0 goes out at the first-token time; every later chunk when its last token is
// generated. Each token is delivered with its chunk.
void cut_chunks(const DecodeParams& decode, const Overrides& ov,
                const std::vector<std::int64_t>& generated, std::uint64_t timing_seed,
                RequestPlan& plan) {
    const std::int64_t n = plan.output_tokens;
    Rng chunk_rng = stream_rng(timing_seed, kChunks);
    plan.token_offsets_ns.resize(static_cast<std::size_t>(n));
    for (std::int64_t first = 0; first < n;) {
        const std::int64_t size =
            ov.tokens_per_chunk
                ? *ov.tokens_per_chunk
                : chunk_rng.uniform_int(decode.tokens_per_chunk_min, decode.tokens_per_chunk_max);
        const std::int64_t count = std::min(size, n - first);
        const std::int64_t at =
            plan.chunks.empty() ? 0 : generated[static_cast<std::size_t>(first + count - 1)];
        plan.chunks.push_back({first, count, at});
        std::fill_n(plan.token_offsets_ns.begin() + first, count, at);
        first += count;
    }
}

// The chunk a mid-stream fault lands on: the one holding the overridden token, else a
// uniformly chosen chunk after the first (so the stream has started), when there is one.
std::size_t fault_chunk(const RequestPlan& plan, const Overrides& ov, std::uint64_t timing_seed) {
    std::size_t chunk = 0;
    if (ov.fault_at_token && !plan.chunks.empty()) {
        const std::int64_t k = std::min(*ov.fault_at_token, plan.output_tokens - 1);
        while (chunk + 1 < plan.chunks.size() && plan.chunks[chunk + 1].first_token <= k) {
            ++chunk;
        }
    } else if (plan.chunks.size() >= 2) {
        Rng rng = stream_rng(timing_seed, kFaultAt);
        chunk = static_cast<std::size_t>(
            rng.uniform_int(1, static_cast<std::int64_t>(plan.chunks.size()) - 1));
    }
    return chunk;
}

// A stall delays the chunk it lands on and every later one (or the first token).
void apply_stall(std::size_t chunk, RequestPlan& plan) {
    if (chunk == 0) {
        plan.ttft_ns += plan.fault.stall_ns;  // stalled before the first token
        return;
    }
    for (std::size_t c = chunk; c < plan.chunks.size(); ++c) {
        plan.chunks[c].offset_ns += plan.fault.stall_ns;
    }
    auto& offsets = plan.token_offsets_ns;
    for (auto i = static_cast<std::size_t>(plan.fault.at_token); i < offsets.size(); ++i) {
        offsets[i] += plan.fault.stall_ns;
    }
}

// Mid-stream faults land on a chunk boundary.
void place_fault(const FaultParams& faults, const Overrides& ov, std::uint64_t timing_seed,
                 RequestPlan& plan) {
    const std::size_t chunk = fault_chunk(plan, ov, timing_seed);
    plan.fault.at_token = plan.chunks.empty() ? 0 : plan.chunks[chunk].first_token;
    if (plan.fault.kind == FaultKind::stall) {
        plan.fault.stall_ns = ms_to_ns(ov.stall_ms ? *ov.stall_ms : faults.stall_ms);
        apply_stall(chunk, plan);
    }
}

}  // namespace

RequestPlan LatencyModel::plan(const PlanInput& in) {
    const Profile& p = profile_;
    const Overrides& ov = in.overrides;
    RequestPlan plan;

    // Prompt accounting (the cache is consulted below, once the request is known to run).
    std::uint64_t prompt_hash = in.prompt_hash;
    if (!in.prompt_text.empty()) {
        plan.prompt_tokens = estimate_tokens(in.prompt_text);
        prompt_hash = fnv1a64(in.prompt_text);
    } else {
        plan.prompt_tokens = std::max<std::int64_t>(in.prompt_tokens, 0);
    }

    // Seeds: a request seed makes timings and text reproducible; without one, timings come
    // from a counter (distinct per request) and the text from the prompt.
    const std::optional<std::uint64_t> request_seed = ov.seed ? ov.seed : in.request_seed;
    const std::uint64_t timing_seed =
        request_seed ? combine_seeds(p.seed, combine_seeds(1, *request_seed))
                     : combine_seeds(p.seed, combine_seeds(2, counter_.fetch_add(1)));
    const std::uint64_t text_seed =
        combine_seeds(p.seed, combine_seeds(3, request_seed ? *request_seed : prompt_hash));
    plan.answer_seed = combine_seeds(timing_seed, kAnswer);

    const double peak = p.peak.multiplier_at(in.wall_time_us);
    plan.peak_multiplier = peak;
    const Condition& condition = in.condition;
    plan.condition = condition;

    // Faults decided first: an HTTP error answers after the network delay, with no tokens.
    // The replica's condition fails requests whatever they asked for.
    Rng fault_rng = stream_rng(timing_seed, kFault);
    plan.fault.kind = ov.fault ? *ov.fault : draw_fault(p.faults, fault_rng);
    if (condition.error_rate > 0) {
        Rng error_rng = stream_rng(timing_seed, kConditionError);
        if (error_rng.uniform() < condition.error_rate) {
            plan.fault.kind = FaultKind::http_503;
            plan.condition_error = true;
        }
    }
    if (plan.fault.is_http_error()) {
        plan.ttft_ns = ov.ttft_ms ? ms_to_ns(*ov.ttft_ms) : ms_to_ns(p.ttft.base_ms * peak);
        return plan;
    }

    // A rejected request never reaches the engine, so only running ones fill the cache.
    if (!in.prompt_text.empty()) {
        plan.cached_prompt_tokens =
            std::min(cache_.lookup_and_insert(in.prompt_text), plan.prompt_tokens);
    }
    plan.ttft_ns = draw_ttft_ns(p.ttft, ov, plan.prompt_tokens - plan.cached_prompt_tokens, peak,
                                condition.ttft_multiplier, timing_seed);
    plan.tail = draw_tail(p.tail, ov, timing_seed);
    if (plan.tail) {
        const double extra = static_cast<double>(plan.ttft_ns) * (p.tail.ttft_multiplier - 1.0);
        plan.tail_wait_ns = std::llround(std::min(extra, kMaxTtftMs * 1e6));
        plan.ttft_ns += plan.tail_wait_ns;
    }

    const std::int64_t max_tokens = std::clamp<std::int64_t>(
        in.max_tokens.value_or(p.decode.default_max_tokens), 0, kMaxOutputTokens);
    const std::int64_t n = draw_output_tokens(p.decode, ov, max_tokens, timing_seed);
    plan.output_tokens = n;
    plan.finish_reason = n < max_tokens ? FinishReason::stop : FinishReason::length;
    plan.tokens = generate_output_tokens(text_seed, n);

    const auto generated =
        draw_generation_offsets(p.decode, ov, n, peak, condition.tpot_multiplier, timing_seed);
    cut_chunks(p.decode, ov, generated, timing_seed, plan);
    if (plan.fault.kind != FaultKind::none) place_fault(p.faults, ov, timing_seed, plan);
    return plan;
}

}  // namespace tokenradar::sim
