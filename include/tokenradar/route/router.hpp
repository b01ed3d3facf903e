#pragma once
// The routing decision of one virtual model: which upstream a request's next attempt goes
// to, whether and when to hedge it, and the hedge budget. Sans-IO: the caller passes the time
// and the upstreams' live estimates (shared between the virtual models that name the same
// upstream); the relay does the I/O and reports each attempt's outcome to the estimates.
// Thread-safe; never suspends. src/route/README.md explains the strategies.

#include <tokenradar/core/labels.hpp>
#include <tokenradar/route/prefix_blocks.hpp>
#include <tokenradar/route/upstream_estimate.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::route {

enum class Strategy : std::uint8_t { priority, round_robin, latency, affinity };
[[nodiscard]] std::string_view to_string(Strategy strategy) noexcept;

struct HedgePolicy {
    bool enabled = false;
    std::int64_t delay_ns = 0;      // fixed delay; 0 = the primary's recent TTFT quantile
    double quantile = 0.95;         // the adaptive delay's quantile ("p95")
    std::int64_t min_delay_ns = 0;  // the adaptive delay is never shorter
    int min_samples = 20;           // the adaptive delay waits for this many TTFTs
    double budget = 0.1;            // hedges per request, at most, over time
    bool tools = false;             // also hedge requests that declare tools
};

struct AffinityPolicy {
    std::size_t block_bytes = 256;  // about 64 tokens
    std::size_t max_blocks = 512;   // hash at most this much of the prompt (128 KiB)
    // Follow the replica that saw the prompt only when it saw at least this share of its
    // blocks; a shorter match (a common system prompt) places the prompt by its own hash.
    double min_match = 0.5;
    // The load guard (SGLang's router): affinity yields to the latency choice when the
    // chosen replica has more than `load_slack` requests in flight over the least loaded one
    // and more than `load_ratio` times the mean.
    std::int64_t load_slack = 4;
    double load_ratio = 1.5;
    std::size_t table_entries = 1 << 16;
};

// Short, simple requests to a local server (llama.cpp, Ollama): the last member of the
// router's upstreams. Overflow to the others when it is busy or slow.
struct OffloadPolicy {
    bool enabled = false;
    std::int64_t max_prompt_tokens = 1024;
    std::int64_t max_tokens = 512;   // the request must set max_tokens, at most this
    std::vector<std::string> tasks;  // empty: any task
    std::int64_t max_in_flight = 4;  // busy beyond this
    std::int64_t max_ttft_ns = 0;    // slow beyond this estimate (normalised TTFT); 0 = never
};

struct RoutingPolicy {
    Strategy strategy = Strategy::priority;
    HedgePolicy hedge;
    std::int64_t ttft_deadline_ns = 0;  // 0 = none: else the next upstream after this
    // Prefer the upstreams of the region measured fastest from the client's (the caller
    // fills RouteQuery::elsewhere).
    bool nearest_region = false;
    AffinityPolicy affinity;
    OffloadPolicy offload;
};

struct RouteQuery {
    std::int64_t now_ns = 0;
    std::int64_t prompt_tokens = 0;  // an estimate (bytes / 4 is fine): it normalises TTFT
    std::optional<std::int64_t> max_tokens;
    std::string_view task;
    std::span<const std::uint64_t> prefix;  // prefix_blocks(); affinity only
    std::uint64_t tried = 0;                // bit i: member i has had an attempt already
    // Nearest region: bit i set for members outside the region measured fastest from the
    // client's. They are passed over while a member of that region can take the request.
    std::uint64_t elsewhere = 0;
};

struct Pick {
    std::size_t member = 0;
    Route route = Route::primary;
};

class Router {
  public:
    // `members`: the virtual model's upstreams in config order (and, with offload, the local
    // server last). `seed`: the random draws of power of two choices.
    Router(RoutingPolicy policy, std::vector<std::shared_ptr<UpstreamEstimate>> members,
           std::uint64_t seed);

    // The next attempt's upstream, or nullopt when every member was tried. A member whose
    // breaker is open or whose caps are full is passed over while another can take the
    // request; when none can, the best of them still gets it (an answer, even a 429, beats
    // none).
    [[nodiscard]] std::optional<Pick> pick(const RouteQuery& query);
    // Once per client request that reaches an upstream: feeds the hedge budget.
    void count_request();
    // How long to wait for the first token of `member`'s attempt before hedging; nullopt:
    // no hedge (off, too few samples for the adaptive delay, or a request with tools).
    [[nodiscard]] std::optional<std::int64_t> hedge_delay(std::size_t member,
                                                          std::int64_t prompt_tokens,
                                                          bool declares_tools) const;
    // Takes one hedge from the budget; false when it is spent.
    bool take_hedge();
    // Gives back a hedge taken for an attempt that could not be sent.
    void refund_hedge();
    // `member` served the prompt of `prefix` (affinity).
    void served(std::span<const std::uint64_t> prefix, std::size_t member);

    [[nodiscard]] const RoutingPolicy& policy() const noexcept { return policy_; }
    [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }
    [[nodiscard]] UpstreamEstimate& member(std::size_t i) const { return *members_[i]; }
    [[nodiscard]] bool is_local(std::size_t i) const noexcept {
        return policy_.offload.enabled && i + 1 == members_.size();
    }

  private:
    std::optional<std::size_t> by_priority(const RouteQuery& query, bool need_available) const;
    std::optional<std::size_t> by_turn(const RouteQuery& query);
    std::optional<std::size_t> by_latency(const RouteQuery& query, bool need_available);
    std::optional<Pick> by_affinity(const RouteQuery& query);
    bool offloads(const RouteQuery& query) const;
    std::optional<Pick> by_strategy(const RouteQuery& query);
    bool eligible(std::size_t i, const RouteQuery& query, bool need_available) const;
    std::uint64_t next_random();

    const RoutingPolicy policy_;
    const std::vector<std::shared_ptr<UpstreamEstimate>> members_;
    std::atomic<std::uint64_t> random_state_;
    std::atomic<std::uint64_t> turn_{0};  // round robin
    std::optional<AffinityTable> affinity_;
    // The hedge budget as a token bucket of hundredths: each request deposits budget * 100,
    // a hedge takes 100; at most 10 hedges banked.
    std::atomic<std::int64_t> hedge_balance_{0};
};

}  // namespace tokenradar::route
