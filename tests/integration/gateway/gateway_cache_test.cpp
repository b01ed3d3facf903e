// The response cache end to end: an OpenAI client -> the gateway -> a scripted upstream that
// counts what it is asked. Each case is a promise of README "Response cache", checked on the
// bytes the client gets, the headers, the upstream's request count and the records.

#include "../../support/gateway_fixture.hpp"
#include "../../support/redis_server.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/service_fixture.hpp"
#include "../../support/temp_path.hpp"

#include <tokenradar/net/api_keys.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace tokenradar::gateway {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using testing::GatewayFixture;
using testing::ScriptedServer;

std::string chunk(const json::object& delta, const json::value& finish = nullptr) {
    return "data: " +
           json::serialize(json::object{
               {"id", "chatcmpl-up"},
               {"object", "chat.completion.chunk"},
               {"created", 1},
               {"model", "up-model"},
               {"choices", json::array{json::object{
                               {"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}}) +
           "\n\n";
}

const std::string kUsageChunk =
    R"(data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"up-model",)"
    R"("choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}})"
    "\n\n";

// Three content chunks 40 ms apart, then the finish, usage and [DONE].
testing::Script three_chunks(bool cut = false) {
    std::vector<testing::ScriptedPiece> pieces = {
        {milliseconds(0), chunk({{"role", "assistant"}, {"content", "Hel"}})},
        {milliseconds(40), chunk({{"content", "lo, "}})},
        {milliseconds(40), chunk({{"content", "world"}})},
    };
    if (!cut) {
        pieces.push_back(
            {milliseconds(0), chunk(json::object{}, "stop") + kUsageChunk + "data: [DONE]\n\n"});
    }
    return testing::sse_script(std::move(pieces), cut);
}

testing::Script whole_answer() {
    testing::Script s;
    s.content_type = "application/json";
    s.pieces = {{milliseconds(0),
                 R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-model",)"
                 R"("choices":[{"index":0,"message":{"role":"assistant","content":"forty-two"},)"
                 R"("finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,)"
                 R"("total_tokens":7}})"}};
    return s;
}

constexpr std::string_view kKeyA = "tr-key-team-a";
constexpr std::string_view kKeyB = "tr-key-team-b";

// Two client keys, "team-a" and "team-b".
std::string two_keys() {
    return "[auth]\n[[auth.keys]]\nname = \"team-a\"\nsha256 = \"" + net::hash_api_key(kKeyA) +
           "\"\n[[auth.keys]]\nname = \"team-b\"\nsha256 = \"" + net::hash_api_key(kKeyB) + "\"\n";
}

// Model "m" on the scripted upstream, caching as `model_keys` say, behind `auth` (and
// whatever tables come with it).
std::string config(const ScriptedServer& upstream, std::string_view model_keys = "",
                   std::string_view extra = "", const std::string& auth = two_keys()) {
    return auth + R"(
[store]
path = ""
[[providers]]
name = "up"
api = "openai"
base_url = ")" +
           upstream.base_url() +
           R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "m"
upstreams = ["up/up-model"]
cache = "exact"
)" + std::string(model_keys) +
           std::string(extra);
}

// `toml` (from config()) with the model's cache mode set to `mode`.
std::string with_mode(std::string toml, std::string_view mode) {
    const std::string exact = "cache = \"exact\"";
    return toml.replace(toml.find(exact), exact.size(), "cache = \"" + std::string(mode) + "\"");
}

std::string body(bool stream, std::string_view question = "What is latency?",
                 std::string_view sampling = R"("temperature":0)") {
    return std::string(R"({"model":"m",)") + std::string(sampling) +
           R"(,"messages":[{"role":"user","content":")" + std::string(question) + R"("}])" +
           (stream ? R"(,"stream":true,"stream_options":{"include_usage":true}})" : "}");
}

testing::Fetched ask(const GatewayFixture& gw, const std::string& b, std::string_view key = kKeyA,
                     testing::HeaderPairs headers = {}) {
    headers.emplace_back("authorization", "Bearer " + std::string(key));
    return testing::post_json(gw.url("/v1/chat/completions"), b, std::move(headers));
}

std::string header(const testing::Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

// The non-empty `content` of every chunk of an OpenAI stream body, in order (the role chunk's
// content is "").
std::vector<std::string> contents(const std::string& sse) {
    std::vector<std::string> out;
    for (std::size_t at = sse.find("data: {"); at != std::string::npos;
         at = sse.find("data: {", at + 1)) {
        const auto end = sse.find("\n\n", at);
        const auto o = json::parse(sse.substr(at + 6, end - at - 6)).as_object();
        const auto& choices = o.at("choices").as_array();
        if (choices.empty()) continue;
        const auto& delta = choices[0].as_object().at("delta").as_object();
        if (const auto* c = delta.if_contains("content");
            c != nullptr && c->is_string() && !c->get_string().empty()) {
            out.emplace_back(c->get_string());
        }
    }
    return out;
}

TEST(GatewayCache, AStreamedAnswerServesLaterStreamAndWholeRequestsFromTheCache) {
    ScriptedServer upstream(three_chunks());
    GatewayFixture gw(config(upstream));
    auto first = ask(gw, body(true));
    ASSERT_EQ(first.status, 200u) << first.body;
    EXPECT_EQ(header(first, "x-tokenradar-cache"), "miss");

    auto whole = ask(gw, body(false));
    ASSERT_EQ(whole.status, 200u) << whole.body;
    EXPECT_EQ(header(whole, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(header(whole, "x-tokenradar-upstream"), "up/up-model");
    const auto answer = json::parse(whole.body).as_object();
    EXPECT_EQ(
        answer.at("choices").as_array()[0].as_object().at("message").as_object().at("content"),
        "Hello, world");
    EXPECT_EQ(answer.at("usage").as_object().at("completion_tokens"), 3);

    auto again = ask(gw, body(true));
    ASSERT_EQ(again.status, 200u);
    EXPECT_EQ(header(again, "x-tokenradar-cache"), "exact");
    // The original chunks, not one collapsed chunk.
    EXPECT_EQ(contents(again.body), (std::vector<std::string>{"Hel", "lo, ", "world"}));
    EXPECT_NE(again.body.find("\"completion_tokens\":3"), std::string::npos);
    EXPECT_NE(again.body.find("data: [DONE]"), std::string::npos);
    EXPECT_EQ(upstream.received_bodies().size(), 1u);

    const auto records = gw.records().wait_for(3);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].labels.cache, Cache::miss);
    EXPECT_EQ(records[1].labels.cache, Cache::exact);
    EXPECT_EQ(records[1].labels.provider, "up");
    EXPECT_EQ(records[1].labels.model, "up-model");
    EXPECT_EQ(records[2].output_tokens, 3);
    EXPECT_EQ(records[2].status, RequestStatus::ok);
    ASSERT_TRUE(records[2].t.first_token && records[2].t.done);
    // The hit's own time: far under the original's 80 ms of gaps.
    EXPECT_LT(*records[2].t.done - records[2].t.send, 40'000'000);
}

TEST(GatewayCache, AWholeAnswerStreamsFromTheCache) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(config(upstream));
    ASSERT_EQ(ask(gw, body(false)).status, 200u);
    auto streamed = ask(gw, body(true));
    ASSERT_EQ(streamed.status, 200u);
    EXPECT_EQ(header(streamed, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(contents(streamed.body), std::vector<std::string>{"forty-two"});
    EXPECT_EQ(upstream.received_bodies().size(), 1u);
}

TEST(GatewayCache, APacedReplayKeepsTheOriginalGaps) {
    ScriptedServer upstream(three_chunks());
    GatewayFixture gw(config(upstream, "cache_replay = \"paced\"\n"));
    ASSERT_EQ(ask(gw, body(true)).status, 200u);
    auto paced = ask(gw, body(true));
    ASSERT_EQ(header(paced, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(contents(paced.body), (std::vector<std::string>{"Hel", "lo, ", "world"}));
    // Two 40 ms gaps: the client reads the pieces apart, over at least ~80 ms.
    ASSERT_GE(paced.pieces.size(), 3u);
    EXPECT_GE(paced.pieces.back().first - paced.pieces.front().first, 70'000'000);
}

TEST(GatewayCache, ACutStreamIsNeverStored) {
    ScriptedServer upstream(three_chunks(true));
    GatewayFixture gw(config(upstream));
    auto cut = ask(gw, body(true));
    EXPECT_NE(cut.body.find("\"error\""), std::string::npos);
    auto next = ask(gw, body(true));
    EXPECT_EQ(header(next, "x-tokenradar-cache"), "miss");
    EXPECT_EQ(upstream.received_bodies().size(), 2u);
}

TEST(GatewayCache, CacheControlOfTheRequestIsObeyed) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(config(upstream));
    // only-if-cached with nothing stored: 504, the upstream untouched.
    auto none = ask(gw, body(false), kKeyA, {{"cache-control", "only-if-cached"}});
    EXPECT_EQ(none.status, 504u);
    EXPECT_EQ(upstream.received_bodies().size(), 0u);
    // no-store: neither read nor written.
    auto bypass = ask(gw, body(false), kKeyA, {{"cache-control", "no-store"}});
    EXPECT_EQ(header(bypass, "x-tokenradar-cache"), "bypass");
    EXPECT_EQ(header(ask(gw, body(false)), "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(gw, body(false)), "x-tokenradar-cache"), "exact");
    // no-cache: a fresh answer, stored.
    EXPECT_EQ(
        header(ask(gw, body(false), kKeyA, {{"cache-control", "no-cache"}}), "x-tokenradar-cache"),
        "refresh");
    EXPECT_EQ(upstream.received_bodies().size(), 3u);
    // max-age: an entry older than accepted is a miss.
    std::this_thread::sleep_for(milliseconds(1100));
    EXPECT_EQ(
        header(ask(gw, body(false), kKeyA, {{"cache-control", "max-age=0"}}), "x-tokenradar-cache"),
        "miss");
    EXPECT_EQ(header(ask(gw, body(false), kKeyA, {{"cache-control", "max-age=60"}}),
                     "x-tokenradar-cache"),
              "exact");
    EXPECT_EQ(header(ask(gw, body(false), kKeyA, {{"cache-control", "only-if-cached"}}),
                     "x-tokenradar-cache"),
              "exact");
    EXPECT_EQ(upstream.received_bodies().size(), 4u);
}

TEST(GatewayCache, TenantsNeverSeeEachOthersAnswers) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(config(upstream));
    EXPECT_EQ(header(ask(gw, body(false), kKeyA), "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(gw, body(false), kKeyB), "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(gw, body(false), kKeyB), "x-tokenradar-cache"), "exact");
    EXPECT_EQ(header(ask(gw, body(false), kKeyA), "x-tokenradar-cache"), "exact");
    EXPECT_EQ(upstream.received_bodies().size(), 2u);
}

TEST(GatewayCache, SampledAnswersAreCachedOnlyWhenTheModelSaysSo) {
    ScriptedServer upstream(whole_answer());
    {
        GatewayFixture gw(config(upstream));
        const auto sampled = body(false, "q", R"("temperature":0.7)");
        EXPECT_EQ(header(ask(gw, sampled), "x-tokenradar-cache"), "bypass");
        EXPECT_EQ(header(ask(gw, sampled), "x-tokenradar-cache"), "bypass");
        const auto seeded = body(false, "q", R"("temperature":0.7,"seed":1)");
        EXPECT_EQ(header(ask(gw, seeded), "x-tokenradar-cache"), "miss");
        EXPECT_EQ(header(ask(gw, seeded), "x-tokenradar-cache"), "exact");
    }
    GatewayFixture opted_in(config(upstream, "cache_sampling = true\n"));
    const auto sampled = body(false, "q", R"("temperature":0.7)");
    EXPECT_EQ(header(ask(opted_in, sampled), "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(opted_in, sampled), "x-tokenradar-cache"), "exact");
}

TEST(GatewayCache, AKeylessListenerSharesAnswersOnlyWhenConfigured) {
    ScriptedServer upstream(whole_answer());
    const auto keyless = [&](std::string_view cache_table) {
        return config(upstream, "", "", "[auth]\nmode = \"none\"\n" + std::string(cache_table));
    };
    {
        GatewayFixture gw(keyless(""));
        EXPECT_EQ(header(testing::post_json(gw.url("/v1/chat/completions"), body(false)),
                         "x-tokenradar-cache"),
                  "bypass");
    }
    GatewayFixture gw(keyless("[cache]\nkeyless = true"));
    EXPECT_EQ(header(testing::post_json(gw.url("/v1/chat/completions"), body(false)),
                     "x-tokenradar-cache"),
              "miss");
    EXPECT_EQ(header(testing::post_json(gw.url("/v1/chat/completions"), body(false)),
                     "x-tokenradar-cache"),
              "exact");
}

TEST(GatewayCache, MetricsCountWhatTheCacheDid) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(config(upstream));
    ask(gw, body(false));
    ask(gw, body(false));
    ask(gw, body(false));
    auto m = testing::fetch(boost::beast::http::verb::get, gw.url("/metrics"),
                            {{"authorization", "Bearer " + std::string(kKeyA)}});
    EXPECT_EQ(testing::metric_value(m.body,
                                    R"(tokenradar_cache_requests_total{model="m",result="miss"})"),
              1);
    EXPECT_EQ(testing::metric_value(m.body,
                                    R"(tokenradar_cache_requests_total{model="m",result="exact"})"),
              2);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_memory_entries"), 1);

    // The dashboard's view of the same, without a key (counts only, like /api/v1/gateway).
    auto api = testing::fetch(boost::beast::http::verb::get, gw.url("/api/v1/gateway/cache"));
    ASSERT_EQ(api.status, 200u) << api.body;
    const auto stats = json::parse(api.body).as_object();
    const auto& model = stats.at("models").as_array().at(0).as_object();
    EXPECT_EQ(model.at("model"), "m");
    EXPECT_EQ(model.at("requests").at("exact"), 2);
    EXPECT_EQ(model.at("requests").at("miss"), 1);
    EXPECT_GE(model.at("saved_seconds").as_double(), 0.0);
    EXPECT_EQ(stats.at("memory").at("entries"), 1);
}

std::string metrics_text(const GatewayFixture& gw) {
    return testing::fetch(boost::beast::http::verb::get, gw.url("/metrics"),
                          {{"authorization", "Bearer " + std::string(kKeyA)}})
        .body;
}

// Questions are indexed on the cache's own thread after the answer: wait until `n` are.
void wait_until_indexed(const GatewayFixture& gw, std::int64_t n) {
    for (int i = 0; i < 500; ++i) {
        if (testing::metric_value(metrics_text(gw), "tokenradar_cache_semantic_entries") >= n)
            return;
        std::this_thread::sleep_for(milliseconds(4));
    }
    FAIL() << "the semantic index never held " << n << " questions";
}

std::string similarity(const testing::Fetched& f) {
    return header(f, "x-tokenradar-cache-similarity");
}

TEST(GatewayCache, ANearDuplicateIsASemanticHitAndAFlippedQuestionIsNot) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(with_mode(config(upstream), "semantic"));
    const auto first = ask(gw, body(false, "How do I turn the kitchen light on?"));
    EXPECT_EQ(header(first, "x-tokenradar-cache"), "miss");
    wait_until_indexed(gw, 1);
    const auto near = ask(gw, body(false, "how do i turn the kitchen light on"));
    EXPECT_EQ(header(near, "x-tokenradar-cache"), "semantic");
    EXPECT_FALSE(similarity(near).empty());
    EXPECT_GE(std::stod(similarity(near)), 0.85);
    // The guard: a negation-flipped and a polarity-flipped question are misses.
    EXPECT_EQ(
        header(ask(gw, body(false, "How do I turn the kitchen light off?")), "x-tokenradar-cache"),
        "miss");
    EXPECT_EQ(header(ask(gw, body(false, "How do I not turn the kitchen light on?")),
                     "x-tokenradar-cache"),
              "miss");
    // Another tenant never gets tenant A's answer, however close the question.
    EXPECT_EQ(header(ask(gw, body(false, "how do i turn the kitchen light on"), kKeyB),
                     "x-tokenradar-cache"),
              "miss");
    // Another system prompt is another scope.
    const std::string with_system =
        R"({"model":"m","temperature":0,"messages":[{"role":"system","content":"Be terse."},)"
        R"({"role":"user","content":"how do i turn the kitchen light on"}]})";
    EXPECT_EQ(header(ask(gw, with_system), "x-tokenradar-cache"), "miss");
    const auto records = gw.records().wait_for(6);
    ASSERT_GE(records.size(), 2u);
    EXPECT_EQ(records[1].labels.cache, Cache::semantic);
    auto m = testing::fetch(boost::beast::http::verb::get, gw.url("/metrics"),
                            {{"authorization", "Bearer " + std::string(kKeyA)}});
    EXPECT_EQ(testing::metric_value(
                  m.body, R"(tokenradar_cache_requests_total{model="m",result="semantic"})"),
              1);
    // A similarity is observed when the scope had a candidate: the near duplicate and the
    // two flipped questions (tenant B's and the system prompt's scopes were empty).
    EXPECT_EQ(
        testing::metric_value(m.body, R"(tokenradar_cache_semantic_similarity_count{model="m"})"),
        3);
}

// Model m's keys and the provider for an OpenAI-compatible embedder at `embedder`.
std::string upstream_embedder(const ScriptedServer& embedder) {
    return R"(
semantic_embedder = "emb/e"
semantic_threshold = 0.95
[[providers]]
name = "emb"
api = "openai"
base_url = ")" +
           embedder.base_url() + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
)";
}

TEST(GatewayCache, AnUpstreamEmbedderIsCalledAndRecorded) {
    ScriptedServer upstream(whole_answer());
    // Every question gets the same vector: the similarity is 1 and the guard decides.
    testing::Script vectors;
    vectors.content_type = "application/json";
    vectors.pieces = {{milliseconds(0),
                       R"({"object":"list","data":[{"object":"embedding","index":0,)"
                       R"("embedding":[0.1,0.2,0.3,0.4]}],"model":"e"})"}};
    ScriptedServer embedder(vectors);
    GatewayFixture gw(with_mode(config(upstream, upstream_embedder(embedder)), "semantic"));
    EXPECT_EQ(header(ask(gw, body(false, "What does a CDN do?")), "x-tokenradar-cache"), "miss");
    wait_until_indexed(gw, 1);
    EXPECT_EQ(header(ask(gw, body(false, "what does a cdn do")), "x-tokenradar-cache"), "semantic");
    EXPECT_EQ(header(ask(gw, body(false, "What does a CDN not do?")), "x-tokenradar-cache"),
              "miss");
    const auto calls = embedder.received_bodies();
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_NE(calls[0].find("\"input\":\"What does a CDN do?\""), std::string::npos) << calls[0];
    std::size_t embedding_records = 0;
    for (const auto& r : gw.records().wait_for(6)) {
        if (r.labels.task == "embeddings") {
            ++embedding_records;
            EXPECT_EQ(r.labels.provider, "emb");
            EXPECT_EQ(r.status, RequestStatus::ok);
        }
    }
    EXPECT_EQ(embedding_records, 3u);
}

// llama-server (c392e50) started with --embeddings but without --pooling mean answers
// /v1/embeddings with this 400. The semantic tier then has no vector: the request goes on as
// an exact-cache lookup, the client never sees the embedder's error, and the failed call is
// a record (http_400) like any upstream call.
TEST(GatewayCache, AnEmbedderThatRefusesLeavesTheExactCacheWorking) {
    ScriptedServer upstream(whole_answer());
    testing::Script refusal;
    refusal.status = 400;
    refusal.content_type = "application/json; charset=utf-8";
    refusal.pieces = {{milliseconds(0),
                       R"({"error":{"code":400,"message":"Pooling type 'none' is not OAI )"
                       R"(compatible. Please use a different pooling type","type":)"
                       R"("invalid_request_error"}})"}};
    ScriptedServer embedder(refusal);
    GatewayFixture gw(with_mode(config(upstream, upstream_embedder(embedder)), "semantic"));
    const auto first = ask(gw, body(false, "What does a CDN do?"));
    EXPECT_EQ(first.status, 200u);
    EXPECT_EQ(header(first, "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(gw, body(false, "What does a CDN do?")), "x-tokenradar-cache"), "exact");
    const auto reworded = ask(gw, body(false, "what does a cdn do"));
    EXPECT_EQ(reworded.status, 200u);
    EXPECT_EQ(header(reworded, "x-tokenradar-cache"), "miss");
    EXPECT_EQ(upstream.received_bodies().size(), 2u);
    std::size_t refused = 0;
    for (const auto& r : gw.records().wait_for(5)) {
        if (r.labels.task == "embeddings") {
            ++refused;
            EXPECT_EQ(r.status, RequestStatus::http(400));
        }
    }
    EXPECT_EQ(refused, 2u);  // the two misses asked; the exact hit never embeds
}

TEST(GatewayCache, TwoGatewaysShareAnswersThroughRedis) {
    if (!testing::RedisServer::available()) GTEST_SKIP() << testing::RedisServer::skip_reason();
    testing::RedisServer redis;
    ScriptedServer upstream(three_chunks());
    const std::string shared = "[cache]\nredis = \"" + redis.url() + "\"\n";
    GatewayFixture a(shared + config(upstream));
    GatewayFixture b(shared + config(upstream));
    EXPECT_EQ(header(ask(a, body(true)), "x-tokenradar-cache"), "miss");
    // The write to Redis leaves after the answer: give it a moment.
    testing::Fetched from_b;
    for (int i = 0; i < 50; ++i) {
        from_b = ask(b, body(true));
        if (header(from_b, "x-tokenradar-cache") == "exact") break;
        std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_EQ(header(from_b, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(contents(from_b.body), (std::vector<std::string>{"Hel", "lo, ", "world"}));
    auto m = testing::fetch(boost::beast::http::verb::get, b.url("/metrics"),
                            {{"authorization", "Bearer " + std::string(kKeyA)}});
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_shared_hits_total"), 1);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_shared_up"), 1);
}

TEST(GatewayCache, ARedisOutageIsNeverTheClientsError) {
    if (!testing::RedisServer::available()) GTEST_SKIP() << testing::RedisServer::skip_reason();
    testing::RedisServer redis;
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw("[cache]\nredis = \"" + redis.url() + "\"\n" + config(upstream));
    EXPECT_EQ(header(ask(gw, body(false, "one")), "x-tokenradar-cache"), "miss");
    redis.kill();
    // Misses and hits go on from memory, each within redis_timeout (50 ms) of its usual time:
    // the bound only catches a request left waiting on the dead connection (a TCP timeout
    // is minutes); 2 s was missed once at 2.05 s with the machine at load 8.
    const auto t0 = std::chrono::steady_clock::now();
    const auto miss = ask(gw, body(false, "two"));
    EXPECT_EQ(miss.status, 200u) << miss.body;
    EXPECT_EQ(header(miss, "x-tokenradar-cache"), "miss");
    EXPECT_EQ(header(ask(gw, body(false, "two")), "x-tokenradar-cache"), "exact");
    EXPECT_EQ(header(ask(gw, body(false, "one")), "x-tokenradar-cache"), "exact");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    auto m = testing::fetch(boost::beast::http::verb::get, gw.url("/metrics"),
                            {{"authorization", "Bearer " + std::string(kKeyA)}});
    EXPECT_GE(testing::metric_value(m.body, "tokenradar_cache_shared_errors_total"), 1);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_shared_up"), 0);
}

// config() with the store at `store` (the local shared tier goes beside it).
std::string with_store(std::string toml, const std::string& store) {
    const std::string none = "[store]\npath = \"\"";
    return toml.replace(toml.find(none), none.size(), "[store]\npath = \"" + store + "\"");
}

TEST(GatewayCache, AnAnswerInTheLocalFileOutlivesARestart) {
    ScriptedServer upstream(three_chunks());
    // A directory of its own: the store, its lock and the cache file beside it.
    const testing::TempPath dir("cache_local", "");
    std::filesystem::create_directories(dir.path());
    const std::string store = dir.path() + "/tokenradar.db";
    const std::string cache_file = dir.path() + "/tokenradar.cache.db";
    const std::string toml = with_store(config(upstream), store);
    const testing::HeaderPairs key = {{"authorization", "Bearer " + std::string(kKeyA)}};
    {
        testing::ServiceFixture first(toml);
        const auto miss = testing::post_json(first.url("/v1/chat/completions"), body(true), key);
        EXPECT_EQ(header(miss, "x-tokenradar-cache"), "miss");
        first.stop();  // the write to the file is done when stop() returns
    }
    ASSERT_TRUE(std::filesystem::exists(cache_file)) << cache_file;
    testing::ServiceFixture second(toml);
    const auto hit = testing::post_json(second.url("/v1/chat/completions"), body(true), key);
    EXPECT_EQ(header(hit, "x-tokenradar-cache"), "exact");
    EXPECT_EQ(contents(hit.body), (std::vector<std::string>{"Hel", "lo, ", "world"}));
    EXPECT_EQ(upstream.received_bodies().size(), 1u);  // not asked again
    const auto stats =
        testing::fetch(boost::beast::http::verb::get, second.url("/api/v1/gateway/cache"));
    ASSERT_EQ(stats.status, 200u) << stats.body;
    const auto shared = json::parse(stats.body).at("shared").as_object();
    EXPECT_EQ(shared.at("kind").as_string(), "local");
    EXPECT_EQ(shared.at("hits").to_number<std::int64_t>(), 1);
    EXPECT_EQ(shared.at("up").as_bool(), true);
    const auto m = testing::fetch(boost::beast::http::verb::get, second.url("/metrics"), key);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_shared_hits_total"), 1);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_shared_up"), 1);
    EXPECT_EQ(testing::metric_value(m.body, "tokenradar_cache_local_dropped_writes_total"), 0);
}

TEST(GatewayCache, ALoweredTtlAppliesToAnswersTheLocalFileKeeps) {
    ScriptedServer upstream(three_chunks());
    const testing::TempPath dir("cache_local", "");
    std::filesystem::create_directories(dir.path());
    const std::string store = dir.path() + "/tokenradar.db";
    const testing::HeaderPairs key = {{"authorization", "Bearer " + std::string(kKeyA)}};
    {
        testing::ServiceFixture first(with_store(config(upstream), store));
        EXPECT_EQ(header(testing::post_json(first.url("/v1/chat/completions"), body(true), key),
                         "x-tokenradar-cache"),
                  "miss");
        first.stop();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    testing::ServiceFixture second(with_store(config(upstream, "cache_ttl = \"1s\"\n"), store));
    const auto again = testing::post_json(second.url("/v1/chat/completions"), body(true), key);
    EXPECT_EQ(header(again, "x-tokenradar-cache"), "miss");
    EXPECT_EQ(upstream.received_bodies().size(), 2u);
}

TEST(GatewayCache, ALocalFileThatCannotBeOpenedIsAnErrorAtStartNamingIt) {
    ScriptedServer upstream(whole_answer());
    const std::string missing_dir =
        testing::unique_temp_path("cache_local", "").string() + "/no/such/dir/x.cache.db";
    try {
        testing::ServiceFixture service("[cache]\nlocal = \"" + missing_dir + "\"\n" +
                                        config(upstream));
        ADD_FAILURE() << "the service started";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(missing_dir));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("cache.local"));
    }
    // A file of something else is refused too, and left as it was.
    const testing::TempPath text("cache_local", ".txt");
    text.write("not a database, not a cache\n");
    try {
        testing::ServiceFixture service("[cache]\nlocal = \"" + text.path() + "\"\n" +
                                        config(upstream));
        ADD_FAILURE() << "the service started";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(text.path()));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("not a TokenRadar cache file"));
    }
}

TEST(GatewayCache, ALocalFileAndRedisTogetherAreAConfigError) {
    ScriptedServer upstream(whole_answer());
    try {
        (void)testing::serve_config(
            "[cache]\nredis = \"redis://127.0.0.1:1\"\nlocal = \"/tmp/x.cache.db\"\n" +
            config(upstream));
        ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("test.toml"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("cache.local"));
        EXPECT_THAT(e.what(), ::testing::HasSubstr("choose one shared tier"));
    }
    // "auto" with Redis is Redis; "auto" without a store is no shared tier at all.
    EXPECT_TRUE(
        testing::serve_config("[cache]\nredis = \"redis://127.0.0.1:1\"\n" + config(upstream))
            .gateway.cache.local_path.empty());
    EXPECT_TRUE(testing::serve_config(config(upstream)).gateway.cache.local_path.empty());
    const auto beside = testing::serve_config(with_store(config(upstream), "/data/tokenradar.db"));
    EXPECT_EQ(beside.gateway.cache.local_path, "/data/tokenradar.cache.db");
    EXPECT_THAT(serve::describe(beside),
                ::testing::HasSubstr("shared local file /data/tokenradar.cache.db"));
    EXPECT_TRUE(testing::serve_config("[cache]\nlocal = \"off\"\n" +
                                      with_store(config(upstream), "/data/tokenradar.db"))
                    .gateway.cache.local_path.empty());
}

}  // namespace
}  // namespace tokenradar::gateway
