// The legacy POST /v1/completions end to end: an OpenAI client -> tokenradar serve -> the sim or
// a scripted upstream. The request passes through with only `model` replaced, streams are
// relayed event by event, every request is one record (task "completions") timed as
// metrics.md says, and errors say what is wrong.

#include <tokenradar/gateway/gateway_server.hpp>

#include "../../support/gateway_fixture.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using dialect::StreamDelta;
using std::chrono::milliseconds;
using testing::Fetched;
using testing::GatewayFixture;
using testing::ScriptedServer;
using testing::SimFixture;
using testing::three_dialects_config;

constexpr std::string_view kUpstreamKey = "sk-upstream-secret-1234";

std::string header(const Fetched& f, std::string_view name) {
    const auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

json::object error_of(const Fetched& f) {
    return json::parse(f.body).as_object().at("error").as_object();
}

// What a client's SDK reads from a text_completion stream.
struct ClientStream {
    std::string text;
    std::vector<StreamDelta> deltas;
    std::string error;  // a chunk our decoder refused
};

ClientStream decode(std::string_view body) {
    ClientStream out;
    dialect::TextCompletionStreamDecoder decoder;
    sse::SseParser parser;
    (void)parser.feed(body, [&](const sse::SseEvent& e) {
        std::vector<StreamDelta> deltas;
        if (auto r = decoder.decode(e.event, e.data, deltas); !r) out.error = r.error().message;
        for (auto& d : deltas) {
            if (d.kind == StreamDelta::Kind::text) out.text += d.text;
            out.deltas.push_back(std::move(d));
        }
    });
    return out;
}

std::size_t count(const ClientStream& s, StreamDelta::Kind kind) {
    return static_cast<std::size_t>(std::count_if(
        s.deltas.begin(), s.deltas.end(), [kind](const auto& d) { return d.kind == kind; }));
}

std::string scripted_config(const ScriptedServer& upstream) {
    return R"(
[auth]
mode = "none"
[store]
path = ""
[[providers]]
name = "up"
api = "openai"
base_url = ")" +
           upstream.base_url() + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "m"
upstreams = ["up/up-model"]
)";
}

// The fixed profile: TTFT 250 ms, then a token every 20 ms, one per chunk.
TEST(GatewayCompletions, AStreamIsRelayedChunkByChunkAndTimedAtItsFirstText) {
    SimFixture sim("fixed");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const Fetched f = testing::post_json(
        gw.url("/v1/completions"),
        R"({"model":"via-openai","prompt":"Once upon a time","max_tokens":6,"stream":true,)"
        R"("stream_options":{"include_usage":true},"temperature":0.50})");
    ASSERT_EQ(f.status, 200U) << f.body;
    EXPECT_THAT(header(f, "content-type"), ::testing::StartsWith("text/event-stream"));
    EXPECT_EQ(header(f, "x-tokenradar-upstream"), "sim-openai/gpt-4o");
    const ClientStream s = decode(f.body);
    EXPECT_EQ(s.error, "");
    EXPECT_FALSE(s.text.empty());
    EXPECT_EQ(count(s, StreamDelta::Kind::usage), 1U);
    ASSERT_FALSE(s.deltas.empty());
    EXPECT_EQ(s.deltas.back().kind, StreamDelta::Kind::done);
    EXPECT_NE(f.body.find(R"("model":"gpt-4o")"), std::string::npos) << "the upstream's model";
    EXPECT_EQ(f.body.find("chat.completion"), std::string::npos) << f.body;
    // Not buffered: the chunks reached the client as the sim paced them, 20 ms apart.
    ASSERT_GE(f.pieces.size(), 3U) << f.body;
    EXPECT_GE(f.pieces.back().first - f.pieces.front().first, 40'000'000);

    const auto records = gw.records().wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    const Measurement& m = records[0];
    EXPECT_EQ(m.status, RequestStatus::ok);
    EXPECT_EQ(m.labels.task, "completions");
    EXPECT_TRUE(m.labels.stream);
    EXPECT_EQ(m.labels.provider, "sim-openai");
    EXPECT_EQ(m.labels.model, "gpt-4o");
    EXPECT_EQ(m.labels.api, "openai");
    EXPECT_TRUE(m.response_id.starts_with("cmpl-")) << m.response_id;
    ASSERT_TRUE(m.t.headers && m.t.first_chunk && m.t.first_token && m.t.done);
    // The sim sends no empty first chunk: the first chunk is the first text, after its TTFT.
    EXPECT_GE(*m.t.first_token - m.t.send, 250'000'000);
    EXPECT_LE(*m.t.first_token, *m.t.done);
    EXPECT_EQ(m.output_tokens, 6);
    EXPECT_EQ(m.token_source, TokenSource::usage);
    EXPECT_GT(m.prompt_tokens.value_or(0), 0);
    EXPECT_EQ(m.output_events, 6);
    EXPECT_TRUE(m.overhead_ns.has_value());
}

// An empty first chunk (vLLM's) is not the first token. The upstream is always asked for
// usage, so tokens out are its count, and a client that did not ask never sees the usage chunk.
TEST(GatewayCompletions, TheFirstTokenIsTheFirstChunkWithText) {
    const std::string chunk_head =
        R"(data: {"id":"cmpl-9","object":"text_completion","created":1,"model":"up-model",)";
    ScriptedServer upstream(testing::sse_script({
        {milliseconds(0),
         chunk_head + R"("choices":[{"index":0,"text":"","finish_reason":null}]})" + "\n\n"},
        {milliseconds(120),
         chunk_head + R"("choices":[{"index":0,"text":"Hi","finish_reason":"stop"}]})" + "\n\n"},
        {milliseconds(0), chunk_head + R"("choices":[],"usage":{"prompt_tokens":3,)" +
                              R"("completion_tokens":2,"total_tokens":5}})" + "\n\n"},
        {milliseconds(0), "data: [DONE]\n\n"},
    }));
    GatewayFixture gw(scripted_config(upstream));
    const Fetched f = testing::post_json(gw.url("/v1/completions"),
                                         R"({"model":"m","prompt":"Say hi","stream":true})");
    ASSERT_EQ(f.status, 200U) << f.body;
    const ClientStream s = decode(f.body);
    EXPECT_EQ(s.text, "Hi");
    EXPECT_EQ(count(s, StreamDelta::Kind::usage), 0U) << f.body;
    EXPECT_EQ(f.body.find("\"usage\""), std::string::npos) << f.body;
    // `model` replaced and usage asked for in what the upstream got, nothing else changed.
    ASSERT_EQ(upstream.received_bodies().size(), 1U);
    EXPECT_EQ(upstream.received_bodies()[0],
              R"({"model":"up-model","prompt":"Say hi","stream":true,)"
              R"("stream_options":{"include_usage":true}})");
    const auto records = gw.records().wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    const Measurement& m = records[0];
    EXPECT_EQ(m.status, RequestStatus::ok);
    ASSERT_TRUE(m.t.first_chunk && m.t.first_token);
    EXPECT_GE(*m.t.first_token - *m.t.first_chunk, 100'000'000);
    EXPECT_EQ(m.token_source, TokenSource::usage);
    EXPECT_EQ(m.output_tokens, 2);
    EXPECT_EQ(m.prompt_tokens, 3);
}

TEST(GatewayCompletions, AWholeAnswerPassesThroughWithItsUsage) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const Fetched f = testing::post_json(
        gw.url("/v1/completions"), R"({"model":"via-openai","prompt":["a","b"],"max_tokens":4})");
    ASSERT_EQ(f.status, 200U) << f.body;
    EXPECT_EQ(header(f, "content-type"), "application/json");
    EXPECT_FALSE(header(f, "x-tokenradar-overhead-us").empty());
    auto answer = dialect::parse_text_completion(f.body);
    ASSERT_TRUE(answer) << answer.error().message << f.body;
    EXPECT_EQ(answer->model, "gpt-4o");
    EXPECT_EQ(answer->usage.output_tokens, 4);
    const auto records = gw.records().wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    const Measurement& m = records[0];
    EXPECT_EQ(m.status, RequestStatus::ok);
    EXPECT_EQ(m.labels.task, "completions");
    EXPECT_FALSE(m.labels.stream);
    EXPECT_EQ(m.response_id, answer->id);
    EXPECT_EQ(m.output_tokens, 4);
    EXPECT_EQ(m.prompt_tokens, answer->usage.prompt_tokens);
    EXPECT_TRUE(m.t.headers.has_value());  // TTFB and E2E; no first token for a whole answer
    EXPECT_TRUE(m.t.done.has_value());
    EXPECT_FALSE(m.t.first_token.has_value());
}

TEST(GatewayCompletions, BadRequestsUnknownModelsAndModelsWithoutAnOpenAiUpstream) {
    SimFixture sim("instant");
    GatewayFixture gw(three_dialects_config(sim.base_url()));
    const auto post = [&](std::string body) {
        return testing::post_json(gw.url("/v1/completions"), std::move(body));
    };
    const Fetched no_prompt = post(R"({"model":"via-openai"})");
    EXPECT_EQ(no_prompt.status, 400U);
    EXPECT_EQ(error_of(no_prompt).at("message"), "prompt: required");
    const Fetched chat_shaped = post(R"({"model":"via-openai","messages":[]})");
    EXPECT_EQ(chat_shaped.status, 400U);
    const Fetched bad_prompt = post(R"({"model":"via-openai","prompt":{"text":"x"}})");
    EXPECT_EQ(bad_prompt.status, 400U);
    EXPECT_THAT(std::string(error_of(bad_prompt).at("message").as_string()),
                ::testing::HasSubstr("prompt: expected a string"));
    EXPECT_EQ(post("not json").status, 400U);

    const Fetched unknown = post(R"({"model":"nope","prompt":"x"})");
    EXPECT_EQ(unknown.status, 404U);
    EXPECT_THAT(std::string(error_of(unknown).at("message").as_string()),
                ::testing::HasSubstr("model 'nope' is not served here"));

    const Fetched anthropic = post(R"({"model":"via-anthropic","prompt":"x"})");
    EXPECT_EQ(anthropic.status, 400U);
    EXPECT_THAT(std::string(error_of(anthropic).at("message").as_string()),
                ::testing::HasSubstr("no OpenAI-compatible upstream"));

    const Fetched get = testing::fetch(http::verb::get, gw.url("/v1/completions"));
    EXPECT_EQ(get.status, 405U);
    EXPECT_TRUE(gw.records().snapshot().empty()) << "nothing went upstream";
}

// An upstream's error status is relayed (its key redacted) and recorded; a stream that breaks
// off ends with an error event and [DONE], so the client's SDK raises instead of hanging.
TEST(GatewayCompletions, UpstreamErrorsAndBrokenStreams) {
    testing::Script limited;
    limited.status = 429;
    limited.content_type = "application/json";
    limited.headers = {{"retry-after", "3"}};
    limited.pieces = {{milliseconds(0), R"({"error":{"message":"slow down, key )" +
                                            std::string(kUpstreamKey) +
                                            R"(","type":"rate_limit_error"}})"}};
    ScriptedServer busy(limited);
    GatewayFixture gw(scripted_config(busy));
    const Fetched refused =
        testing::post_json(gw.url("/v1/completions"), R"({"model":"m","prompt":"x"})");
    EXPECT_EQ(refused.status, 429U);
    EXPECT_EQ(header(refused, "retry-after"), "3");
    EXPECT_EQ(refused.body.find(kUpstreamKey), std::string::npos) << refused.body;
    auto records = gw.records().wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_EQ(records[0].status, RequestStatus::http(429));

    ScriptedServer cut(testing::sse_script(
        {{milliseconds(0),
          "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"model\":\"up-model\","
          "\"choices\":[{\"index\":0,\"text\":\"Par\",\"finish_reason\":null}]}\n\n"}},
        true));
    GatewayFixture gw2(scripted_config(cut));
    const Fetched broken = testing::post_json(gw2.url("/v1/completions"),
                                              R"({"model":"m","prompt":"x","stream":true})");
    ASSERT_EQ(broken.status, 200U);
    const ClientStream s = decode(broken.body);
    EXPECT_EQ(s.text, "Par");
    EXPECT_EQ(count(s, StreamDelta::Kind::error), 1U) << broken.body;
    EXPECT_THAT(broken.body, ::testing::EndsWith("data: [DONE]\n\n"));
    records = gw2.records().wait_for(1);
    ASSERT_EQ(records.size(), 1U);
    EXPECT_FALSE(records[0].status.is_ok());
    EXPECT_TRUE(records[0].t.first_token.has_value());
}

}  // namespace
}  // namespace tokenradar::gateway
