#pragma once
// A replica's condition at run time: the profile's scheduled episodes and the command of
// `POST /sim/control`, which wins while it lasts. Sans-IO and clock-free: every call takes
// the steady-clock time, the server passes its own. SimControl is thread-safe (one mutex,
// taken once per request); never suspends.

#include <tokenradar/core/error.hpp>
#include <tokenradar/sim/profile.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::sim {

inline constexpr std::size_t kMaxControlBodyBytes = 4096;

// The body of POST /sim/control: {"ttft_multiplier": 3, "tpot_multiplier": 1,
// "error_rate": 0.5, "for_ms": 10000}, every field optional (1, 1, 0, until changed).
struct ControlCommand {
    Condition condition;
    std::optional<std::int64_t> for_ms;
};

// Errc::bad_request naming the field and what was expected ("error_rate: expected a number
// from 0 to 1, got 2"), or Errc::payload_too_large past kMaxControlBodyBytes.
Result<ControlCommand> parse_control_body(std::string_view body);

struct ActiveEpisode {
    std::size_t index = 0;  // in the profile's [[episodes]]
    std::int64_t remaining_ns = 0;
};

// The first episode (in file order) active `elapsed_ns` after the server started: episode
// e is active in [after + k * every, after + k * every + duration) for k = 0 (and every
// k >= 0 when it repeats).
std::optional<ActiveEpisode> active_episode(std::span<const Episode> episodes,
                                            std::int64_t elapsed_ns);

enum class ConditionSource { none, episode, command };
[[nodiscard]] std::string_view to_string(ConditionSource source) noexcept;

// What GET /sim/control shows, and what a request is planned with (`effective`).
struct ControlState {
    std::int64_t elapsed_ns = 0;  // since the server started
    std::optional<ControlCommand> command;
    std::optional<std::int64_t> command_remaining_ns;  // nullopt: until changed
    std::optional<ActiveEpisode> episode;
    Condition episode_condition;  // of `episode`, when there is one
    ConditionSource source = ConditionSource::none;
    Condition effective;
};

class SimControl {
  public:
    explicit SimControl(std::vector<Episode> episodes);

    // The server started (listening): episodes count from here.
    void start(std::int64_t now_ns);
    // Replaces the previous command; it lasts for_ms from now, or until changed.
    void command(const ControlCommand& command, std::int64_t now_ns);
    void clear();
    [[nodiscard]] ControlState state(std::int64_t now_ns) const;
    [[nodiscard]] Condition condition(std::int64_t now_ns) const { return state(now_ns).effective; }

  private:
    const std::vector<Episode> episodes_;
    mutable std::mutex mutex_;
    std::int64_t start_ns_ = 0;
    std::optional<ControlCommand> command_;
    std::optional<std::int64_t> expires_ns_;  // nullopt: until changed
};

// The JSON of GET /sim/control (numbers in milliseconds):
// {"elapsed_ms":..., "command": null | {"ttft_multiplier", "tpot_multiplier", "error_rate",
//  "remaining_ms": null | n}, "episode": null | {"index", ..., "remaining_ms"},
//  "effective": {"source": "none|episode|command", "ttft_multiplier", "tpot_multiplier",
//  "error_rate", "remaining_ms": null | n}}
std::string control_state_json(const ControlState& state);

}  // namespace tokenradar::sim
