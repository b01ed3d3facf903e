#include <tokenradar/route/router.hpp>

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>

namespace tokenradar::route {
namespace {

constexpr std::size_t kMaxMembers = 64;  // `tried` is a 64-bit mask
constexpr std::int64_t kHedgeUnit = 100;
constexpr std::int64_t kMaxBankedHedges = 10;

bool tried(const RouteQuery& query, std::size_t i) { return ((query.tried >> i) & 1U) != 0; }

// Rendezvous (highest random weight) hashing: the member a prompt of this hash lands on when
// no replica has seen it, the same on every node, and moving only 1/n of the prompts when a
// member comes or goes.
std::uint64_t rendezvous_weight(std::uint64_t key, std::size_t member) {
    const std::uint64_t m = member;
    return XXH3_64bits_withSeed(&m, sizeof m, key);
}

}  // namespace

std::string_view to_string(Strategy strategy) noexcept {
    switch (strategy) {
        case Strategy::priority:
            return "priority";
        case Strategy::round_robin:
            return "round_robin";
        case Strategy::latency:
            return "latency";
        case Strategy::affinity:
            return "affinity";
    }
    return "priority";
}

Router::Router(RoutingPolicy policy, std::vector<std::shared_ptr<UpstreamEstimate>> members,
               std::uint64_t seed)
    : policy_(std::move(policy)), members_(std::move(members)), random_state_(seed | 1U) {
    assert(members_.size() <= kMaxMembers);  // the config allows fewer
    if (policy_.strategy == Strategy::affinity) affinity_.emplace(policy_.affinity.table_entries);
}

std::uint64_t Router::next_random() {
    // SplitMix64 over an atomic counter: lock-free, and every caller gets its own draw.
    std::uint64_t z = random_state_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

bool Router::eligible(std::size_t i, const RouteQuery& query, bool need_available) const {
    if (tried(query, i) || is_local(i) || ((query.elsewhere >> i) & 1U) != 0) return false;
    return !need_available || members_[i]->available(query.now_ns);
}

std::optional<std::size_t> Router::by_priority(const RouteQuery& query, bool need_available) const {
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (eligible(i, query, need_available)) return i;
    }
    return std::nullopt;
}

std::optional<std::size_t> Router::by_turn(const RouteQuery& query) {
    // Turns over the cloud members only: the offload server is never a turn.
    const std::size_t n = members_.size() - (policy_.offload.enabled ? 1 : 0);
    if (n == 0) return std::nullopt;
    const std::uint64_t start = turn_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (start + k) % n;
        if (eligible(i, query, true)) return i;
    }
    return std::nullopt;
}

std::optional<std::size_t> Router::by_latency(const RouteQuery& query, bool need_available) {
    std::array<std::uint8_t, kMaxMembers> candidates{};
    std::size_t n = 0;
    double total_weight = 0;
    double measured_sum = 0;
    int measured = 0;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (!eligible(i, query, need_available)) continue;
        candidates[n++] = static_cast<std::uint8_t>(i);
        total_weight += members_[i]->limits().weight;
        if (members_[i]->measured()) {
            measured_sum += members_[i]->estimate_ns(query.now_ns);
            ++measured;
        }
    }
    if (n == 0) return std::nullopt;
    if (n == 1) return candidates[0];
    // An upstream not measured yet costs what the measured ones do on average, so it gets
    // its share at once and an early burst is spread by the in-flight counts.
    const double unmeasured = measured > 0 ? measured_sum / measured : 1.0;
    // Two distinct members drawn in proportion to their weights (Finagle's P2C), the cheaper
    // one taken.
    auto draw = [&](std::size_t skip, double weight_left) {
        const double unit = static_cast<double>(next_random() >> 11) * 0x1.0p-53;
        double at = unit * weight_left;
        std::size_t last = skip == 0 ? 1 : 0;
        for (std::size_t k = 0; k < n; ++k) {
            if (k == skip) continue;
            last = k;
            at -= members_[candidates[k]]->limits().weight;
            if (at < 0) return k;
        }
        return last;
    };
    const std::size_t a = draw(n, total_weight);
    const std::size_t b = draw(a, total_weight - members_[candidates[a]]->limits().weight);
    const double cost_a = members_[candidates[a]]->cost(query.now_ns, unmeasured);
    const double cost_b = members_[candidates[b]]->cost(query.now_ns, unmeasured);
    return candidates[cost_b < cost_a ? b : a];
}

std::optional<Pick> Router::by_affinity(const RouteQuery& query) {
    if (query.prefix.empty()) return std::nullopt;
    std::optional<std::size_t> target;
    if (auto match = affinity_->longest(query.prefix);
        match && match->upstream < members_.size() &&
        static_cast<double>(match->blocks) >=
            policy_.affinity.min_match * static_cast<double>(query.prefix.size())) {
        target = match->upstream;
    }
    if (!target) {
        // Nobody saw enough of it: the prompt's own deepest block decides, alike on every node.
        std::uint64_t best = 0;
        for (std::size_t i = 0; i < members_.size(); ++i) {
            if (tried(query, i) || is_local(i)) continue;
            const std::uint64_t w = rendezvous_weight(query.prefix.back(), i);
            if (!target || w > best) {
                best = w;
                target = i;
            }
        }
    }
    if (!target || !eligible(*target, query, true)) return std::nullopt;
    // The load guard: a replica well over the others' load gives the request up.
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    std::int64_t sum = 0;
    std::int64_t count = 0;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (is_local(i)) continue;
        const std::int64_t load = members_[i]->in_flight();
        least = std::min(least, load);
        sum += load;
        ++count;
    }
    const std::int64_t mine = members_[*target]->in_flight();
    const double mean = count > 0 ? static_cast<double>(sum) / static_cast<double>(count) : 0.0;
    if (mine - least > policy_.affinity.load_slack &&
        static_cast<double>(mine) > policy_.affinity.load_ratio * mean) {
        return std::nullopt;
    }
    return Pick{*target, Route::affinity};
}

bool Router::offloads(const RouteQuery& query) const {
    const OffloadPolicy& o = policy_.offload;
    const std::size_t local = members_.size() - 1;
    if (!o.enabled || tried(query, local)) return false;
    if (query.prompt_tokens > o.max_prompt_tokens) return false;
    if (!query.max_tokens || *query.max_tokens > o.max_tokens) return false;
    if (!o.tasks.empty() &&
        std::find(o.tasks.begin(), o.tasks.end(), query.task) == o.tasks.end()) {
        return false;
    }
    const UpstreamEstimate& server = *members_[local];
    if (!server.available(query.now_ns)) return false;
    if (server.in_flight() >= o.max_in_flight) return false;  // busy: the cloud takes it
    return o.max_ttft_ns <= 0 ||
           server.estimate_ns(query.now_ns) <= static_cast<double>(o.max_ttft_ns);
}

std::optional<Pick> Router::by_strategy(const RouteQuery& query) {
    std::optional<std::size_t> chosen;
    Route route = Route::primary;
    switch (policy_.strategy) {
        case Strategy::priority:
            chosen = by_priority(query, true);
            route = chosen == 0U ? Route::primary : Route::fallback;
            break;
        case Strategy::round_robin:
            chosen = by_turn(query);
            break;
        case Strategy::affinity:
            if (auto placed = by_affinity(query)) return placed;
            [[fallthrough]];
        case Strategy::latency:
            chosen = by_latency(query, true);
            route = Route::latency;
            break;
    }
    if (!chosen) return std::nullopt;
    return Pick{*chosen, route};
}

std::optional<Pick> Router::pick(const RouteQuery& query) {
    const bool first = query.tried == 0;
    if (offloads(query)) return Pick{members_.size() - 1, Route::local};
    std::optional<Pick> chosen;
    if (query.elsewhere != 0) {
        // The client's nearest region first: only its members, while one can take it.
        chosen = by_strategy(query);
        if (chosen && chosen->route != Route::affinity) chosen->route = Route::region;
        if (!chosen) {
            RouteQuery anywhere = query;
            anywhere.elsewhere = 0;
            chosen = by_strategy(anywhere);
        }
    } else {
        chosen = by_strategy(query);
    }
    if (!chosen) {
        // Nobody can take it by breaker and caps: still better to ask than to fail outright.
        RouteQuery anywhere = query;
        anywhere.elsewhere = 0;
        const auto member = policy_.strategy == Strategy::priority ? by_priority(anywhere, false)
                                                                   : by_latency(anywhere, false);
        if (member) chosen = Pick{*member, Route::primary};
    }
    if (!chosen) {
        // The local server is the last resort when every other member was tried.
        const std::size_t local = members_.size() - 1;
        if (policy_.offload.enabled && !tried(query, local)) return Pick{local, Route::fallback};
        return std::nullopt;
    }
    if (!first) chosen->route = Route::fallback;
    return chosen;
}

void Router::count_request() {
    if (!policy_.hedge.enabled) return;
    const auto deposit = static_cast<std::int64_t>(std::llround(policy_.hedge.budget * kHedgeUnit));
    std::int64_t balance = hedge_balance_.load(std::memory_order_relaxed);
    std::int64_t next = 0;
    do {
        next = std::min(balance + deposit, kMaxBankedHedges * kHedgeUnit);
    } while (!hedge_balance_.compare_exchange_weak(balance, next, std::memory_order_relaxed));
}

std::optional<std::int64_t> Router::hedge_delay(std::size_t member, std::int64_t prompt_tokens,
                                                bool declares_tools) const {
    const HedgePolicy& h = policy_.hedge;
    if (!h.enabled || (declares_tools && !h.tools) || members_.size() < 2) return std::nullopt;
    if (h.delay_ns > 0) return h.delay_ns;
    const std::int64_t late =
        members_[member]->ttft_quantile_ns(h.quantile, prompt_tokens, h.min_samples);
    if (late <= 0) return std::nullopt;
    return std::max(late, h.min_delay_ns);
}

bool Router::take_hedge() {
    std::int64_t balance = hedge_balance_.load(std::memory_order_relaxed);
    do {
        if (balance < kHedgeUnit) return false;
    } while (!hedge_balance_.compare_exchange_weak(balance, balance - kHedgeUnit,
                                                   std::memory_order_relaxed));
    return true;
}

void Router::refund_hedge() { hedge_balance_.fetch_add(kHedgeUnit, std::memory_order_relaxed); }

void Router::served(std::span<const std::uint64_t> prefix, std::size_t member) {
    if (affinity_ && !prefix.empty()) affinity_->remember(prefix, member);
}

}  // namespace tokenradar::route
