#include <tokenradar/sim/overrides.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace tokenradar::sim {
namespace {

using ::testing::HasSubstr;

Result<Overrides> parse(std::vector<Header> headers) { return parse_overrides(headers); }

TEST(Overrides, ParsesEveryHeader) {
    auto o = parse({{"X-Sim-TTFT-Ms", "120.5"},
                    {"x-sim-tpot-ms", " 15 "},
                    {"x-sim-tokens-per-s", "80"},
                    {"x-sim-tokens-per-chunk", "3"},
                    {"x-sim-output-tokens", "42"},
                    {"x-sim-fault", "Stall"},
                    {"x-sim-fault-at-token", "7"},
                    {"x-sim-stall-ms", "900"},
                    {"x-sim-seed", "18446744073709551615"},
                    {"x-sim-tool-call", "Always"},
                    {"X-Sim-Tail", " ALWAYS "},
                    {"content-type", "application/json"}});
    ASSERT_TRUE(o) << o.error().message;
    EXPECT_EQ(o->ttft_ms, 120.5);
    EXPECT_EQ(o->tpot_ms, 15.0);
    EXPECT_EQ(o->tokens_per_s, 80.0);
    EXPECT_EQ(o->tokens_per_chunk, 3);
    EXPECT_EQ(o->output_tokens, 42);
    EXPECT_EQ(o->fault, FaultKind::stall);
    EXPECT_EQ(o->fault_at_token, 7);
    EXPECT_EQ(o->stall_ms, 900.0);
    EXPECT_EQ(o->seed, 18446744073709551615ULL);
    EXPECT_EQ(o->tool_call, ToolCallMode::always);
    EXPECT_EQ(o->tail, TailMode::always);
    EXPECT_FALSE(o->empty());
    EXPECT_EQ(parse({{"x-sim-tail", "never"}})->tail, TailMode::never);
    EXPECT_FALSE(parse({{"x-sim-tail", "never"}})->empty());
    EXPECT_EQ(parse({{"x-sim-tool-call", "never"}})->tool_call, ToolCallMode::never);
    EXPECT_FALSE(parse({{"x-sim-tool-call", "never"}})->empty());
}

TEST(Overrides, NoHeadersIsEmpty) {
    auto o = parse({{"authorization", "Bearer x"}});
    ASSERT_TRUE(o);
    EXPECT_TRUE(o->empty());
}

TEST(Overrides, FaultNames) {
    for (auto [name, kind] : {std::pair{"429", FaultKind::http_429},
                              {"500", FaultKind::http_500},
                              {"503", FaultKind::http_503},
                              {"disconnect", FaultKind::disconnect},
                              {"malformed", FaultKind::malformed},
                              {"none", FaultKind::none}}) {
        auto o = parse({{"x-sim-fault", name}});
        ASSERT_TRUE(o);
        EXPECT_EQ(o->fault, kind);
        EXPECT_EQ(to_string(kind), name);
    }
}

TEST(Overrides, BadValuesAreClearErrors) {
    auto msg = [](std::vector<Header> h) {
        auto o = parse_overrides(h);
        EXPECT_FALSE(o);
        EXPECT_EQ(o.error().code, make_error_code(Errc::bad_request));
        return o ? std::string() : o.error().message;
    };
    EXPECT_THAT(msg({{"x-sim-ttft-ms", "fast"}}),
                HasSubstr("header x-sim-ttft-ms: expected a number from 0 to 600000, "
                          "got \"fast\""));
    EXPECT_THAT(msg({{"x-sim-ttft-ms", "-1"}}), HasSubstr("x-sim-ttft-ms"));
    EXPECT_THAT(msg({{"x-sim-tokens-per-chunk", "0"}}),
                HasSubstr("x-sim-tokens-per-chunk: expected an integer from 1 to 4096"));
    EXPECT_THAT(msg({{"x-sim-output-tokens", "1.5"}}), HasSubstr("x-sim-output-tokens"));
    EXPECT_THAT(msg({{"x-sim-fault", "boom"}}),
                HasSubstr("one of none, 429, 500, 503, disconnect, stall, malformed"));
    EXPECT_THAT(msg({{"x-sim-tokens-per-s", "0"}}), HasSubstr("a number from 0.001 to 1000000"));
    EXPECT_THAT(msg({{"x-sim-ttft", "5"}}), HasSubstr("unknown header x-sim-ttft"));
    EXPECT_THAT(msg({{"x-sim-fault-at-token", "3"}}), HasSubstr("needs x-sim-fault"));
    EXPECT_THAT(msg({{"x-sim-seed", ""}}), HasSubstr("x-sim-seed"));
    EXPECT_THAT(msg({{"x-sim-tool-call", "sometimes"}}),
                HasSubstr("header x-sim-tool-call: expected always or never"));
    EXPECT_THAT(msg({{"x-sim-tail", "1"}}),
                HasSubstr("header x-sim-tail: expected always or never, got \"1\""));
}

}  // namespace
}  // namespace tokenradar::sim
