// The simulated providers end to end: real sockets on 127.0.0.1, the real client, the real
// codecs. What a user of `tokenradar sim` relies on.

#include <tokenradar/sim/sim_server.hpp>

#include "../../support/run_sync.hpp"
#include "../../support/sim_fixture.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/dialect/stream_accumulator.hpp>
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <fstream>
#include <map>

namespace tokenradar {
namespace {

using dialect::Api;
using testing::SimFixture;
namespace http = boost::beast::http;
namespace asio = boost::asio;

struct StreamOutcome {
    unsigned status = 0;
    std::string error;  // transport or decode failure
    std::string text;
    std::string response_id;
    dialect::StreamAccumulator acc;
    std::int64_t t_send = 0;
    int pieces = 0;                          // non-empty reads of the body
    std::map<int, dialect::ToolCall> calls;  // tool-call deltas assembled by index
    int call_deltas = 0;                     // tool-call deltas carrying argument text
};

dialect::ChatRequest chat(std::string model, bool stream, std::int64_t max_tokens,
                          std::string user = "Say something about latency.") {
    dialect::ChatRequest r;
    r.model = std::move(model);
    r.messages.push_back(
        {dialect::Role::user, {dialect::ContentPart::make_text(std::move(user))}, {}, {}, {}});
    r.max_tokens = max_tokens;
    r.stream = stream;
    r.include_usage = true;
    return r;
}

// Every dialect the sim speaks.
constexpr std::array<Api, 4> kApis{Api::openai, Api::anthropic, Api::gemini, Api::openai_responses};

// The base path of the SDKs' usual base URL: OpenAI's carries /v1.
std::string_view base_path(Api api) {
    return api == Api::openai || api == Api::openai_responses ? "/v1" : "";
}

net::Url url_of(const SimFixture& sim, std::string target) {
    auto url = net::parse_url(sim.base_url()).value();
    url.target = std::move(target);
    return url;
}

asio::awaitable<StreamOutcome> stream_once(net::HttpClient& client, net::Url base, Api api,
                                           dialect::ChatRequest request,
                                           net::RequestHeaders extra) {
    StreamOutcome out;
    auto call = dialect::make_http_call(api, base_path(api), request, Secret("sk-test")).value();
    base.target = call.target;
    for (auto& h : extra) call.headers.push_back(h);
    auto opened = co_await client.open(http::verb::post, base, call.headers, call.body);
    if (!opened) {
        out.error = opened.error().message;
        co_return out;
    }
    auto& response = **opened;
    out.status = response.status();
    out.t_send = response.timings().t_send;
    if (out.status != 200) {
        auto body = co_await response.read_all(1 << 20);
        out.text = body ? *body : "";
        co_return out;
    }
    sse::SseParser parser;
    auto decoder = dialect::make_stream_decoder(api);
    std::vector<dialect::StreamDelta> deltas;
    while (true) {
        auto piece = co_await response.read_some();
        const auto now = steady_now_ns();
        if (!piece) {
            out.error = piece.error().message;
            break;
        }
        if (piece->empty()) {
            out.acc.on_end(now);
            break;
        }
        ++out.pieces;
        (void)parser.feed(*piece, [&](const sse::SseEvent& e) {
            deltas.clear();
            if (auto r = decoder->decode(e.event, e.data, deltas); !r) {
                out.error = "decode: " + r.error().message;
                return;
            }
            for (const auto& d : deltas) {
                if (d.kind == dialect::StreamDelta::Kind::text) out.text += d.text;
                if (d.kind == dialect::StreamDelta::Kind::role && out.response_id.empty())
                    out.response_id = d.id;
                if (d.kind == dialect::StreamDelta::Kind::tool_call) {
                    auto& assembled = out.calls[d.index];
                    if (!d.id.empty()) assembled.id = d.id;
                    if (!d.name.empty()) assembled.name = d.name;
                    assembled.arguments += d.arguments;
                    if (!d.arguments.empty()) ++out.call_deltas;
                }
            }
            out.acc.on_event(now, deltas);
        });
    }
    co_return out;
}

class SimServerTest : public ::testing::Test {
  protected:
    StreamOutcome stream(SimFixture& sim, Api api, dialect::ChatRequest request,
                         net::RequestHeaders extra = {}) {
        net::HttpClient client(ioc_.get_executor());
        return testing::run_sync(
            ioc_, stream_once(client, url_of(sim, "/"), api, std::move(request), std::move(extra)));
    }
    net::HttpClient::Response call(SimFixture& sim, http::verb verb, std::string target,
                                   net::RequestHeaders headers, std::string body) {
        net::HttpClient client(ioc_.get_executor());
        auto r = testing::run_sync(
            ioc_, client.request(verb, url_of(sim, std::move(target)), headers, std::move(body)));
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? std::move(*r) : net::HttpClient::Response{};
    }
    asio::io_context ioc_;
};

TEST_F(SimServerTest, EveryDialectStreamsValidEventsWithExactUsage) {
    SimFixture sim("instant");
    for (Api api : kApis) {
        SCOPED_TRACE(std::string(dialect::to_string(api)));
        auto out = stream(sim, api, chat("gpt-4o", true, 37));
        ASSERT_EQ(out.status, 200u) << out.text;
        EXPECT_EQ(out.error, "");
        EXPECT_TRUE(out.acc.saw_done());
        EXPECT_EQ(out.acc.usage().output_tokens, 37);
        EXPECT_GT(out.acc.usage().prompt_tokens.value_or(0), 0);
        EXPECT_EQ(out.acc.finish_reason(), dialect::FinishReason::length);
        EXPECT_FALSE(out.text.empty());
    }
}

TEST_F(SimServerTest, EveryDialectAnswersWholeResponses) {
    SimFixture sim("instant");
    for (Api api : kApis) {
        SCOPED_TRACE(std::string(dialect::to_string(api)));
        auto request = chat("gpt-4o", false, 12);
        auto http_call = dialect::make_http_call(api, base_path(api), request, Secret("k")).value();
        auto r = call(sim, http::verb::post, http_call.target, http_call.headers, http_call.body);
        ASSERT_EQ(r.status, 200u) << r.body;
        auto parsed = dialect::parse_response(api, r.body);
        ASSERT_TRUE(parsed) << parsed.error().message;
        EXPECT_EQ(parsed->usage.output_tokens, 12);
        EXPECT_FALSE(parsed->text.empty());
    }
}

// The Responses stream as OpenAI sends it: typed events whose SSE name repeats `type`,
// sequence_number counting from 0, one message item opened, fed and closed, and
// response.completed carrying the response (id, text, usage).
TEST_F(SimServerTest, ResponsesStreamIsOpenAisTypedEventSequence) {
    SimFixture sim("instant");
    auto request = chat("gpt-4o", true, 6);
    request.max_tokens = 100;  // 6 tokens come from the override: the answer completes
    auto http_call = dialect::make_http_call(Api::openai_responses, "/v1", request, Secret("k"));
    ASSERT_TRUE(http_call) << http_call.error().message;
    EXPECT_EQ(http_call->target, "/v1/responses");
    auto headers = http_call->headers;
    headers.emplace_back("x-sim-output-tokens", "6");
    auto r = call(sim, http::verb::post, http_call->target, headers, http_call->body);
    ASSERT_EQ(r.status, 200u) << r.body;
    std::vector<std::string> types;
    std::vector<boost::json::object> events;
    sse::SseParser parser;
    (void)parser.feed(r.body, [&](const sse::SseEvent& e) {
        auto v = boost::json::parse(e.data).as_object();
        EXPECT_EQ(e.event, v.at("type").as_string());
        EXPECT_EQ(v.at("sequence_number").as_int64(), static_cast<std::int64_t>(events.size()));
        types.emplace_back(e.event);
        events.push_back(std::move(v));
    });
    ASSERT_GE(types.size(), 9u) << r.body;
    const std::vector<std::string> head(types.begin(), types.begin() + 4);
    EXPECT_THAT(
        head, ::testing::ElementsAre("response.created", "response.in_progress",
                                     "response.output_item.added", "response.content_part.added"));
    const std::vector<std::string> tail(types.end() - 4, types.end());
    EXPECT_THAT(tail,
                ::testing::ElementsAre("response.output_text.done", "response.content_part.done",
                                       "response.output_item.done", "response.completed"));
    std::string text;
    for (std::size_t i = 4; i + 4 < types.size(); ++i) {
        EXPECT_EQ(types[i], "response.output_text.delta");
        text += events[i].at("delta").as_string();
    }
    EXPECT_FALSE(text.empty());
    const auto& created = events.front().at("response").as_object();
    const auto& completed = events.back().at("response").as_object();
    EXPECT_TRUE(created.at("id").as_string().starts_with("resp_"));
    EXPECT_EQ(completed.at("id"), created.at("id"));
    EXPECT_EQ(completed.at("status"), "completed");
    EXPECT_EQ(completed.at("output").at(0).at("content").at(0).at("text").as_string(), text);
    EXPECT_EQ(completed.at("usage").at("output_tokens"), 6);
    EXPECT_GT(completed.at("usage").at("input_tokens").as_int64(), 0);
    EXPECT_THAT(std::string(r.headers["content-type"]), ::testing::StartsWith("text/event-stream"));
}

// POST /v1/completions as OpenAI and vLLM answer it: a text_completion (cmpl- id, exact usage)
// after the profile's latency, or its chunks paced like the chat route's, then the usage chunk
// (include_usage) and [DONE].
TEST_F(SimServerTest, LegacyCompletionsAnswerWholeOrStreamedWithTheProfilesLatency) {
    SimFixture sim("fixed");  // TTFT 250 ms, then 20 ms per token
    const net::RequestHeaders headers{{"authorization", "Bearer k"},
                                      {"content-type", "application/json"}};
    const std::int64_t t_whole = steady_now_ns();
    auto whole = call(sim, http::verb::post, "/v1/completions", headers,
                      R"({"model":"gpt-4o","prompt":"Once upon a time","max_tokens":5})");
    const std::int64_t whole_ns = steady_now_ns() - t_whole;
    ASSERT_EQ(whole.status, 200u) << whole.body;
    auto answer = dialect::parse_text_completion(whole.body);
    ASSERT_TRUE(answer) << answer.error().message << whole.body;
    EXPECT_TRUE(answer->id.starts_with("cmpl-")) << answer->id;
    EXPECT_FALSE(answer->text.empty());
    EXPECT_EQ(answer->usage.output_tokens, 5);
    EXPECT_GT(answer->usage.prompt_tokens.value_or(0), 0);
    EXPECT_EQ(answer->finish_reason, dialect::FinishReason::length);
    EXPECT_GE(whole_ns, 250'000'000);  // the whole answer after the TTFT at least

    const std::int64_t t_stream = steady_now_ns();
    auto streamed = call(sim, http::verb::post, "/v1/completions", headers,
                         R"({"model":"gpt-4o","prompt":"Once upon a time","max_tokens":5,)"
                         R"("stream":true,"stream_options":{"include_usage":true}})");
    ASSERT_EQ(streamed.status, 200u) << streamed.body;
    EXPECT_GE(steady_now_ns() - t_stream, 250'000'000);
    EXPECT_THAT(std::string(streamed.headers["content-type"]),
                ::testing::StartsWith("text/event-stream"));
    dialect::TextCompletionStreamDecoder decoder;
    dialect::StreamAccumulator acc;
    std::string text;
    std::size_t events = 0;
    sse::SseParser parser;
    (void)parser.feed(streamed.body, [&](const sse::SseEvent& e) {
        ++events;
        std::vector<dialect::StreamDelta> deltas;
        ASSERT_TRUE(decoder.decode(e.event, e.data, deltas)) << e.data;
        if (e.data != "[DONE]") EXPECT_NE(e.data.find("\"text_completion\""), std::string::npos);
        for (const auto& d : deltas) {
            if (d.kind == dialect::StreamDelta::Kind::text) text += d.text;
        }
        acc.on_event(static_cast<std::int64_t>(events), deltas);
    });
    EXPECT_TRUE(acc.saw_done());
    EXPECT_EQ(acc.output_events(), 5u);  // one token per chunk
    EXPECT_EQ(acc.usage().output_tokens, 5);
    EXPECT_EQ(acc.finish_reason(), dialect::FinishReason::length);
    EXPECT_FALSE(text.empty());

    // Without include_usage there is no usage chunk, as OpenAI streams it.
    auto plain = call(sim, http::verb::post, "/v1/completions", headers,
                      R"({"model":"gpt-4o","prompt":"hi","max_tokens":2,"stream":true})");
    ASSERT_EQ(plain.status, 200u);
    EXPECT_EQ(plain.body.find("\"usage\""), std::string::npos) << plain.body;
    EXPECT_NE(plain.body.find("data: [DONE]"), std::string::npos);

    // A body without a prompt is OpenAI's 400; an unknown model its 404.
    auto bad = call(sim, http::verb::post, "/v1/completions", headers, R"({"model":"gpt-4o"})");
    EXPECT_EQ(bad.status, 400u);
    auto unknown = call(sim, http::verb::post, "/v1/completions", headers,
                        R"({"model":"nope","prompt":"hi"})");
    EXPECT_EQ(unknown.status, 404u);
}

TEST_F(SimServerTest, ZeroOutputTokensIsAnEmptyAnswerNotACrash) {
    SimFixture sim("fixed");
    for (bool stream : {false, true}) {
        auto request = chat("gpt-4o", stream, 0);
        auto http_call = dialect::make_http_call(Api::openai, "/v1", request, Secret("k")).value();
        auto r = call(sim, http::verb::post, http_call.target, http_call.headers, http_call.body);
        ASSERT_EQ(r.status, 200u) << r.body;
        if (!stream) {
            EXPECT_EQ(dialect::parse_response(Api::openai, r.body)->usage.output_tokens, 0);
        }
    }
}

TEST_F(SimServerTest, SameSeedGivesSameTextAcrossDialects) {
    SimFixture sim("instant");
    auto a = stream(sim, Api::openai, chat("gpt-4o", true, 20), {{"x-sim-seed", "7"}});
    auto b = stream(sim, Api::anthropic, chat("gpt-4o", true, 20), {{"x-sim-seed", "7"}});
    EXPECT_EQ(a.text, b.text);
    EXPECT_FALSE(a.text.empty());
}

TEST_F(SimServerTest, ErrorsHaveTheRealApisStatusAndShape) {
    sim::SimServerOptions options;
    options.limits.max_body_bytes = 4096;
    SimFixture sim("instant", options);
    const std::string body = R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})";

    auto no_key = call(sim, http::verb::post, "/v1/chat/completions",
                       {{"content-type", "application/json"}}, body);
    EXPECT_EQ(no_key.status, 401u);
    EXPECT_EQ(dialect::parse_error_body(Api::openai, 401, no_key.body).code, Errc::unauthorized);

    auto anthropic_no_key =
        call(sim, http::verb::post, "/v1/messages", {{"anthropic-version", "2023-06-01"}},
             R"({"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(anthropic_no_key.status, 401u);
    auto v = boost::json::parse(anthropic_no_key.body);
    EXPECT_EQ(v.at("type").as_string(), "error");
    EXPECT_EQ(v.at("error").at("type").as_string(), "authentication_error");

    auto gemini_no_key = call(sim, http::verb::post, "/v1beta/models/gpt-4o:generateContent", {},
                              R"({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})");
    EXPECT_EQ(gemini_no_key.status, 403u);
    EXPECT_EQ(boost::json::parse(gemini_no_key.body).at("error").at("status").as_string(),
              "PERMISSION_DENIED");

    const net::RequestHeaders auth{{"authorization", "Bearer k"}};
    auto unknown_model = call(sim, http::verb::post, "/v1/chat/completions", auth,
                              R"({"model":"nope","messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(unknown_model.status, 404u);
    EXPECT_THAT(unknown_model.body, ::testing::HasSubstr("nope"));

    auto malformed = call(sim, http::verb::post, "/v1/chat/completions", auth, "{\"model\":");
    EXPECT_EQ(malformed.status, 400u);
    EXPECT_EQ(dialect::parse_error_body(Api::openai, 400, malformed.body).code, Errc::bad_request);

    auto oversized =
        call(sim, http::verb::post, "/v1/chat/completions", auth, std::string(10000, 'x'));
    EXPECT_EQ(oversized.status, 413u);

    auto models = call(sim, http::verb::get, "/v1/models", auth, "");
    EXPECT_EQ(models.status, 200u);
    EXPECT_THAT(models.body, ::testing::HasSubstr("\"gpt-4o\""));
}

sim::Profile queue_profile(std::int64_t capacity, std::int64_t queue_limit) {
    return sim::parse_profile(fmt::format(R"(
name = "queue-test"
models = ["m"]
[ttft]
base_ms = 100.0
[decode]
tokens_per_s = 50.0
tokens_per_chunk = 1
[capacity]
max_concurrent = {}
queue_limit = {}
)",
                                          capacity, queue_limit),
                              "queue-test.toml");
}

// Runs `count` streams at once on one io_context and returns when all have finished.
std::vector<StreamOutcome> stream_many(asio::io_context& ioc, const net::Url& base, int count,
                                       std::int64_t tokens) {
    net::HttpClient client(ioc.get_executor());
    std::vector<StreamOutcome> results(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        asio::co_spawn(ioc, stream_once(client, base, Api::openai, chat("m", true, tokens), {}),
                       [&results, i](std::exception_ptr e, StreamOutcome out) {
                           if (e) std::rethrow_exception(e);
                           results[static_cast<std::size_t>(i)] = std::move(out);
                       });
    }
    ioc.restart();
    ioc.run();
    return results;
}

TEST_F(SimServerTest, TtftGrowsWhenConcurrencyExceedsCapacityAndFullQueueGets429) {
    {
        SimFixture sim(queue_profile(2, 10));
        auto results = stream_many(ioc_, url_of(sim, "/"), 6, 5);
        std::vector<double> ttft;
        for (const auto& r : results) {
            ASSERT_EQ(r.status, 200u);
            ttft.push_back(ns_to_ms(*r.acc.times().first_token - r.t_send));
        }
        std::sort(ttft.begin(), ttft.end());
        // Two run at once (100 ms); the others wait for a slot (5 tokens take 180 ms). Checked
        // as differences, which a loaded machine (ASan at load 5: the first two at ~200 ms)
        // delays alike: one slot would put 180 ms between the first two.
        EXPECT_LT(ttft[1] - ttft[0], 90);
        EXPECT_GT(ttft[5] - ttft[1], 2 * 180 - 40);
        EXPECT_GT(ttft[5], 100 + 2 * 180 - 20);
    }
    {
        SimFixture sim(queue_profile(1, 1));
        auto results = stream_many(ioc_, url_of(sim, "/"), 3, 5);
        int rejected = 0;
        for (const auto& r : results) rejected += r.status == 429 ? 1 : 0;
        EXPECT_EQ(rejected, 1);
    }
}

TEST_F(SimServerTest, RepeatedLongPrefixIsCachedAndFaster) {
    auto profile = sim::parse_profile(R"(
name = "cache-test"
models = ["m"]
[ttft]
base_ms = 20.0
prefill_ms_per_1k_tokens = 400.0
[decode]
tokens_per_s = 1000.0
[prefix_cache]
block_tokens = 16
capacity_blocks = 10000
)",
                                      "cache-test.toml");
    SimFixture sim(profile);
    const std::string prefix(8000, 'p');  // 2,000 tokens: 800 ms of prefill when not cached
    auto first = stream(sim, Api::openai, chat("m", true, 3, prefix + " first question"));
    auto second = stream(sim, Api::openai, chat("m", true, 3, prefix + " second question"));
    ASSERT_EQ(first.status, 200u);
    ASSERT_EQ(second.status, 200u);
    EXPECT_EQ(first.acc.usage().cached_prompt_tokens.value_or(0), 0);
    EXPECT_GE(second.acc.usage().cached_prompt_tokens.value_or(0), 1984);
    const double ttft_first = ns_to_ms(*first.acc.times().first_token - first.t_send);
    const double ttft_second = ns_to_ms(*second.acc.times().first_token - second.t_send);
    EXPECT_GT(ttft_first, 800);
    EXPECT_LT(ttft_second, 100);
}

TEST_F(SimServerTest, InjectedFaultsBehaveAsTheyWouldOnTheWire) {
    SimFixture sim("instant");
    auto limited = call(sim, http::verb::post, "/v1/chat/completions",
                        {{"authorization", "Bearer k"}, {"x-sim-fault", "429"}},
                        R"({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(limited.status, 429u);
    EXPECT_EQ(limited.headers["retry-after"], "1");

    auto cut = stream(sim, Api::openai, chat("gpt-4o", true, 50),
                      {{"x-sim-fault", "disconnect"},
                       {"x-sim-fault-at-token", "20"},
                       {"x-sim-tokens-per-chunk", "1"},
                       {"x-sim-tpot-ms", "1"}});
    EXPECT_NE(cut.error, "");
    EXPECT_FALSE(cut.acc.saw_done());
    EXPECT_FALSE(cut.text.empty());

    auto garbled = stream(sim, Api::openai, chat("gpt-4o", true, 10),
                          {{"x-sim-fault", "malformed"}, {"x-sim-fault-at-token", "3"}});
    EXPECT_THAT(garbled.error, ::testing::HasSubstr("decode"));

    auto stalled = stream(sim, Api::openai, chat("gpt-4o", true, 6),
                          {{"x-sim-fault", "stall"},
                           {"x-sim-fault-at-token", "3"},
                           {"x-sim-stall-ms", "300"},
                           {"x-sim-tokens-per-chunk", "1"}});
    ASSERT_EQ(stalled.error, "");
    const auto& gaps = stalled.acc.chunk_gaps_ns();
    ASSERT_FALSE(gaps.empty());
    EXPECT_GE(*std::max_element(gaps.begin(), gaps.end()), 290'000'000);
}

TEST_F(SimServerTest, APacingQuantumWritesTheChunksDueWithinItTogetherAndNeverEarly) {
    // 40 chunks 1 ms apart: exactly paced they are ~40 writes; on a 10 ms grid the ones
    // due within one quantum go out in one write, late by under 10 ms on average 5.
    sim::SimServerOptions options;
    options.pacing_quantum = std::chrono::milliseconds(10);
    SimFixture sim("instant", options);
    const net::RequestHeaders paced{
        {"x-sim-ttft-ms", "1"}, {"x-sim-tpot-ms", "1"}, {"x-sim-tokens-per-chunk", "1"}};
    auto out = stream(sim, Api::openai, chat("gpt-4o", true, 40), paced);
    ASSERT_EQ(out.error, "");
    EXPECT_TRUE(out.acc.saw_done());
    EXPECT_EQ(out.acc.usage().output_tokens, 40);
    EXPECT_LE(out.pieces, 10) << "the grid should gather ~10 chunks per write";
    const sim::SimStats stats = sim.server().stats();
    EXPECT_EQ(stats.chunks, 40u);
    EXPECT_GE(stats.lateness_p50_ns, 1'000'000) << "writes wait for their grid point";
}

TEST_F(SimServerTest, TraceLinesJoinOnResponseIds) {
    // Per process: ctest of another build tree (or another checkout) may run this test at
    // the same time, and the sink appends.
    const auto path = std::filesystem::temp_directory_path() /
                      ("tokenradar_sim_trace_test_" + std::to_string(::getpid()) + ".jsonl");
    std::filesystem::remove(path);
    sim::SimServerOptions options;
    options.trace = sim::TraceSink::open(path).value();
    std::vector<StreamOutcome> outcomes;
    {
        SimFixture sim("fixed", options);
        for (int i = 0; i < 3; ++i)
            outcomes.push_back(stream(sim, Api::openai, chat("gpt-4o", true, 3)));
    }
    std::ifstream in(path);
    std::string line;
    std::vector<boost::json::value> traced;
    while (std::getline(in, line)) traced.push_back(boost::json::parse(line));
    std::filesystem::remove(path);
    ASSERT_EQ(traced.size(), outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        SCOPED_TRACE(i);
        const auto& v = traced[i];
        const auto& out = outcomes[i];
        ASSERT_EQ(out.status, 200u) << out.text;
        EXPECT_EQ(v.at("response_id").as_string(), out.response_id);
        // The trace promises ttft_ns = queue_wait_ns + the planned TTFT (exactly 250 ms in
        // "fixed"). queue_wait_ns is the sim's own parse/admission time: it has no bound a
        // loaded machine cannot break (5-30 ms seen under ASan with two compilers running),
        // so it is bounded by causality instead: the sim stamps "request read" after the
        // client stamped t_send, and the first token arrives after it was due, so the
        // client's TTFT can never be shorter than the traced one.
        const std::int64_t queue_wait = v.at("queue_wait_ns").as_int64();
        const std::int64_t ttft = v.at("ttft_ns").as_int64();
        EXPECT_GE(queue_wait, 0);
        EXPECT_EQ(ttft - queue_wait, 250'000'000);
        ASSERT_TRUE(out.acc.times().first_token.has_value());
        EXPECT_LE(ttft, *out.acc.times().first_token - out.t_send);
        // What the sim did: its first token went out no earlier than planned, and before
        // the client read it.
        const std::int64_t sent = v.at("ttft_sent_ns").as_int64();
        EXPECT_GE(sent, ttft);
        EXPECT_LE(sent, *out.acc.times().first_token - out.t_send);
    }
}

TEST_F(SimServerTest, ClientThatLeavesFreesItsSlot) {
    SimFixture sim(queue_profile(1, 5));
    {
        net::HttpClient client(ioc_.get_executor());
        auto call =
            dialect::make_http_call(Api::openai, "/v1", chat("m", true, 100), Secret("k")).value();
        auto url = url_of(sim, call.target);
        auto opened =
            testing::run_sync(ioc_, client.open(http::verb::post, url, call.headers, call.body));
        ASSERT_TRUE(opened);
        (*opened)->cancel();  // leaves mid-stream, holding the only slot
    }
    auto next = stream(sim, Api::openai, chat("m", true, 2));
    EXPECT_EQ(next.status, 200u);
    EXPECT_TRUE(next.acc.saw_done());
}

// ---- Answers beyond text: tool calls, JSON mode, Bearer auth for Anthropic -----------------

constexpr std::string_view kWeatherSchema =
    R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1},)"
    R"("unit":{"type":"string","enum":["c","f"]}},"required":["city","days","unit"]})";

dialect::ChatRequest with_tools(bool stream, std::int64_t max_tokens) {
    auto r = chat("gpt-4o", stream, max_tokens, "What is the weather in Paris?");
    r.tools.push_back({"get_weather", "Weather of a city", std::string(kWeatherSchema), false, {}});
    r.tools.push_back(
        {"get_time",
         "Time in a zone",
         R"({"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]})",
         false,
         {}});
    return r;
}

void expect_weather_arguments(const std::string& arguments) {
    auto v = boost::json::parse(arguments);
    ASSERT_TRUE(v.is_object()) << arguments;
    EXPECT_TRUE(v.at("city").is_string());
    EXPECT_FALSE(v.at("city").as_string().empty());
    EXPECT_GE(v.at("days").as_int64(), 1);
    EXPECT_EQ(v.at("unit").as_string(), "c");
}

TEST_F(SimServerTest, ToolCallsStreamInEveryDialectsShapeAndDecodeWithOurDecoders) {
    SimFixture sim("instant");
    for (Api api : kApis) {
        SCOPED_TRACE(std::string(dialect::to_string(api)));
        auto request = with_tools(true, 20);
        request.tool_choice =
            dialect::ToolChoice{dialect::ToolChoice::Mode::function, "get_weather"};
        auto out = stream(sim, api, request, {{"x-sim-tokens-per-chunk", "2"}});
        ASSERT_EQ(out.status, 200u) << out.text;
        EXPECT_EQ(out.error, "");
        EXPECT_TRUE(out.acc.saw_done());
        EXPECT_EQ(out.text, "") << "a call, not text";
        ASSERT_EQ(out.calls.size(), 1u);
        const dialect::ToolCall& call = out.calls.begin()->second;
        EXPECT_EQ(call.name, "get_weather");
        expect_weather_arguments(call.arguments);
        EXPECT_EQ(out.acc.finish_reason(), dialect::FinishReason::tool_calls);
        EXPECT_EQ(out.acc.usage().output_tokens, 20);
        if (api == Api::gemini) {
            EXPECT_EQ(out.call_deltas, 1) << "Gemini sends a call whole";
        } else {
            EXPECT_TRUE(call.id.starts_with(api == Api::anthropic ? "toolu_" : "call_")) << call.id;
            EXPECT_EQ(out.call_deltas, 10) << "argument fragments paced like the 10 chunks of text";
        }
    }
}

TEST_F(SimServerTest, ToolCallsInWholeResponsesAndTheOverrideHeader) {
    SimFixture sim("instant");
    for (Api api : kApis) {
        SCOPED_TRACE(std::string(dialect::to_string(api)));
        auto http_call =
            dialect::make_http_call(api, base_path(api), with_tools(false, 8), Secret("k")).value();
        // Without a request to call, the instant profile (tool_call_rate 0) answers text.
        auto text =
            call(sim, http::verb::post, http_call.target, http_call.headers, http_call.body);
        ASSERT_EQ(text.status, 200u) << text.body;
        EXPECT_TRUE(dialect::parse_response(api, text.body)->tool_calls.empty());

        auto headers = http_call.headers;
        headers.emplace_back("x-sim-tool-call", "always");
        headers.emplace_back("x-sim-seed", "3");
        auto r = call(sim, http::verb::post, http_call.target, headers, http_call.body);
        ASSERT_EQ(r.status, 200u) << r.body;
        auto parsed = dialect::parse_response(api, r.body);
        ASSERT_TRUE(parsed) << parsed.error().message;
        ASSERT_EQ(parsed->tool_calls.size(), 1u) << r.body;
        EXPECT_EQ(parsed->finish_reason, dialect::FinishReason::tool_calls);
        EXPECT_EQ(parsed->text, "");
        EXPECT_EQ(parsed->usage.output_tokens, 8);
        const auto& tc = parsed->tool_calls.front();
        if (tc.name == "get_weather") {
            expect_weather_arguments(tc.arguments);
        } else {
            EXPECT_EQ(tc.name, "get_time");
            EXPECT_TRUE(boost::json::parse(tc.arguments).at("tz").is_string());
        }
    }
}

TEST_F(SimServerTest, ResponseFormatJsonIsValidJsonContent) {
    SimFixture sim("instant");
    auto request = chat("gpt-4o", true, 15);
    request.response_format = dialect::ResponseFormat{
        dialect::ResponseFormat::Kind::json_schema, "answer",
        R"({"type":"object","properties":{"summary":{"type":"string"},"score":{"type":"number"}},"required":["summary","score"],"additionalProperties":false})",
        true};
    auto streamed = stream(sim, Api::openai, request);
    ASSERT_EQ(streamed.status, 200u) << streamed.text;
    auto v = boost::json::parse(streamed.text);
    EXPECT_TRUE(v.at("summary").is_string());
    EXPECT_TRUE(v.at("score").is_number());
    EXPECT_EQ(streamed.acc.finish_reason(), dialect::FinishReason::stop);

    request.stream = false;
    request.response_format =
        dialect::ResponseFormat{dialect::ResponseFormat::Kind::json_object, {}, {}, false};
    auto http_call = dialect::make_http_call(Api::openai, "/v1", request, Secret("k")).value();
    auto r = call(sim, http::verb::post, http_call.target, http_call.headers, http_call.body);
    ASSERT_EQ(r.status, 200u) << r.body;
    auto parsed = dialect::parse_response(Api::openai, r.body);
    ASSERT_TRUE(parsed);
    EXPECT_TRUE(boost::json::parse(parsed->text).is_object()) << parsed->text;
}

TEST_F(SimServerTest, AnthropicAcceptsBearerAuthAndOpenAiRefusesSeveralChoices) {
    SimFixture sim("instant");
    auto bearer =
        call(sim, http::verb::post, "/v1/messages",
             {{"authorization", "Bearer sk-ant"}, {"anthropic-version", "2023-06-01"}},
             R"({"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(bearer.status, 200u) << bearer.body;
    EXPECT_EQ(dialect::parse_response(Api::anthropic, bearer.body)->usage.output_tokens, 5);

    auto several =
        call(sim, http::verb::post, "/v1/chat/completions", {{"authorization", "Bearer k"}},
             R"({"model":"gpt-4o","n":2,"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(several.status, 400u);
    EXPECT_THAT(several.body, ::testing::HasSubstr("n = 1 only"));
}

}  // namespace
}  // namespace tokenradar
