#pragma once
// Past measurements of a simulated provider: metrics.md records drawn from a profile's
// LatencyModel as if clients had called it at random moments (Poisson arrivals) over a
// window of wall-clock time. `tokenradar demo --history 7d` fills its store with them so the
// dashboard's heatmaps are full at once. Each record's latency comes from the model's own
// plan at the record's own wall-clock time (so the peak curve applies in the profile's time
// zone), its faults become failure statuses, and its labels say `source = "sim"`.
//
// Deterministic: the same profile, options and seed give the same records. Clock-free, no
// I/O, never suspends. A generator is used by one thread at a time; generators are
// independent (each has its own model and prefix cache).

#include <tokenradar/core/measurement.hpp>
#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/sim/profile.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tokenradar::sim {

// One kind of request (its `task` label) and the sizes of its prompts and answers.
struct HistoryTask {
    std::string name;
    // The prompt's unique part, drawn uniformly from [min, max] tokens per request.
    std::int64_t prompt_tokens_min = 0;
    std::int64_t prompt_tokens_max = 0;
    // A prefix every request of this task repeats word for word (a system prompt, a manual):
    // it goes through the profile's prefix cache, so later requests report it as cached
    // prompt tokens and skip its prefill, as the live sim does.
    std::int64_t shared_prefix_tokens = 0;
    std::int64_t max_tokens = 0;  // the request's max_tokens; 0 = the profile's default
};

// Where the simulated clients sit: the `client_region` label and the network round trip
// between that region and the provider, added to every moment after the request's send.
struct ClientRegion {
    std::string name;
    double rtt_ms = 0;
};

struct HistoryOptions {
    std::int64_t from_us = 0;  // window [from_us, to_us), UTC microseconds
    std::int64_t to_us = 0;
    double rate_per_s = 0;  // mean requests per second (Poisson arrivals)
    std::uint64_t seed = 0;
    std::vector<HistoryTask> tasks;  // one is chosen uniformly per request; must not be empty
    double stream_share = 0.5;       // probability that a request streams
    std::vector<ClientRegion> client_regions;  // chosen uniformly; empty leaves the label ""
    // provider, model, endpoint, upstream_region and api as a gateway in front of this
    // provider records them; task, client_region, stream are set per record, source to "sim".
    Labels labels;
};

class HistoryGenerator {
  public:
    // Throws std::invalid_argument naming the option when the options cannot generate
    // (no tasks, a negative rate or share, min > max, to < from).
    HistoryGenerator(Profile profile, HistoryOptions options);

    // Appends the next records of the window, oldest first, at most `max`; returns how many
    // were appended (0 once the window is exhausted).
    std::size_t next(std::vector<Measurement>& out, std::size_t max);

    [[nodiscard]] std::uint64_t generated() const noexcept { return index_; }
    [[nodiscard]] bool done() const noexcept {
        return next_us_ >= static_cast<double>(options_.to_us);
    }

  private:
    Measurement make(std::int64_t ts_us);
    void advance();

    LatencyModel model_;
    HistoryOptions options_;
    std::vector<std::string> shared_prefixes_;  // per task: the repeated prefix text
    std::string prompt_;                        // reused buffer for prompts with text
    double next_us_ = 0;                        // the next arrival (exact, not rounded)
    std::uint64_t index_ = 0;                   // records made so far
};

}  // namespace tokenradar::sim
