// Provider prompt caching through the gateway (README "Provider prompt caching"): cached
// prompt tokens from every dialect's usage reach the records and split the live TTFT metrics
// that the dashboard reads; `prompt_cache = "auto"` marks an Anthropic upstream's prefix.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/sim/profile.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using std::chrono::milliseconds;
using testing::GatewayFixture;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ScriptedServer;
using testing::SimFixture;

// A sim whose prefix cache takes a repeated 2,000-token prefix (50 ms of prefill saved).
sim::Profile caching_profile() {
    return sim::parse_profile(R"(
name = "cache-test"
models = ["gpt-4o", "claude-3-5-sonnet-latest", "gemini-1.5-pro"]
[ttft]
base_ms = 1.0
prefill_ms_per_1k_tokens = 25.0
[decode]
tokens_per_s = 2000.0
[prefix_cache]
block_tokens = 16
capacity_blocks = 10000
)",
                              "cache-test.toml");
}

// The three dialects on one server; `anthropic_cache`: via-anthropic's prompt_cache.
std::string config(const std::string& url, std::string_view anthropic_cache = "off") {
    return testing::three_dialects_config(url, "",
                                          fmt::format(R"(prompt_cache = "{}")", anthropic_cache));
}

// A request with a long system prompt (the shared prefix) and its own question.
std::string chat_body(std::string_view model, std::string_view question, bool stream) {
    json::object o{
        {"model", model},
        {"max_tokens", 3},
        {"stream", stream},
        {"messages",
         json::array{json::object{{"role", "system"}, {"content", std::string(8000, 'p')}},
                     json::object{{"role", "user"}, {"content", question}}}}};
    return json::serialize(o);
}

TEST(GatewayPromptCache, CachedTokensOfEveryDialectSplitTheTtftMetrics) {
    SimFixture sim(caching_profile());
    GatewayFixture gw(config(sim.base_url()));
    for (const char* model : {"via-openai", "via-anthropic", "via-gemini"}) {
        for (const bool stream : {true, false}) {
            SCOPED_TRACE(fmt::format("{} stream={}", model, stream));
            // The first of each kind is a miss unless an earlier request left the prefix cached.
            auto f = testing::post_json(gw.url("/v1/chat/completions"),
                                        chat_body(model, stream ? "first?" : "second?", stream));
            ASSERT_EQ(f.status, 200u) << f.body;
        }
    }
    const auto records = gw.records().wait_for(6);
    ASSERT_EQ(records.size(), 6u);
    // One sim, one prefix cache: the very first request misses, every later one hits (each
    // dialect renders the same canonical prompt), streamed or not.
    EXPECT_EQ(records[0].cached_prompt_tokens.value_or(0), 0);
    for (std::size_t i = 1; i < records.size(); ++i) {
        SCOPED_TRACE(records[i].labels.provider);
        EXPECT_GE(records[i].cached_prompt_tokens.value_or(0), 1984);
        EXPECT_GT(records[i].prompt_tokens.value_or(0), *records[i].cached_prompt_tokens);
    }

    auto api = testing::fetch(http::verb::get, gw.url("/api/v1/gateway/provider-cache"));
    ASSERT_EQ(api.status, 200u) << api.body;
    EXPECT_EQ(api.headers[http::field::cache_control], "no-cache");
    const std::string etag(api.headers[http::field::etag]);
    EXPECT_EQ(testing::fetch(http::verb::get, gw.url("/api/v1/gateway/provider-cache"),
                             {{"if-none-match", etag}})
                  .status,
              304u);
    const json::value v = json::parse(api.body);
    const auto& rows = v.at("rows").as_array();
    ASSERT_EQ(rows.size(), 3u) << api.body;
    // By provider, then model.
    EXPECT_EQ(rows[0].at("provider"), "sim-anthropic");
    EXPECT_EQ(rows[1].at("provider"), "sim-gemini");
    EXPECT_EQ(rows[2].at("provider"), "sim-openai");
    EXPECT_EQ(rows[2].at("model"), "gpt-4o");
    // TTFT is a stream's (a whole response has no first token of its own): one per model.
    EXPECT_EQ(rows[2].at("miss").at("samples"), 1);
    EXPECT_EQ(rows[2].at("hit").at("samples"), 0);
    EXPECT_TRUE(rows[2].at("miss").at("mean_ms").is_double());
    EXPECT_TRUE(rows[2].at("hit").at("mean_ms").is_null());
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(rows[i].at("hit").at("samples"), 1);
        EXPECT_EQ(rows[i].at("miss").at("samples"), 0);
        EXPECT_TRUE(rows[i].at("hit").at("p50_ms").is_double());
        EXPECT_TRUE(rows[i].at("miss").at("p50_ms").is_null());
    }
    const std::string metrics = testing::fetch(http::verb::get, gw.url("/metrics")).body;
    EXPECT_THAT(metrics,
                HasSubstr(R"(tokenradar_provider_cache_ttft_seconds_count{provider="sim-openai",)"
                          R"(model="gpt-4o",provider_cache="miss"} 1)"));
    EXPECT_THAT(metrics,
                HasSubstr(R"(tokenradar_provider_cache_ttft_seconds_count{provider="sim-gemini",)"
                          R"(model="gemini-1.5-pro",provider_cache="hit"} 1)"));
    EXPECT_THAT(metrics, Not(HasSubstr(R"(provider="sim-gemini",model="gemini-1.5-pro",)"
                                       R"(provider_cache="miss")")));
    // GET only.
    EXPECT_EQ(testing::post_json(gw.url("/api/v1/gateway/provider-cache"), "{}").status, 405u);
}

TEST(GatewayPromptCache, AutoMarksTheAnthropicUpstreamsPrefixAndOffLeavesItAlone) {
    const std::string answer =
        "event: message_start\ndata: "
        R"({"type":"message_start","message":{"id":"msg_1","model":"c","usage":{)"
        R"("input_tokens":10,"cache_read_input_tokens":2000,"output_tokens":1}}})"
        "\n\nevent: content_block_delta\ndata: "
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}})"
        "\n\nevent: message_delta\ndata: "
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}})"
        "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    for (const char* mode : {"auto", "off"}) {
        SCOPED_TRACE(mode);
        ScriptedServer upstream(testing::sse_script({{milliseconds(0), answer}}));
        GatewayFixture gw(config(upstream.base_url(), mode));
        auto f = testing::post_json(gw.url("/v1/chat/completions"),
                                    chat_body("via-anthropic", "question", true));
        ASSERT_EQ(f.status, 200u) << f.body;
        const auto bodies = upstream.received_bodies();
        ASSERT_EQ(bodies.size(), 1u);
        const json::value sent = json::parse(bodies[0]);
        const json::value& system = sent.at("system");
        if (std::string_view(mode) == "auto") {
            EXPECT_EQ(system.at(0).at("cache_control"), json::parse(R"({"type":"ephemeral"})"))
                << bodies[0];
        } else {
            EXPECT_TRUE(system.is_string()) << bodies[0];
            EXPECT_EQ(bodies[0].find("cache_control"), std::string::npos);
        }
        const auto m = gw.records().wait_for(1).at(0);
        EXPECT_EQ(m.cached_prompt_tokens, 2000);
        EXPECT_EQ(m.prompt_tokens, 2010);
    }
}

TEST(GatewayPromptCache, TheModelOptionIsCheckedAtLoad) {
    try {
        testing::gateway_config(config("http://127.0.0.1:9", "always"));
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_THAT(std::string(e.what()), HasSubstr("models[1].prompt_cache"));
        EXPECT_THAT(std::string(e.what()), HasSubstr(R"("off" or "auto")"));
    }
    EXPECT_EQ(testing::gateway_config(config("http://127.0.0.1:9", "auto")).models[1].prompt_cache,
              dialect::PromptCache::automatic);
    EXPECT_EQ(testing::gateway_config(config("http://127.0.0.1:9")).models[0].prompt_cache,
              dialect::PromptCache::off);
}

}  // namespace
}  // namespace tokenradar::gateway
