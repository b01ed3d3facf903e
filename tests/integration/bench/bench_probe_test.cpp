// bench's measuring client against crafted streams: each case is one way real providers
// (or broken ones) stream, measured exactly as metrics.md says.

#include <tokenradar/bench/probe.hpp>

#include <tokenradar/dialect/http_call.hpp>

#include "../../support/run_sync.hpp"
#include "../../support/scripted_server.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace tokenradar::bench {
namespace {

using std::chrono::milliseconds;
using testing::Script;
using testing::ScriptedServer;
using testing::sse_script;

std::string sse(std::string_view data) { return "data: " + std::string(data) + "\n\n"; }

std::string openai_chunk(std::string_view delta, std::string_view finish = "null") {
    return sse(
        R"({"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":)" +
        std::string(delta) + R"(,"finish_reason":)" + std::string(finish) + "}]}");
}

const std::string kUsageChunk = sse(
    R"({"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}})");
const std::string kDone = sse("[DONE]");

ProbeResult probe(const ScriptedServer& server, dialect::Api api = dialect::Api::openai,
                  bool stream = true) {
    Target target;
    target.name = "t";
    target.api = api;
    target.base =
        net::parse_url(server.base_url() + (api == dialect::Api::openai ? "/v1" : "")).value();
    target.model = "m";
    target.key = Secret("sk-test");
    ProbeRequest request;
    request.prompt.user = "hello";
    request.prompt.max_tokens = 5;
    request.prompt.stream = stream;
    request.task = "chat";
    request.request_id = "r1";
    request.first_token_timeout = milliseconds(2000);
    boost::asio::io_context ioc;
    net::HttpClient client(ioc.get_executor());
    return testing::run_sync(ioc, run_probe(client, target, request));
}

double ms(std::optional<std::int64_t> later, std::int64_t earlier) {
    return static_cast<double>(*later - earlier) / 1e6;
}

TEST(BenchProbe, RoleOnlyFirstChunkIsNotTheFirstToken) {
    ScriptedServer server(
        sse_script({{milliseconds(0), openai_chunk(R"({"role":"assistant","content":""})")},
                    {milliseconds(60), openai_chunk(R"({"content":"Hello"})")},
                    {milliseconds(20), openai_chunk(R"({"content":" there"})")},
                    {milliseconds(20), openai_chunk(R"({"content":"!"})")},
                    {milliseconds(0), openai_chunk("{}", "\"stop\"")},
                    {milliseconds(0), kUsageChunk + kDone}}));
    auto r = probe(server);
    const auto& m = r.record;
    ASSERT_EQ(m.status, RequestStatus::ok) << r.error;
    EXPECT_EQ(m.response_id, "chatcmpl-x");
    // The role-only chunk came 60 ms before the first token (a loaded machine only adds).
    EXPECT_GE(ms(m.t.first_token, *m.t.first_chunk), 50);
    EXPECT_GE(ms(m.t.first_token, m.t.send), 55);
    EXPECT_EQ(m.output_tokens, 5);  // usage only in the last chunk
    EXPECT_EQ(m.prompt_tokens, 11);
    EXPECT_EQ(m.token_source, TokenSource::usage);
    EXPECT_EQ(m.output_events, 3);
    // TPOT over N - 1 = 4 intervals spanning the 40 ms between first and last token.
    EXPECT_NEAR(*derive(m).tpot_ms, 10, 5);
}

std::string responses_event(std::string_view type, std::string_view fields) {
    return "event: " + std::string(type) + "\n" +
           sse(R"({"type":")" + std::string(type) + R"(",)" + std::string(fields) + "}");
}

// metrics.md: a Responses stream's first token is its first response.output_text.delta with a
// non-empty delta; the lifecycle and item events before it are only its first chunk.
TEST(BenchProbe, ResponsesFirstTokenIsTheFirstNonEmptyTextDelta) {
    const std::string response = R"("response":{"id":"resp_x","object":"response","model":"m",)";
    ScriptedServer server(sse_script(
        {{milliseconds(0),
          responses_event("response.created",
                          response + R"("status":"in_progress","output":[],"usage":null})") +
              responses_event("response.output_item.added",
                              R"("output_index":0,"item":{"type":"message","id":"msg_1"})") +
              responses_event("response.content_part.added",
                              R"("output_index":0,"part":{"type":"output_text","text":""})")},
         {milliseconds(60), responses_event("response.output_text.delta", R"("delta":"")") +
                                responses_event("response.output_text.delta", R"("delta":"Hi")")},
         {milliseconds(20), responses_event("response.output_text.delta", R"("delta":" there")")},
         {milliseconds(0),
          responses_event("response.output_text.done", R"("text":"Hi there")") +
              responses_event("response.completed",
                              response + R"("status":"completed","output":[],"usage":{)" +
                                  R"("input_tokens":11,"output_tokens":5}})")}}));
    auto r = probe(server, dialect::Api::openai_responses);
    const auto& m = r.record;
    ASSERT_EQ(m.status, RequestStatus::ok) << r.error;
    EXPECT_EQ(m.labels.api, "openai-responses");
    EXPECT_EQ(m.response_id, "resp_x");
    EXPECT_GE(ms(m.t.first_token, *m.t.first_chunk), 50);
    EXPECT_EQ(m.t.first_token, m.t.first_answer);
    EXPECT_EQ(m.output_tokens, 5);
    EXPECT_EQ(m.prompt_tokens, 11);
    EXPECT_EQ(m.token_source, TokenSource::usage);
    EXPECT_EQ(m.output_events, 2);
    ASSERT_EQ(server.received_bodies().size(), 1u);
    EXPECT_EQ(boost::json::parse(server.received_bodies()[0])
                  .at("input")
                  .at(0)
                  .at("content")
                  .at(0)
                  .at("text"),
              "hello");
}

TEST(BenchProbe, ResponsesWholeResponseIsMeteredFromItsUsage) {
    Script answer;
    answer.content_type = "application/json";
    answer.pieces = {{milliseconds(0),
                      R"({"id":"resp_y","object":"response","status":"completed","model":"m",
                      "output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}],
                      "usage":{"input_tokens":4,"input_tokens_details":{"cached_tokens":2},
                      "output_tokens":3}})"}};
    ScriptedServer server(answer);
    auto r = probe(server, dialect::Api::openai_responses, false);
    const auto& m = r.record;
    ASSERT_EQ(m.status, RequestStatus::ok) << r.error;
    EXPECT_EQ(m.response_id, "resp_y");
    EXPECT_EQ(m.output_tokens, 3);
    EXPECT_EQ(m.cached_prompt_tokens, 2);
    EXPECT_EQ(m.token_source, TokenSource::usage);
    EXPECT_FALSE(m.t.first_token.has_value());
}

TEST(BenchProbe, ReasoningBeforeTheAnswerSeparatesTtftFromTtfat) {
    ScriptedServer server(
        sse_script({{milliseconds(30),
                     openai_chunk(R"({"role":"assistant","reasoning_content":"Let me think"})")},
                    {milliseconds(80), openai_chunk(R"({"content":"42"})")},
                    {milliseconds(0), openai_chunk("{}", "\"stop\"") + kUsageChunk + kDone}}));
    auto m = probe(server).record;
    ASSERT_EQ(m.status, RequestStatus::ok);
    EXPECT_GE(ms(m.t.first_token, m.t.send), 25);
    const double reasoning_ms = ms(m.t.first_answer, *m.t.first_token);
    EXPECT_GE(reasoning_ms, 70);  // the answer came 80 ms after the reasoning
    EXPECT_LT(reasoning_ms, 200);
}

std::string gemini_chunk(std::string_view text, int cumulative_tokens, bool last) {
    return sse(
        R"({"candidates":[{"content":{"role":"model","parts":[{"text":")" + std::string(text) +
        R"("}]})" + (last ? std::string(R"(,"finishReason":"STOP")") : std::string()) +
        R"(}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":)" +
        std::to_string(cumulative_tokens) + R"(,"totalTokenCount":)" +
        std::to_string(7 + cumulative_tokens) + R"(},"modelVersion":"m","responseId":"g1"})");
}

TEST(BenchProbe, CumulativeUsageAndSeveralTokensPerChunk) {
    ScriptedServer server(
        sse_script({{milliseconds(40), gemini_chunk("one two three", 3, false)},
                    {milliseconds(30), gemini_chunk(" four five six", 6, false)},
                    {milliseconds(30), gemini_chunk(" seven eight nine", 9, true)}}));
    auto m = probe(server, dialect::Api::gemini).record;
    ASSERT_EQ(m.status, RequestStatus::ok);
    EXPECT_EQ(m.output_tokens, 9);  // the last cumulative value, not the sum
    EXPECT_EQ(m.prompt_tokens, 7);
    EXPECT_DOUBLE_EQ(*derive(m).tokens_per_chunk, 3.0);
    EXPECT_NEAR(*derive(m).tpot_ms, 60.0 / 8, 4);  // (t_last - t_first) / (N - 1)
}

TEST(BenchProbe, NoUsageMeansAnEstimateThatSaysSo) {
    ScriptedServer server(sse_script({{milliseconds(10), openai_chunk(R"({"content":"abcdefgh"})")},
                                      {milliseconds(10), openai_chunk(R"({"content":"ijkl"})")},
                                      {milliseconds(0), openai_chunk("{}", "\"stop\"") + kDone}}));
    auto m = probe(server).record;
    ASSERT_EQ(m.status, RequestStatus::ok);
    EXPECT_EQ(m.token_source, TokenSource::estimate);
    EXPECT_EQ(m.output_tokens, 3);  // 12 bytes / 4
}

TEST(BenchProbe, MalformedChunkIsAProtocolError) {
    ScriptedServer server(
        sse_script({{milliseconds(5), openai_chunk(R"({"content":"ok"})")},
                    {milliseconds(5), sse(R"({"choices":[{"delta":{"content":"bro)")},
                    {milliseconds(5), kDone}}));
    auto r = probe(server);
    EXPECT_EQ(r.record.status, RequestStatus::protocol_error);
    EXPECT_FALSE(r.error.empty());
}

TEST(BenchProbe, DisconnectMidStreamIsAConnectionError) {
    ScriptedServer server(
        sse_script({{milliseconds(5), openai_chunk(R"({"content":"partial"})")}}, true));
    auto m = probe(server).record;
    EXPECT_EQ(m.status, RequestStatus::connection_error);
    EXPECT_TRUE(m.t.first_token.has_value());
}

TEST(BenchProbe, RateLimitIsRecordedWithItsStatus) {
    Script script = sse_script(
        {{milliseconds(0),
          R"({"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}})"}});
    script.status = 429;
    script.content_type = "application/json";
    script.headers.emplace_back("retry-after", "2");
    ScriptedServer server(script);
    auto r = probe(server);
    EXPECT_EQ(r.record.status, RequestStatus::http(429));
    EXPECT_EQ(r.record.http_status, 429);
    EXPECT_NE(r.error.find("Rate limit reached"), std::string::npos);
    EXPECT_FALSE(r.record.t.first_token.has_value());
}

TEST(BenchProbe, FirstTokenTimeoutWhileOnlyPingsArrive) {
    ScriptedServer server(
        sse_script({{milliseconds(0), openai_chunk(R"({"role":"assistant","content":""})")},
                    {milliseconds(3000), openai_chunk(R"({"content":"late"})")}}));
    auto m = probe(server).record;  // first-token timeout 2 s
    EXPECT_EQ(m.status, RequestStatus::timeout_first_token);
}

// The spliced body is byte for byte what the dialect writes for the whole prompt, for every
// API and for prompts JSON must escape; headers carry the extras; the path is the dialect's.
// A system prompt holding the placeholder itself makes the body unsplittable: then it is
// written whole per request, with the same result.
TEST(BenchPreparedCall, SplicedBodyEqualsTheDialectsBodyForEveryApi) {
    const std::vector<std::string> users = {"ping 0123456789abcdef",
                                            "quote \" back\\slash \n tab\t \x01 ü 漢字", ""};
    const std::vector<std::string> systems = {"be brief \"always\"",
                                              "\x01tokenradar-user-prompt\x01"};
    for (const auto api : {dialect::Api::openai, dialect::Api::anthropic, dialect::Api::gemini,
                           dialect::Api::openai_responses})
        for (const auto& system : systems) {
            Target target;
            target.name = "t";
            target.api = api;
            target.base = net::parse_url("http://127.0.0.1:9/v1").value();
            target.model = "m-1";
            target.key = Secret("sk-test");
            PromptSpec prompt;
            prompt.system = system;
            prompt.max_tokens = 7;
            prompt.temperature = 0.5;
            prompt.stream = api != dialect::Api::gemini;
            auto prepared = PreparedCall::make(target, prompt, {{"x-sim-tpot-ms", "5"}});
            ASSERT_TRUE(prepared) << prepared.error().message;
            for (const auto& user : users) {
                prompt.user = user;
                dialect::ChatRequest request;
                request.model = target.model;
                request.messages.push_back({dialect::Role::system,
                                            {dialect::ContentPart::make_text(prompt.system)},
                                            {},
                                            {},
                                            {}});
                request.messages.push_back(
                    {dialect::Role::user, {dialect::ContentPart::make_text(user)}, {}, {}, {}});
                request.max_tokens = prompt.max_tokens;
                request.temperature = prompt.temperature;
                request.stream = prompt.stream;
                request.include_usage = true;
                auto expected = dialect::make_http_call(api, "/v1", request, target.key);
                ASSERT_TRUE(expected) << expected.error().message;
                auto body = prepared->body(user);
                ASSERT_TRUE(body) << body.error().message;
                EXPECT_EQ(*body, expected->body) << dialect::to_string(api) << " user=" << user;
                EXPECT_EQ(prepared->target(), expected->target);
                auto headers = expected->headers;
                headers.emplace_back("x-sim-tpot-ms", "5");
                EXPECT_EQ(prepared->headers(), headers);
            }
        }
}

// --extra-body and a workload's [extra_body] reach the server at the top level of the body
// in every API's request, the target's fields over the workload's, and the rest of the body
// is the dialect's.
TEST(BenchProbe, ExtraBodyFieldsReachTheServerInEveryApi) {
    for (const auto api : {dialect::Api::openai, dialect::Api::anthropic, dialect::Api::gemini,
                           dialect::Api::openai_responses}) {
        Script answer;
        answer.status = 500;
        answer.content_type = "application/json";
        answer.pieces = {{milliseconds(0), "{}"}};
        ScriptedServer server(answer);
        Target target;
        target.name = "t";
        target.api = api;
        target.base =
            net::parse_url(server.base_url() + (api == dialect::Api::openai ? "/v1" : "")).value();
        target.model = "m";
        target.extra_body =
            boost::json::parse(R"({"ignore_eos":true,"nested":{"b":3}})").as_object();
        ProbeRequest request;
        request.prompt.user = "hello";
        request.prompt.max_tokens = 5;
        request.prompt.stream = true;
        request.request_id = "r1";
        request.extra_body =
            boost::json::parse(R"({"ignore_eos":false,"min_tokens":5,"nested":{"a":1}})")
                .as_object();
        boost::asio::io_context ioc;
        net::HttpClient client(ioc.get_executor());
        auto r = testing::run_sync(ioc, run_probe(client, target, request));
        EXPECT_EQ(r.record.status, RequestStatus::http(500));
        const auto bodies = server.received_bodies();
        ASSERT_EQ(bodies.size(), 1u) << dialect::to_string(api);
        const auto body = boost::json::parse(bodies[0]).as_object();
        EXPECT_EQ(body.at("ignore_eos"), true) << bodies[0];
        EXPECT_EQ(body.at("min_tokens"), 5) << bodies[0];
        EXPECT_EQ(body.at("nested"), boost::json::parse(R"({"a":1,"b":3})")) << bodies[0];
        // The dialect's own fields are still there.
        const std::string_view conversation = api == dialect::Api::gemini             ? "contents"
                                              : api == dialect::Api::openai_responses ? "input"
                                                                                      : "messages";
        EXPECT_TRUE(body.contains(conversation)) << bodies[0];
    }
}

// Extra fields may not change what bench writes (it would change what is measured): the
// prepared call is an error naming the field, for a target's and for a workload's fields.
TEST(BenchPreparedCall, ExtraBodyMayNotChangeTheBodysFields) {
    Target target;
    target.name = "t";
    target.base = net::parse_url("http://127.0.0.1:9/v1").value();
    target.model = "m";
    PromptSpec prompt;
    prompt.max_tokens = 5;
    target.extra_body = boost::json::parse(R"({"stream":false})").as_object();
    auto from_target = PreparedCall::make(target, prompt, {});
    ASSERT_FALSE(from_target);
    EXPECT_NE(from_target.error().message.find("extra body field 'stream'"), std::string::npos);
    target.extra_body = {};
    auto from_workload = PreparedCall::make(target, prompt, {},
                                            boost::json::parse(R"({"max_tokens":9})").as_object());
    ASSERT_FALSE(from_workload);
    EXPECT_NE(from_workload.error().message.find("'max_tokens'"), std::string::npos);
}

// The whole-body path (a prompt that cannot be spliced) carries the extra fields too.
TEST(BenchPreparedCall, ExtraBodyIsInTheSplicedAndTheWholeBody) {
    Target target;
    target.name = "t";
    target.base = net::parse_url("http://127.0.0.1:9/v1").value();
    target.model = "m";
    target.extra_body = boost::json::parse(R"({"ignore_eos":true})").as_object();
    PromptSpec prompt;
    prompt.max_tokens = 5;
    for (const std::string system : {"be brief", "\x01tokenradar-user-prompt\x01"}) {
        prompt.system = system;
        auto prepared = PreparedCall::make(target, prompt, {});
        ASSERT_TRUE(prepared) << prepared.error().message;
        auto body = prepared->body("hi");
        ASSERT_TRUE(body) << body.error().message;
        const auto parsed = boost::json::parse(*body).as_object();
        EXPECT_EQ(parsed.at("ignore_eos"), true) << *body;
        EXPECT_NE(body->find("\"hi\""), std::string::npos) << *body;
    }
}

TEST(BenchProbe, UnreachableHostIsAConnectionError) {
    Target target;
    target.name = "t";
    target.base = net::parse_url("http://127.0.0.1:1/v1").value();
    target.model = "m";
    ProbeRequest request;
    request.prompt.user = "x";
    request.prompt.max_tokens = 1;
    boost::asio::io_context ioc;
    net::HttpClient client(ioc.get_executor());
    auto r = testing::run_sync(ioc, run_probe(client, target, request));
    EXPECT_EQ(r.record.status, RequestStatus::connection_error);
    EXPECT_NE(r.error.find("127.0.0.1:1"), std::string::npos);
}

}  // namespace
}  // namespace tokenradar::bench
