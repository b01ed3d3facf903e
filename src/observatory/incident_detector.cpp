#include <tokenradar/observatory/incident_detector.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace tokenradar::observatory {
namespace {

// 1.4826 x MAD estimates a normal distribution's standard deviation.
constexpr double kMadToSigma = 1.4826;

struct CellState {
    std::optional<Baseline> baseline;
    std::int64_t breach_since = -1;  // start of the current run of breaching evaluations
    std::int64_t last_breach = -1;
    std::int64_t fired_since = -1;  // the run that made it fire
    bool firing = false;
    std::uint64_t seen_round = 0;
    std::vector<Breach> breaches;  // this evaluation's
};

using ModelKey = std::pair<std::string, std::string>;

void keep_worst(std::vector<Breach>& worst, const Breach& b) {
    for (Breach& w : worst) {
        if (w.stat != b.stat) continue;
        const bool bigger = b.stat == Watched::error_rate ? b.recent > w.recent : b.ratio > w.ratio;
        if (bigger) w = b;
        return;
    }
    worst.push_back(b);
}

}  // namespace

struct IncidentDetector::State {
    DetectorOptions options;
    std::map<CellRef, CellState> cells;
    std::map<ModelKey, Incident> open;
    std::deque<Incident> closed;  // newest first
    std::uint64_t next_id = 1;
    std::uint64_t round = 0;

    // Records a firing cell's breaches in its model's open incident.
    static void note(Incident& incident, const CellRef& ref, const CellState& cell) {
        auto it = std::find_if(incident.cells.begin(), incident.cells.end(),
                               [&](const AffectedCell& a) { return a.region == ref.region; });
        if (it == incident.cells.end()) {
            incident.cells.push_back(AffectedCell{ref.region, cell.fired_since, {}});
            it = std::prev(incident.cells.end());
        }
        for (const Breach& b : cell.breaches) {
            keep_worst(it->breaches, b);
            if (b.stat == Watched::error_rate) {
                incident.worst_error_rate = std::max(incident.worst_error_rate, b.recent);
            } else if (b.ratio > incident.worst_ratio) {
                incident.worst_ratio = b.ratio;
                incident.worst_stat = b.stat;
            }
        }
    }
};

std::pair<double, double> median_and_spread(std::vector<double> values) {
    if (values.empty()) return {0.0, 0.0};
    const auto median_of = [](std::vector<double>& v) {
        const std::size_t mid = v.size() / 2;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
        const double upper = v[mid];
        if (v.size() % 2 == 1) return upper;
        const double lower =
            *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
        return (lower + upper) / 2;
    };
    const double median = median_of(values);
    for (double& v : values) v = std::abs(v - median);
    return {median, kMadToSigma * median_of(values)};
}

Baseline baseline_of(std::span<const CellStats> weeks, const DetectorOptions& o) {
    Baseline b;
    std::vector<double> values;
    for (std::size_t i = 0; i < kLatencyStats; ++i) {
        values.clear();
        for (const CellStats& w : weeks) {
            const std::uint64_t n = i < 2 ? w.ttft_samples : w.tpot_samples;
            if (n >= o.min_baseline_samples && w.values[i] > 0) values.push_back(w.values[i]);
        }
        const auto [median, spread] = median_and_spread(values);
        b.median[i] = median;
        const bool p95 = i % 2 == 1;
        b.threshold[i] =
            std::max(median * (p95 ? o.ratio_p95 : o.ratio), median + o.mad_k * spread);
    }
    std::uint64_t samples = 0, errors = 0;
    for (const CellStats& w : weeks) {
        if (w.samples < o.min_baseline_samples) continue;
        samples += w.samples;
        errors += w.errors;
    }
    b.error_rate = samples == 0 ? 0.0 : static_cast<double>(errors) / static_cast<double>(samples);
    return b;
}

void judge(const CellStats& s, const Baseline* baseline, const DetectorOptions& o,
           std::vector<Breach>& out) {
    out.clear();
    if (baseline != nullptr) {
        const Baseline& b = *baseline;
        for (std::size_t i = 0; i < kLatencyStats; ++i) {
            const std::uint64_t n = i < 2 ? s.ttft_samples : s.tpot_samples;
            if (n < o.min_samples || b.median[i] <= 0) continue;
            if (s.values[i] > b.threshold[i]) {
                out.push_back(Breach{static_cast<Watched>(i), s.values[i], b.median[i],
                                     s.values[i] / b.median[i]});
            }
        }
    }
    if (s.samples >= o.min_samples && s.errors >= o.min_errors) {
        const double base = baseline != nullptr ? baseline->error_rate : 0.0;
        const double rate = static_cast<double>(s.errors) / static_cast<double>(s.samples);
        if (rate > base * o.error_ratio && rate > base + o.error_jump) {
            out.push_back(Breach{Watched::error_rate, rate, base, base > 0 ? rate / base : 0.0});
        }
    }
}

IncidentDetector::IncidentDetector(DetectorOptions options) : state_(std::make_unique<State>()) {
    state_->options = options;
}
IncidentDetector::~IncidentDetector() = default;
IncidentDetector::IncidentDetector(IncidentDetector&&) noexcept = default;
IncidentDetector& IncidentDetector::operator=(IncidentDetector&&) noexcept = default;

const DetectorOptions& IncidentDetector::options() const noexcept { return state_->options; }

void IncidentDetector::set_baseline(const CellRef& cell, std::span<const CellStats> weeks) {
    state_->cells[cell].baseline = baseline_of(weeks, state_->options);
}

void IncidentDetector::clear_baselines() {
    for (auto& [ref, cell] : state_->cells) cell.baseline.reset();
}

std::vector<IncidentEvent> IncidentDetector::evaluate(
    std::int64_t now_us, std::span<const std::pair<CellRef, CellStats>> recent) {
    State& s = *state_;
    const DetectorOptions& o = s.options;
    const std::uint64_t round = ++s.round;
    for (const auto& [ref, stats] : recent) {
        CellState& cell = s.cells[ref];
        cell.seen_round = round;
        judge(stats, cell.baseline ? &*cell.baseline : nullptr, o, cell.breaches);
    }
    std::vector<IncidentEvent> events;
    for (auto& [ref, cell] : s.cells) {
        if (cell.seen_round != round) cell.breaches.clear();
        if (cell.breaches.empty()) {
            cell.breach_since = -1;
            if (cell.firing && now_us - cell.last_breach >= o.close_after_us) cell.firing = false;
            continue;
        }
        if (cell.breach_since < 0) cell.breach_since = now_us;
        cell.last_breach = now_us;
        if (!cell.firing && now_us - cell.breach_since >= o.open_after_us) {
            cell.firing = true;
            cell.fired_since = cell.breach_since;
        }
        if (!cell.firing) continue;
        ModelKey key{ref.provider, ref.model};
        auto it = s.open.find(key);
        if (it == s.open.end()) {
            Incident fresh;
            fresh.id = s.next_id++;
            fresh.provider = ref.provider;
            fresh.model = ref.model;
            fresh.start_us = cell.fired_since;
            fresh.detected_us = now_us;
            it = s.open.emplace(std::move(key), std::move(fresh)).first;
            State::note(it->second, ref, cell);
            events.push_back(IncidentEvent{IncidentEvent::Kind::opened, it->second});
            continue;
        }
        it->second.start_us = std::min(it->second.start_us, cell.fired_since);
        State::note(it->second, ref, cell);
    }
    // An incident closes when none of its model's cells fires any more.
    for (auto it = s.open.begin(); it != s.open.end();) {
        const auto& [provider, model] = it->first;
        const auto first = s.cells.lower_bound(CellRef{provider, model, ""});
        bool firing = false;
        for (auto c = first; c != s.cells.end() && c->first.provider == provider &&
                             c->first.model == model && !firing;
             ++c) {
            firing = c->second.firing;
        }
        if (firing) {
            ++it;
            continue;
        }
        it->second.end_us = now_us;
        events.push_back(IncidentEvent{IncidentEvent::Kind::closed, it->second});
        s.closed.push_front(std::move(it->second));
        if (s.closed.size() > o.closed_kept) s.closed.pop_back();
        it = s.open.erase(it);
    }
    return events;
}

std::vector<Incident> IncidentDetector::incidents() const {
    std::vector<Incident> out;
    out.reserve(state_->open.size() + state_->closed.size());
    for (const auto& [key, incident] : state_->open) out.push_back(incident);
    std::sort(out.begin(), out.end(),
              [](const Incident& a, const Incident& b) { return a.id < b.id; });
    out.insert(out.end(), state_->closed.begin(), state_->closed.end());
    return out;
}

std::size_t IncidentDetector::open_count() const noexcept { return state_->open.size(); }

}  // namespace tokenradar::observatory
