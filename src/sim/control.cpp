#include <tokenradar/sim/control.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <cmath>
#include <iterator>

namespace tokenradar::sim {
namespace {

// As in profiles ([tail], [[episodes]]): slower than this is a dead replica.
constexpr double kMaxMultiplier = 1000;
constexpr std::int64_t kMaxForMs = 86'400'000;  // one day
constexpr std::int64_t kNsPerMs = 1'000'000;

// What a value is, for messages: the number itself, else its JSON kind (never the bytes of
// a string, which could be long).
std::string describe(const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::int64:
            return fmt::format("{}", v.get_int64());
        case boost::json::kind::uint64:
            return fmt::format("{}", v.get_uint64());
        case boost::json::kind::double_:
            return fmt::format("{}", v.get_double());
        case boost::json::kind::string:
            return "a string";
        case boost::json::kind::bool_:
            return v.get_bool() ? "true" : "false";
        case boost::json::kind::null:
            return "null";
        case boost::json::kind::array:
            return "an array";
        case boost::json::kind::object:
            return "an object";
    }
    return "a value";
}

Error bad_field(std::string_view field, std::string_view expected, const boost::json::value& v) {
    return {Errc::bad_request,
            fmt::format("{}: expected {}, got {}", field, expected, describe(v))};
}

Result<double> read_number(std::string_view field, const boost::json::value& v, double min,
                           double max) {
    const std::string expected = fmt::format("a number from {} to {}", min, max);
    if (!v.is_number()) return bad_field(field, expected, v);
    boost::system::error_code ec;
    const double x = v.to_number<double>(ec);
    if (ec || !(x >= min && x <= max)) return bad_field(field, expected, v);
    return x;
}

Result<std::int64_t> read_for_ms(const boost::json::value& v) {
    const std::string expected = fmt::format("an integer from 1 to {} (milliseconds)", kMaxForMs);
    if (!v.is_number()) return bad_field("for_ms", expected, v);
    boost::system::error_code ec;
    const double x = v.to_number<double>(ec);
    if (ec || !(x >= 1 && x <= static_cast<double>(kMaxForMs)) || x != std::floor(x)) {
        return bad_field("for_ms", expected, v);
    }
    return static_cast<std::int64_t>(x);
}

std::int64_t ceil_ms(std::int64_t ns) { return (ns + kNsPerMs - 1) / kNsPerMs; }

void append_condition(std::string& out, const Condition& c) {
    fmt::format_to(std::back_inserter(out),
                   R"("ttft_multiplier":{},"tpot_multiplier":{},"error_rate":{})",
                   c.ttft_multiplier, c.tpot_multiplier, c.error_rate);
}

void append_remaining(std::string& out, std::optional<std::int64_t> remaining_ns) {
    if (remaining_ns) {
        fmt::format_to(std::back_inserter(out), R"(,"remaining_ms":{})", ceil_ms(*remaining_ns));
    } else {
        out += R"(,"remaining_ms":null)";
    }
}

}  // namespace

Result<ControlCommand> parse_control_body(std::string_view body) {
    if (body.size() > kMaxControlBodyBytes) {
        return Error{Errc::payload_too_large, fmt::format("body: expected at most {} bytes, got {}",
                                                          kMaxControlBodyBytes, body.size())};
    }
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(body, ec);
    if (ec) {
        return Error{Errc::bad_request,
                     fmt::format("body: expected a JSON object such as {{\"ttft_multiplier\": 3, "
                                 "\"for_ms\": 10000}} ({})",
                                 ec.message())};
    }
    if (!doc.is_object()) return bad_field("body", "a JSON object", doc);
    ControlCommand command;
    for (const auto& [key, value] : doc.get_object()) {
        if (key == "ttft_multiplier") {
            auto v = read_number(key, value, 1, kMaxMultiplier);
            if (!v) return v.error();
            command.condition.ttft_multiplier = *v;
        } else if (key == "tpot_multiplier") {
            auto v = read_number(key, value, 1, kMaxMultiplier);
            if (!v) return v.error();
            command.condition.tpot_multiplier = *v;
        } else if (key == "error_rate") {
            auto v = read_number(key, value, 0, 1);
            if (!v) return v.error();
            command.condition.error_rate = *v;
        } else if (key == "for_ms") {
            auto v = read_for_ms(value);
            if (!v) return v.error();
            command.for_ms = *v;
        } else {
            // The key itself is not quoted back: it may be long. Its length is bounded by
            // the body's, and Boost.JSON has checked it is valid UTF-8.
            return Error{Errc::bad_request,
                         fmt::format("{}: unknown field (known: ttft_multiplier, "
                                     "tpot_multiplier, error_rate, for_ms)",
                                     key.size() <= 64 ? std::string_view(key) : "a long name")};
        }
    }
    return command;
}

std::optional<ActiveEpisode> active_episode(std::span<const Episode> episodes,
                                            std::int64_t elapsed_ns) {
    for (std::size_t i = 0; i < episodes.size(); ++i) {
        const Episode& e = episodes[i];
        if (elapsed_ns < e.after_ns) continue;
        const std::int64_t since = elapsed_ns - e.after_ns;
        const std::int64_t into = e.every_ns > 0 ? since % e.every_ns : since;
        if (into < e.duration_ns) return ActiveEpisode{i, e.duration_ns - into};
    }
    return std::nullopt;
}

std::string_view to_string(ConditionSource source) noexcept {
    switch (source) {
        case ConditionSource::none:
            return "none";
        case ConditionSource::episode:
            return "episode";
        case ConditionSource::command:
            return "command";
    }
    return "none";
}

SimControl::SimControl(std::vector<Episode> episodes) : episodes_(std::move(episodes)) {}

void SimControl::start(std::int64_t now_ns) {
    std::lock_guard lock(mutex_);
    start_ns_ = now_ns;
}

void SimControl::command(const ControlCommand& command, std::int64_t now_ns) {
    std::lock_guard lock(mutex_);
    command_ = command;
    expires_ns_.reset();
    if (command.for_ms) expires_ns_ = now_ns + *command.for_ms * kNsPerMs;
}

void SimControl::clear() {
    std::lock_guard lock(mutex_);
    command_.reset();
    expires_ns_.reset();
}

ControlState SimControl::state(std::int64_t now_ns) const {
    ControlState s;
    {
        std::lock_guard lock(mutex_);
        s.elapsed_ns = now_ns - start_ns_;
        if (command_ && (!expires_ns_ || now_ns < *expires_ns_)) {
            s.command = command_;
            if (expires_ns_) s.command_remaining_ns = *expires_ns_ - now_ns;
        }
    }
    s.episode = active_episode(episodes_, s.elapsed_ns);
    if (s.episode) s.episode_condition = episodes_[s.episode->index].condition;
    if (s.command) {
        s.source = ConditionSource::command;
        s.effective = s.command->condition;
    } else if (s.episode) {
        s.source = ConditionSource::episode;
        s.effective = s.episode_condition;
    }
    return s;
}

std::string control_state_json(const ControlState& s) {
    std::string out = fmt::format(R"({{"elapsed_ms":{},"command":)", s.elapsed_ns / kNsPerMs);
    if (s.command) {
        out += '{';
        append_condition(out, s.command->condition);
        append_remaining(out, s.command_remaining_ns);
        out += '}';
    } else {
        out += "null";
    }
    out += R"(,"episode":)";
    if (s.episode) {
        fmt::format_to(std::back_inserter(out), R"({{"index":{},)", s.episode->index);
        append_condition(out, s.episode_condition);
        append_remaining(out, s.episode->remaining_ns);
        out += '}';
    } else {
        out += "null";
    }
    fmt::format_to(std::back_inserter(out), R"(,"effective":{{"source":"{}",)",
                   to_string(s.source));
    append_condition(out, s.effective);
    std::optional<std::int64_t> remaining;
    if (s.source == ConditionSource::command) remaining = s.command_remaining_ns;
    if (s.source == ConditionSource::episode) remaining = s.episode->remaining_ns;
    append_remaining(out, remaining);
    out += "}}";
    return out;
}

}  // namespace tokenradar::sim
