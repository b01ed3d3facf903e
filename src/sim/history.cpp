#include "rng.hpp"

#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/sim/history.hpp>
#include <tokenradar/stats/percentiles.hpp>

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace tokenradar::sim {
namespace {

// Each aspect draws from its own stream, as in the latency model.
enum Stream : std::uint64_t { kArrival = 101, kRecord, kPlan };

// The sim writes a streaming response's head as soon as it admits the request, before the
// first token: on loopback the measured TTFB is a fraction of a millisecond.
constexpr std::int64_t kHeadTurnaroundNs = 300'000;

std::int64_t ms_to_ns(double ms) { return std::llround(ms * 1e6); }

// Prompt text repeated by every request of a task: the same bytes each time, so the prefix
// cache's chained block hashes match. Plain words keep the 4-bytes-per-token estimate exact.
std::string shared_prefix_text(const HistoryTask& task) {
    const auto bytes =
        static_cast<std::size_t>(task.shared_prefix_tokens * kBytesPerEstimatedToken);
    const std::string sentence = fmt::format("Reference text for {}, repeated. ", task.name);
    std::string text;
    text.reserve(bytes + sentence.size());
    while (text.size() < bytes) text += sentence;
    text.resize(bytes);
    return text;
}

void append_unique_text(std::string& out, std::int64_t tokens, Rng& rng) {
    static constexpr char kDigits[] = "0123456789abcdef";
    const auto bytes = static_cast<std::size_t>(tokens * kBytesPerEstimatedToken);
    for (std::size_t i = 0; i < bytes; i += 16) {
        std::uint64_t v = rng.next();
        for (std::size_t j = i; j < std::min(bytes, i + 16); ++j, v >>= 4)
            out.push_back(kDigits[v & 0xf]);
    }
}

void check(bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(fmt::format("history: {}", what));
}

// What a client would have measured of a plan whose response was cut before the chunk
// holding `cut_token` (a disconnect or a malformed chunk), or complete when cut_token >= N.
void record_stream(Measurement& m, const RequestPlan& plan, std::int64_t first_ns,
                   std::int64_t cut_token) {
    std::size_t delivered = 0;
    while (delivered < plan.chunks.size() && plan.chunks[delivered].first_token < cut_token)
        ++delivered;
    const bool complete = delivered == plan.chunks.size();
    if (delivered > 0) {
        m.t.first_chunk = m.t.first_token = m.t.first_answer = first_ns;
        m.t.last_token = first_ns + plan.chunks[delivered - 1].offset_ns;
        std::vector<double> gaps;
        gaps.reserve(delivered);
        for (std::size_t c = 1; c < delivered; ++c) {
            gaps.push_back(
                static_cast<double>(plan.chunks[c].offset_ns - plan.chunks[c - 1].offset_ns));
        }
        if (auto s = stats::summarize(std::move(gaps))) {
            m.chunk_gap_p50_ns = std::llround(s->p50);
            m.chunk_gap_p99_ns = std::llround(s->p99);
            m.chunk_gap_max_ns = std::llround(s->max);
        }
    }
    m.output_events = static_cast<std::int64_t>(delivered);
    // The terminal event goes out with the last chunk; a cut stream ends when the cut chunk
    // was due.
    m.t.done =
        complete ? m.t.last_token.value_or(first_ns) : first_ns + plan.chunks[delivered].offset_ns;
    if (complete) {
        m.output_tokens = plan.output_tokens;
    } else {
        // No usage arrives on a cut stream: the client estimates from what it received.
        m.output_tokens = delivered > 0 ? plan.chunks[delivered - 1].first_token +
                                              plan.chunks[delivered - 1].token_count
                                        : 0;
        m.token_source = TokenSource::estimate;
    }
}

}  // namespace

HistoryGenerator::HistoryGenerator(Profile profile, HistoryOptions options)
    : model_(std::move(profile)), options_(std::move(options)) {
    check(!options_.tasks.empty(), "at least one task is needed");
    check(options_.rate_per_s >= 0 && std::isfinite(options_.rate_per_s),
          "rate_per_s must be >= 0");
    check(options_.stream_share >= 0 && options_.stream_share <= 1,
          "stream_share must be in [0, 1]");
    check(options_.to_us >= options_.from_us, "to_us must not be before from_us");
    for (const HistoryTask& task : options_.tasks) {
        check(task.prompt_tokens_min >= 0 && task.prompt_tokens_min <= task.prompt_tokens_max,
              "a task's prompt_tokens_min must be in [0, prompt_tokens_max]");
        check(task.shared_prefix_tokens >= 0 && task.max_tokens >= 0,
              "a task's shared_prefix_tokens and max_tokens must be >= 0");
        shared_prefixes_.push_back(shared_prefix_text(task));
    }
    for (const ClientRegion& region : options_.client_regions) {
        check(region.rtt_ms >= 0, "a client region's rtt_ms must be >= 0");
    }
    options_.labels.source = "sim";
    next_us_ = static_cast<double>(options_.from_us);
    advance();
}

// Poisson arrivals: exponential gaps with mean 1 / rate.
void HistoryGenerator::advance() {
    if (options_.rate_per_s <= 0) {
        next_us_ = static_cast<double>(options_.to_us);
        return;
    }
    Rng rng(combine_seeds(options_.seed, combine_seeds(kArrival, index_)));
    next_us_ += -std::log1p(-rng.uniform()) / options_.rate_per_s * 1e6;
}

std::size_t HistoryGenerator::next(std::vector<Measurement>& out, std::size_t max) {
    std::size_t made = 0;
    while (made < max && !done()) {
        out.push_back(make(static_cast<std::int64_t>(next_us_)));
        ++index_;
        ++made;
        advance();
    }
    return made;
}

Measurement HistoryGenerator::make(std::int64_t ts_us) {
    Rng rng(combine_seeds(options_.seed, combine_seeds(kRecord, index_)));
    const auto task_index = static_cast<std::size_t>(
        rng.uniform_int(0, static_cast<std::int64_t>(options_.tasks.size()) - 1));
    const HistoryTask& task = options_.tasks[task_index];
    const bool stream = rng.uniform() < options_.stream_share;
    const ClientRegion* region = nullptr;
    if (!options_.client_regions.empty()) {
        region = &options_.client_regions[static_cast<std::size_t>(
            rng.uniform_int(0, static_cast<std::int64_t>(options_.client_regions.size()) - 1))];
    }
    const std::int64_t unique_tokens =
        rng.uniform_int(task.prompt_tokens_min, task.prompt_tokens_max);

    PlanInput input;
    if (task.shared_prefix_tokens > 0) {
        // Text only where the prefix cache matters: hashing a 10k-token prompt per record
        // would cost more than the rest of the record.
        prompt_ = shared_prefixes_[task_index];
        append_unique_text(prompt_, unique_tokens, rng);
        input.prompt_text = prompt_;
    } else {
        input.prompt_tokens = unique_tokens;
        input.prompt_hash = rng.next();
    }
    if (task.max_tokens > 0) input.max_tokens = task.max_tokens;
    input.wall_time_us = ts_us;
    input.request_seed = combine_seeds(options_.seed, combine_seeds(kPlan, index_));
    const RequestPlan plan = model_.plan(input);

    Measurement m;
    m.request_id = fmt::format("{:016x}{:016x}", rng.next(), rng.next());
    m.labels = options_.labels;
    m.labels.task = task.name;
    m.labels.stream = stream;
    if (region != nullptr) m.labels.client_region = region->name;
    m.ts_us = ts_us;
    const std::int64_t rtt_ns = region != nullptr ? ms_to_ns(region->rtt_ms) : 0;

    if (plan.fault.is_http_error()) {
        m.http_status = plan.fault.http_status();
        m.status = RequestStatus::http(m.http_status);
        m.t.headers = m.t.done = rtt_ns + plan.ttft_ns;
        return m;
    }
    m.http_status = 200;
    m.prompt_tokens = plan.prompt_tokens;
    m.cached_prompt_tokens = plan.cached_prompt_tokens;
    const std::int64_t first_ns = rtt_ns + plan.ttft_ns;
    const bool cut =
        plan.fault.kind == FaultKind::disconnect || plan.fault.kind == FaultKind::malformed;
    const RequestStatus cut_status = plan.fault.kind == FaultKind::disconnect
                                         ? RequestStatus::connection_error
                                         : RequestStatus::protocol_error;

    if (stream) {
        m.t.headers = rtt_ns + kHeadTurnaroundNs;
        record_stream(m, plan, first_ns, cut ? plan.fault.at_token : plan.output_tokens);
        if (cut) m.status = cut_status;
        return m;
    }
    // Not streamed: the whole body when the last token is generated; TTFB and E2E only.
    const std::int64_t body_ns =
        first_ns + (plan.token_offsets_ns.empty() ? 0 : plan.token_offsets_ns.back());
    m.t.done = body_ns;
    if (plan.fault.kind == FaultKind::disconnect) {
        m.status = cut_status;  // the connection closed instead of the response
        return m;
    }
    m.t.headers = body_ns;
    if (plan.fault.kind == FaultKind::malformed) {
        m.status = cut_status;  // a truncated body
        return m;
    }
    m.output_tokens = plan.output_tokens;
    return m;
}

}  // namespace tokenradar::sim
