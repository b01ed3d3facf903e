#include <tokenradar/sim/control.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::sim {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kS = 1'000'000'000;

std::string error_of(std::string_view body) {
    auto r = parse_control_body(body);
    return r ? "no error" : r.error().message;
}

// ---- Episode schedule ---------------------------------------------------------------------

TEST(ActiveEpisode, OnceIsActiveFromAfterForItsDurationOnly) {
    const std::vector<Episode> episodes{{30 * kS, 20 * kS, 0, {2, 1, 0}}};
    EXPECT_FALSE(active_episode(episodes, 0));
    EXPECT_FALSE(active_episode(episodes, 30 * kS - 1));
    auto first = active_episode(episodes, 30 * kS);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->index, 0u);
    EXPECT_EQ(first->remaining_ns, 20 * kS);
    auto last = active_episode(episodes, 50 * kS - 1);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->remaining_ns, 1);
    EXPECT_FALSE(active_episode(episodes, 50 * kS));
    EXPECT_FALSE(active_episode(episodes, 1000 * kS)) << "no every: never again";
}

TEST(ActiveEpisode, EveryRepeatsTheWindowFromAfter) {
    // 10 s on from 30 s, every 60 s: [30, 40), [90, 100), [150, 160)...
    const std::vector<Episode> episodes{{30 * kS, 10 * kS, 60 * kS, {}}};
    for (std::int64_t k = 0; k < 4; ++k) {
        SCOPED_TRACE(k);
        const std::int64_t start = 30 * kS + k * 60 * kS;
        EXPECT_FALSE(active_episode(episodes, start - 1));
        ASSERT_TRUE(active_episode(episodes, start));
        EXPECT_EQ(active_episode(episodes, start)->remaining_ns, 10 * kS);
        EXPECT_EQ(active_episode(episodes, start + 4 * kS)->remaining_ns, 6 * kS);
        EXPECT_TRUE(active_episode(episodes, start + 10 * kS - 1));
        EXPECT_FALSE(active_episode(episodes, start + 10 * kS));
        EXPECT_FALSE(active_episode(episodes, start + 59 * kS));
    }
    EXPECT_FALSE(active_episode(episodes, 29 * kS)) << "nothing before the first window";
}

TEST(ActiveEpisode, TheFirstActiveInFileOrderCounts) {
    const std::vector<Episode> episodes{{10 * kS, 5 * kS, 0, {3, 1, 0}},
                                        {0, 100 * kS, 0, {2, 1, 0}}};
    EXPECT_EQ(active_episode(episodes, 5 * kS)->index, 1u);
    EXPECT_EQ(active_episode(episodes, 12 * kS)->index, 0u);
    EXPECT_EQ(active_episode(episodes, 15 * kS)->index, 1u);
    EXPECT_FALSE(active_episode(episodes, 100 * kS));
    EXPECT_FALSE(active_episode({}, 5 * kS));
}

// ---- Body parser ----------------------------------------------------------------------------

TEST(ControlBody, ParsesEveryFieldAndDefaultsTheRest) {
    auto all = parse_control_body(
        R"({"ttft_multiplier": 3, "tpot_multiplier": 1.5, "error_rate": 0.25, "for_ms": 10000})");
    ASSERT_TRUE(all) << all.error().message;
    EXPECT_EQ(all->condition.ttft_multiplier, 3);
    EXPECT_EQ(all->condition.tpot_multiplier, 1.5);
    EXPECT_EQ(all->condition.error_rate, 0.25);
    EXPECT_EQ(all->for_ms, 10000);

    auto none = parse_control_body(" {} ");
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->condition.normal());
    EXPECT_FALSE(none->for_ms) << "absent: until changed";

    auto bounds = parse_control_body(
        R"({"ttft_multiplier": 1000, "tpot_multiplier": 1, "error_rate": 1, "for_ms": 1e3})");
    ASSERT_TRUE(bounds) << bounds.error().message;
    EXPECT_EQ(bounds->for_ms, 1000) << "a whole number written as a float is an integer";
}

TEST(ControlBody, EachFieldsErrorsNameTheFieldAndTheRange) {
    EXPECT_EQ(error_of(R"({"ttft_multiplier": 0.5})"),
              "ttft_multiplier: expected a number from 1 to 1000, got 0.5");
    EXPECT_EQ(error_of(R"({"ttft_multiplier": 1001})"),
              "ttft_multiplier: expected a number from 1 to 1000, got 1001");
    EXPECT_EQ(error_of(R"({"ttft_multiplier": "3"})"),
              "ttft_multiplier: expected a number from 1 to 1000, got a string");
    EXPECT_EQ(error_of(R"({"tpot_multiplier": -2})"),
              "tpot_multiplier: expected a number from 1 to 1000, got -2");
    EXPECT_EQ(error_of(R"({"tpot_multiplier": null})"),
              "tpot_multiplier: expected a number from 1 to 1000, got null");
    EXPECT_EQ(error_of(R"({"error_rate": 2})"), "error_rate: expected a number from 0 to 1, got 2");
    EXPECT_EQ(error_of(R"({"error_rate": -0.1})"),
              "error_rate: expected a number from 0 to 1, got -0.1");
    EXPECT_EQ(error_of(R"({"error_rate": true})"),
              "error_rate: expected a number from 0 to 1, got true");
    EXPECT_EQ(error_of(R"({"for_ms": 0})"),
              "for_ms: expected an integer from 1 to 86400000 (milliseconds), got 0");
    EXPECT_EQ(error_of(R"({"for_ms": 1.5})"),
              "for_ms: expected an integer from 1 to 86400000 (milliseconds), got 1.5");
    EXPECT_EQ(error_of(R"({"for_ms": 86400001})"),
              "for_ms: expected an integer from 1 to 86400000 (milliseconds), got 86400001");
    EXPECT_EQ(error_of(R"({"for_ms": [1]})"),
              "for_ms: expected an integer from 1 to 86400000 (milliseconds), got an array");
    EXPECT_EQ(error_of(R"({"for_ms": 18446744073709551615})"),
              "for_ms: expected an integer from 1 to 86400000 (milliseconds), got "
              "18446744073709551615");
}

TEST(ControlBody, UnknownFieldsWrongShapesAndBadJsonAreBadRequests) {
    auto unknown = parse_control_body(R"({"ttft_multiplier": 2, "ttft_multipler": 3})");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, make_error_code(Errc::bad_request));
    EXPECT_EQ(unknown.error().message,
              "ttft_multipler: unknown field (known: ttft_multiplier, tpot_multiplier, "
              "error_rate, for_ms)");
    EXPECT_THAT(error_of(R"({")" + std::string(100, 'k') + R"(": 1})"),
                HasSubstr("a long name: unknown field"));
    EXPECT_EQ(error_of("[1, 2]"), "body: expected a JSON object, got an array");
    EXPECT_EQ(error_of("3"), "body: expected a JSON object, got 3");
    EXPECT_THAT(error_of(""), HasSubstr("body: expected a JSON object such as"));
    EXPECT_THAT(error_of(R"({"ttft_multiplier": 3)"), HasSubstr("body: expected a JSON object"));
    auto bad_json = parse_control_body("{nope}");
    ASSERT_FALSE(bad_json);
    EXPECT_EQ(bad_json.error().code, make_error_code(Errc::bad_request));
}

TEST(ControlBody, TooBigIsPayloadTooLargeAtTheBound) {
    // Exactly the bound still parses (padded with whitespace); one byte more does not.
    std::string body = R"({"error_rate": 0.5})";
    body.resize(kMaxControlBodyBytes, ' ');
    EXPECT_TRUE(parse_control_body(body));
    body.push_back(' ');
    auto too_big = parse_control_body(body);
    ASSERT_FALSE(too_big);
    EXPECT_EQ(too_big.error().code, make_error_code(Errc::payload_too_large));
    EXPECT_EQ(too_big.error().message, "body: expected at most 4096 bytes, got 4097");
}

// ---- SimControl ---------------------------------------------------------------------------

ControlCommand command(double ttft, std::optional<std::int64_t> for_ms = std::nullopt) {
    ControlCommand c;
    c.condition.ttft_multiplier = ttft;
    c.for_ms = for_ms;
    return c;
}

TEST(SimControl, TheCommandWinsOverAnEpisodeUntilItExpiresOrIsCleared) {
    SimControl control({{10 * kS, 20 * kS, 0, {2, 4, 0.5}}});
    const std::int64_t t0 = 1000 * kS;  // the steady clock's value at start
    control.start(t0);
    EXPECT_EQ(control.state(t0).source, ConditionSource::none);
    EXPECT_TRUE(control.condition(t0).normal());

    const ControlState in_episode = control.state(t0 + 15 * kS);
    EXPECT_EQ(in_episode.source, ConditionSource::episode);
    EXPECT_EQ(in_episode.effective.ttft_multiplier, 2);
    EXPECT_EQ(in_episode.effective.tpot_multiplier, 4);
    EXPECT_EQ(in_episode.effective.error_rate, 0.5);
    EXPECT_EQ(in_episode.elapsed_ns, 15 * kS);

    control.command(command(3, 1000), t0 + 15 * kS);
    const ControlState commanded = control.state(t0 + 15 * kS + 1);
    EXPECT_EQ(commanded.source, ConditionSource::command);
    EXPECT_EQ(commanded.effective.ttft_multiplier, 3);
    EXPECT_EQ(commanded.effective.tpot_multiplier, 1) << "the whole command wins, not field-wise";
    EXPECT_EQ(commanded.effective.error_rate, 0);
    ASSERT_TRUE(commanded.episode) << "the episode is still shown";
    EXPECT_EQ(commanded.command_remaining_ns, 1000 * 1'000'000LL - 1);

    // for_ms: the command is gone at exactly set time + for_ms.
    EXPECT_EQ(control.state(t0 + 16 * kS - 1).source, ConditionSource::command);
    EXPECT_EQ(control.state(t0 + 16 * kS).source, ConditionSource::episode);
    EXPECT_FALSE(control.state(t0 + 16 * kS).command);

    // Without for_ms it lasts until changed; a new command replaces it; clear ends it.
    control.command(command(5), t0 + 17 * kS);
    EXPECT_EQ(control.condition(t0 + 500 * kS).ttft_multiplier, 5);
    EXPECT_FALSE(control.state(t0 + 500 * kS).command_remaining_ns);
    control.command(command(7, 10), t0 + 18 * kS);
    EXPECT_EQ(control.condition(t0 + 18 * kS).ttft_multiplier, 7);
    EXPECT_EQ(control.condition(t0 + 19 * kS).ttft_multiplier, 2) << "back to the episode";
    control.command(command(5), t0 + 20 * kS);
    control.clear();
    EXPECT_EQ(control.state(t0 + 20 * kS).source, ConditionSource::episode);
    EXPECT_EQ(control.state(t0 + 40 * kS).source, ConditionSource::none);
}

TEST(SimControl, AnEmptyCommandHoldsOffEpisodes) {
    SimControl control({{0, 100 * kS, 0, {2, 1, 0}}});
    control.start(0);
    control.command(ControlCommand{}, 0);
    EXPECT_EQ(control.state(kS).source, ConditionSource::command);
    EXPECT_TRUE(control.condition(kS).normal());
}

TEST(SimControl, StateJsonShowsCommandEpisodeAndEffective) {
    SimControl control({{0, 10 * kS, 60 * kS, {2, 1, 0.25}}});
    control.start(0);
    auto v = boost::json::parse(control_state_json(control.state(4 * kS)));
    EXPECT_EQ(v.at("elapsed_ms").as_int64(), 4000);
    EXPECT_TRUE(v.at("command").is_null());
    EXPECT_EQ(v.at("episode").at("index").as_int64(), 0);
    EXPECT_EQ(v.at("episode").at("remaining_ms").as_int64(), 6000);
    EXPECT_EQ(v.at("effective").at("source").as_string(), "episode");
    EXPECT_EQ(v.at("effective").at("ttft_multiplier").to_number<double>(), 2);
    EXPECT_EQ(v.at("effective").at("error_rate").to_number<double>(), 0.25);
    EXPECT_EQ(v.at("effective").at("remaining_ms").as_int64(), 6000);

    ControlCommand c = command(3, 2500);
    c.condition.error_rate = 0.5;
    control.command(c, 4 * kS);
    v = boost::json::parse(control_state_json(control.state(5 * kS)));
    EXPECT_EQ(v.at("command").at("ttft_multiplier").to_number<double>(), 3);
    EXPECT_EQ(v.at("command").at("error_rate").to_number<double>(), 0.5);
    EXPECT_EQ(v.at("command").at("remaining_ms").as_int64(), 1500);
    EXPECT_EQ(v.at("effective").at("source").as_string(), "command");
    EXPECT_EQ(v.at("effective").at("remaining_ms").as_int64(), 1500);
    EXPECT_EQ(v.at("episode").at("index").as_int64(), 0);

    v = boost::json::parse(control_state_json(control.state(20 * kS)));
    EXPECT_TRUE(v.at("command").is_null());
    EXPECT_TRUE(v.at("episode").is_null());
    EXPECT_EQ(v.at("effective").at("source").as_string(), "none");
    EXPECT_TRUE(v.at("effective").at("remaining_ms").is_null());
    EXPECT_EQ(v.at("effective").at("tpot_multiplier").to_number<double>(), 1);
}

}  // namespace
}  // namespace tokenradar::sim
