// Virtual keys end to end (README "Keys, limits and budgets"): the admin API creates, rotates
// and revokes keys in a real SQLite registry; a client uses them against a scripted upstream
// whose every answer costs 7 tokens; limits are shared by two gateways through a real
// redis-server, and survive its death on each node's own buckets.

#include "../../support/gateway_fixture.hpp"
#include "../../support/redis_server.hpp"
#include "../../support/scripted_server.hpp"
#include "../../support/temp_path.hpp"

#include <tokenradar/keys/sqlite_key_registry.hpp>
#include <tokenradar/net/api_keys.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <set>
#include <thread>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using std::chrono::milliseconds;
using testing::Fetched;
using testing::GatewayFixture;
using testing::ScriptedServer;

constexpr std::string_view kAdminKey = "tr-admin-secret";
constexpr std::string_view kConfigKey = "tr-config-client";

// 5 prompt + 2 output tokens per answer.
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

// `registry`: the key registry's file ("" = none); the fixture does not open it (the hooks
// hand it over), serve would.
std::string config(const ScriptedServer& upstream, const std::string& registry,
                   std::string_view extra = "", bool admin = true) {
    std::string auth = "[auth]\nrefresh = \"200ms\"\n" +
                       (registry.empty() ? std::string() : "registry = \"" + registry + "\"\n") +
                       "[[auth.keys]]\nname = \"static\"\nsha256 = \"" +
                       net::hash_api_key(kConfigKey) + "\"\n";
    if (admin) {
        auth += "[[auth.admin_keys]]\nname = \"ops\"\nsha256 = \"" + net::hash_api_key(kAdminKey) +
                "\"\n";
    }
    return auth + std::string(extra) + R"(
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
[[models]]
name = "other"
upstreams = ["up/up-model"]
)";
}

// A registry file and the hooks that hand it to a gateway (each gateway opens its own
// connection, as nodes on one host do).
struct Registry {
    testing::TempPath path{"keys_registry", ".db"};
    GatewayHooks hooks() const {
        GatewayHooks h;
        auto opened = keys::SqliteKeyRegistry::open(path.path());
        EXPECT_TRUE(opened) << opened.error().message;
        h.key_registry = std::move(*opened);
        return h;
    }
};

Fetched admin(const GatewayFixture& gw, http::verb method, const std::string& path,
              std::string body = {}, std::string_view key = kAdminKey) {
    testing::HeaderPairs headers{{"authorization", "Bearer " + std::string(key)}};
    if (!body.empty()) headers.emplace_back("content-type", "application/json");
    return testing::fetch(method, gw.url(path), std::move(headers), std::move(body));
}

// Creates a key; returns {id, key}.
std::pair<std::string, std::string> create(const GatewayFixture& gw, const std::string& spec) {
    const Fetched f = admin(gw, http::verb::post, "/admin/v1/keys", spec);
    EXPECT_EQ(f.status, 201U) << f.body;
    const auto o = json::parse(f.body).as_object();
    return {std::string(o.at("id").as_string()), std::string(o.at("key").as_string())};
}

Fetched ask(const GatewayFixture& gw, std::string_view key, std::string_view model = "m") {
    return testing::post_json(
        gw.url("/v1/chat/completions"),
        R"({"model":")" + std::string(model) + R"(","messages":[{"role":"user","content":"hi"}]})",
        {{"authorization", "Bearer " + std::string(key)}});
}

std::string header(const Fetched& f, std::string_view name) {
    auto it = f.headers.find(name);
    return it == f.headers.end() ? std::string() : std::string(it->value());
}

json::object error_of(const Fetched& f) {
    return json::parse(f.body).as_object().at("error").as_object();
}

std::int64_t metric(const GatewayFixture& gw, std::string_view series) {
    const Fetched m = testing::fetch(http::verb::get, gw.url("/metrics"),
                                     {{"authorization", "Bearer " + std::string(kConfigKey)}});
    return testing::metric_value(m.body, series);
}

TEST(GatewayKeys, TheAdminApiTakesOnlyAnAdminKey) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/keys", {}, "").status, 401U);
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/keys", {}, "wrong").status, 401U);
    // A client key is never an admin key.
    const Fetched by_client = admin(gw, http::verb::get, "/admin/v1/keys", {}, kConfigKey);
    EXPECT_EQ(by_client.status, 401U);
    EXPECT_EQ(header(by_client, "www-authenticate"), "Bearer realm=\"tokenradar\"");
    const Fetched create_by_client =
        admin(gw, http::verb::post, "/admin/v1/keys", R"({"name":"x"})", kConfigKey);
    EXPECT_EQ(create_by_client.status, 401U);
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/keys").status, 200U);
    // Bodies are parsed strictly and bounded.
    const Fetched typo = admin(gw, http::verb::post, "/admin/v1/keys", R"({"name":"a","rmp":1})");
    EXPECT_EQ(typo.status, 400U);
    EXPECT_NE(std::string(error_of(typo).at("message").as_string()).find("rmp: unknown field"),
              std::string::npos);
    const Fetched unknown_model =
        admin(gw, http::verb::post, "/admin/v1/keys", R"({"name":"a","models":["nope"]})");
    EXPECT_EQ(unknown_model.status, 400U) << unknown_model.body;
    const Fetched huge = admin(gw, http::verb::post, "/admin/v1/keys",
                               R"({"name":"a","x":")" + std::string(20'000, 'a') + "\"}");
    EXPECT_EQ(huge.status, 413U);
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/keys/key_0123456789abcdef/rotate").status,
              405U);
    EXPECT_EQ(admin(gw, http::verb::post, "/admin/v1/keys/key_0123456789abcdef/rotate").status,
              404U);
    EXPECT_EQ(admin(gw, http::verb::post, "/admin/v1/keys/../../x/rotate").status, 404U);
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/audit?limit=0").status, 400U);
    // Nothing was created by any of it.
    EXPECT_EQ(json::parse(admin(gw, http::verb::get, "/admin/v1/audit").body)
                  .at("data")
                  .as_array()
                  .size(),
              0U);
}

TEST(GatewayKeys, WithoutAdminKeysTheAdminApiIsOff) {
    ScriptedServer upstream(whole_answer());
    GatewayFixture gw(config(upstream, "", "", false));
    EXPECT_EQ(admin(gw, http::verb::get, "/admin/v1/keys").status, 404U);
}

TEST(GatewayKeys, CreateUseRotateRevokeAndTheAuditLog) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] = create(gw, R"({"name":"team-a"})");
    const Fetched used = ask(gw, key);
    EXPECT_EQ(used.status, 200U) << used.body;
    // The configuration's key works beside the virtual ones.
    EXPECT_EQ(ask(gw, kConfigKey).status, 200U);

    const Fetched rotated = admin(gw, http::verb::post, "/admin/v1/keys/" + id + "/rotate");
    ASSERT_EQ(rotated.status, 200U) << rotated.body;
    const std::string fresh(json::parse(rotated.body).at("key").as_string());
    EXPECT_NE(fresh, key);
    EXPECT_EQ(ask(gw, key).status, 401U);  // the old key stops at once on this node
    EXPECT_EQ(ask(gw, fresh).status, 200U);

    const Fetched revoked = admin(gw, http::verb::delete_, "/admin/v1/keys/" + id);
    ASSERT_EQ(revoked.status, 200U) << revoked.body;
    EXPECT_FALSE(json::parse(revoked.body).at("revoked_at").is_null());
    EXPECT_EQ(ask(gw, fresh).status, 401U);
    EXPECT_EQ(admin(gw, http::verb::post, "/admin/v1/keys/" + id + "/revoke").status, 404U);

    const Fetched list = admin(gw, http::verb::get, "/admin/v1/keys");
    ASSERT_EQ(list.status, 200U);
    const json::value listed = json::parse(list.body);
    const auto& k = listed.at("data").as_array().at(0).as_object();
    EXPECT_EQ(k.at("name").as_string(), "team-a");
    EXPECT_EQ(k.at("usage").at("requests").to_number<std::int64_t>(), 2);
    EXPECT_EQ(k.at("usage").at("tokens").to_number<std::int64_t>(), 14);
    const Fetched audit = admin(gw, http::verb::get, "/admin/v1/audit");
    const json::value logged = json::parse(audit.body);
    const auto& log = logged.at("data").as_array();
    ASSERT_EQ(log.size(), 3U) << audit.body;
    EXPECT_EQ(log[0].at("action").as_string(), "revoke");
    EXPECT_EQ(log[1].at("action").as_string(), "rotate");
    EXPECT_EQ(log[2].at("action").as_string(), "create");
    EXPECT_EQ(log[2].at("actor").as_string(), "ops");
    EXPECT_EQ(log[2].at("key_id").as_string(), id);
    EXPECT_EQ(log[2].at("detail").at("name").as_string(), "team-a");
    // No key, old or new, and no digest in what the admin API shows afterwards.
    for (const std::string& secret :
         {key, fresh, net::hash_api_key(key), net::hash_api_key(fresh)}) {
        EXPECT_EQ(list.body.find(secret), std::string::npos);
        EXPECT_EQ(audit.body.find(secret), std::string::npos);
    }
}

TEST(GatewayKeys, AModelTheKeyMayNotUseIs403) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] = create(gw, R"({"name":"only-m","models":["m"]})");
    EXPECT_EQ(ask(gw, key, "m").status, 200U);
    const Fetched refused = ask(gw, key, "other");
    EXPECT_EQ(refused.status, 403U);
    const auto e = error_of(refused);
    EXPECT_EQ(e.at("param").as_string(), "model");
    EXPECT_EQ(e.at("code").as_string(), "model_not_allowed");
    EXPECT_NE(std::string(e.at("message").as_string()).find("'other'"), std::string::npos);
    EXPECT_EQ(upstream.received_bodies().size(), 1U);
}

// Every record names the key its request came with (a virtual key's name, a configured key's
// name), so the dashboard and `stats --by client_key` show latency and usage per team.
TEST(GatewayKeys, RecordsCarryTheClientKeysName) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] = create(gw, R"({"name":"team-a"})");
    EXPECT_EQ(ask(gw, key).status, 200U);
    EXPECT_EQ(ask(gw, kConfigKey).status, 200U);
    const auto records = gw.records().wait_for(2);
    ASSERT_EQ(records.size(), 2U);
    std::multiset<std::string> keys;
    for (const Measurement& m : records) keys.insert(m.labels.client_key);
    EXPECT_EQ(keys, (std::multiset<std::string>{"static", "team-a"}));
}

TEST(GatewayKeys, AKeyOfNRequestsPerMinuteGetsNThen429) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] = create(gw, R"({"name":"slow","rpm":3})");
    for (int i = 0; i < 3; ++i) {
        const Fetched f = ask(gw, key);
        ASSERT_EQ(f.status, 200U) << i << f.body;
        EXPECT_EQ(header(f, "x-ratelimit-limit-requests"), "3");
        EXPECT_EQ(header(f, "x-ratelimit-remaining-requests"), std::to_string(2 - i));
    }
    const Fetched refused = ask(gw, key);
    EXPECT_EQ(refused.status, 429U);
    EXPECT_EQ(error_of(refused).at("code").as_string(), "rate_limit_exceeded");
    const int retry_after = std::stoi(header(refused, "retry-after"));
    EXPECT_GE(retry_after, 1);
    EXPECT_LE(retry_after, 20);  // one request comes back every 20 s
    EXPECT_EQ(header(refused, "x-ratelimit-remaining-requests"), "0");
    EXPECT_EQ(upstream.received_bodies().size(), 3U);
    EXPECT_EQ(metric(gw, R"(tokenradar_key_rejected_total{key="slow",reason="requests"})"), 1);
    EXPECT_EQ(metric(gw, R"(tokenradar_key_requests_total{key="slow"})"), 3);
}

TEST(GatewayKeys, TokensPerMinuteAreDebitedAfterTheAnswer) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    // 10 tokens a minute: the first answer (7) fits, the second (7 more) goes into debt, the
    // third waits for the debt to be paid.
    const auto [id, key] = create(gw, R"({"name":"few","tpm":10})");
    EXPECT_EQ(ask(gw, key).status, 200U);
    EXPECT_EQ(ask(gw, key).status, 200U);
    const Fetched refused = ask(gw, key);
    EXPECT_EQ(refused.status, 429U) << refused.body;
    EXPECT_NE(std::string(error_of(refused).at("message").as_string()).find("10 tokens per minute"),
              std::string::npos);
    EXPECT_GE(std::stoi(header(refused, "retry-after")), 20);  // 5 tokens short at 10/min
    EXPECT_EQ(metric(gw, R"(tokenradar_key_tokens_total{key="few"})"), 14);
}

TEST(GatewayKeys, ASpentBudgetIs429UntilThePeriodEnds) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] =
        create(gw, R"({"name":"capped","budget_tokens":10,"budget_period":"day"})");
    EXPECT_EQ(ask(gw, key).status, 200U);  // 7 of 10
    EXPECT_EQ(ask(gw, key).status, 200U);  // 14 of 10: an answer is never cut
    const Fetched refused = ask(gw, key);
    EXPECT_EQ(refused.status, 429U);
    EXPECT_EQ(error_of(refused).at("code").as_string(), "insufficient_quota");
    EXPECT_NE(std::string(error_of(refused).at("message").as_string()).find("14 of 10 tokens"),
              std::string::npos)
        << refused.body;
    EXPECT_GE(std::stoi(header(refused, "retry-after")), 1);
    EXPECT_LE(std::stoi(header(refused, "retry-after")), 86'400);
    EXPECT_EQ(upstream.received_bodies().size(), 2U);
    EXPECT_EQ(metric(gw, R"(tokenradar_key_period_tokens{key="capped"})"), 14);
}

// An embeddings answer's usage.prompt_tokens is recorded and charged to the key: embeddings
// spend budgets like chat does. The usage holds an object of its own, as some servers send.
TEST(GatewayKeys, EmbeddingsAreChargedTheirPromptTokens) {
    testing::Script vectors;
    vectors.content_type = "application/json";
    vectors.pieces = {{milliseconds(0),
                       R"({"object":"list","data":[{"object":"embedding","index":0,)"
                       R"("embedding":[0.1,0.2]}],"model":"up-model",)"
                       R"("usage":{"prompt_tokens":8,"prompt_tokens_details":{"cached_tokens":0},)"
                       R"("total_tokens":8}})"}};
    ScriptedServer upstream(vectors);
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] =
        create(gw, R"({"name":"vectors","budget_tokens":10,"budget_period":"day"})");
    const auto embed = [&] {
        return testing::post_json(gw.url("/v1/embeddings"), R"({"model":"m","input":"hello"})",
                                  {{"authorization", "Bearer " + key}});
    };
    const Fetched first = embed();
    EXPECT_EQ(first.status, 200U) << first.body;
    EXPECT_NE(first.body.find("\"embedding\":[0.1,0.2]"), std::string::npos) << first.body;
    EXPECT_EQ(embed().status, 200U);  // 16 of 10: an answer is never cut
    const Fetched refused = embed();
    EXPECT_EQ(refused.status, 429U) << refused.body;
    EXPECT_EQ(upstream.received_bodies().size(), 2U);
    EXPECT_EQ(metric(gw, R"(tokenradar_key_period_tokens{key="vectors"})"), 16);
    const auto records = gw.records().wait_for(2);
    ASSERT_GE(records.size(), 2U);
    EXPECT_EQ(records[0].labels.task, "embeddings");
    EXPECT_EQ(records[0].labels.client_key, "vectors");
    EXPECT_EQ(records[0].prompt_tokens, 8);
    EXPECT_FALSE(records[0].output_tokens.has_value());
}

// A legacy /v1/completions stream's usage (5 prompt + 2 output tokens) is recorded and charged
// to the key like a chat answer's: the passthrough spends budgets too.
TEST(GatewayKeys, CompletionsAreChargedTheirTokens) {
    const std::string head =
        R"(data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"up-model",)";
    ScriptedServer upstream(testing::sse_script({
        {milliseconds(0),
         head + R"("choices":[{"index":0,"text":"forty-two","finish_reason":"stop"}]})" + "\n\n"},
        {milliseconds(0), head +
                              R"("choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,)" +
                              R"("total_tokens":7}})" + "\n\n"},
        {milliseconds(0), "data: [DONE]\n\n"},
    }));
    Registry registry;
    GatewayFixture gw(config(upstream, registry.path.path()), registry.hooks());
    const auto [id, key] =
        create(gw, R"({"name":"legacy","budget_tokens":10,"budget_period":"day"})");
    const auto complete = [&] {
        return testing::post_json(gw.url("/v1/completions"),
                                  R"({"model":"m","prompt":"The answer is","stream":true,)"
                                  R"("stream_options":{"include_usage":true}})",
                                  {{"authorization", "Bearer " + key}});
    };
    const Fetched first = complete();
    EXPECT_EQ(first.status, 200U) << first.body;
    EXPECT_NE(first.body.find("forty-two"), std::string::npos) << first.body;
    EXPECT_EQ(complete().status, 200U);  // 14 of 10: an answer is never cut
    const Fetched refused = complete();
    EXPECT_EQ(refused.status, 429U) << refused.body;
    EXPECT_EQ(error_of(refused).at("code").as_string(), "insufficient_quota");
    EXPECT_EQ(upstream.received_bodies().size(), 2U);
    EXPECT_EQ(metric(gw, R"(tokenradar_key_period_tokens{key="legacy"})"), 14);
    const auto records = gw.records().wait_for(2);
    ASSERT_GE(records.size(), 2U);
    EXPECT_EQ(records[0].labels.task, "completions");
    EXPECT_EQ(records[0].labels.client_key, "legacy");
    EXPECT_EQ(records[0].prompt_tokens, 5);
    EXPECT_EQ(records[0].output_tokens, 2);
}

TEST(GatewayKeys, AnotherNodeSeesKeysAndUsageWithinTheRefresh) {
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture a(config(upstream, registry.path.path()), registry.hooks());
    // No admin API: it reads the keys another node's admin API created.
    GatewayFixture b(config(upstream, registry.path.path(), "", false), registry.hooks());
    const auto [id, key] =
        create(a, R"({"name":"shared","budget_tokens":20,"budget_period":"month"})");
    // b reads the registry every 200 ms.
    Fetched on_b;
    for (int i = 0; i < 100 && on_b.status != 200; ++i) {
        std::this_thread::sleep_for(milliseconds(20));
        on_b = ask(b, key);
    }
    EXPECT_EQ(on_b.status, 200U);
    EXPECT_EQ(ask(a, key).status, 200U);  // 14 of 20, over both nodes
    // a's usage reaches the registry, then b: within two refreshes b knows 14 were used.
    std::this_thread::sleep_for(milliseconds(700));
    EXPECT_EQ(ask(b, key).status, 200U);  // 21 of 20
    std::this_thread::sleep_for(milliseconds(700));
    EXPECT_EQ(ask(a, key).status, 429U);
    EXPECT_EQ(ask(b, key).status, 429U);
    // A revocation on a reaches b within the refresh too.
    ASSERT_EQ(admin(a, http::verb::delete_, "/admin/v1/keys/" + id).status, 200U);
    std::this_thread::sleep_for(milliseconds(700));
    EXPECT_EQ(ask(b, key).status, 401U);
}

TEST(GatewayKeys, TwoGatewaysShareOneLimitThroughRedis) {
    if (!testing::RedisServer::available()) GTEST_SKIP() << testing::RedisServer::skip_reason();
    testing::RedisServer redis;
    ScriptedServer upstream(whole_answer());
    Registry registry;
    const std::string shared = "[limits]\nredis = \"" + redis.url() + "\"\n";
    GatewayFixture a(config(upstream, registry.path.path(), shared), registry.hooks());
    GatewayFixture b(config(upstream, registry.path.path(), shared, false), registry.hooks());
    const auto [id, key] = create(a, R"({"name":"four","rpm":4})");
    Fetched probe;
    for (int i = 0; i < 100 && probe.status != 200; ++i) {  // b learns the key
        std::this_thread::sleep_for(milliseconds(20));
        probe = ask(b, key);
    }
    ASSERT_EQ(probe.status, 200U);
    int admitted = 1;
    for (int i = 0; i < 8; ++i) {
        const Fetched f = ask(i % 2 == 0 ? a : b, key);
        if (f.status == 200U)
            ++admitted;
        else
            EXPECT_EQ(f.status, 429U) << f.body;
    }
    EXPECT_EQ(admitted, 4);  // 4 in all, not 4 per node
    EXPECT_EQ(metric(a, "tokenradar_limits_redis_fallback_total"), 0);
    EXPECT_EQ(metric(b, "tokenradar_limits_redis_up"), 1);
}

TEST(GatewayKeys, WithRedisDeadEachNodeLimitsOnItsOwnBuckets) {
    if (!testing::RedisServer::available()) GTEST_SKIP() << testing::RedisServer::skip_reason();
    testing::RedisServer redis;
    ScriptedServer upstream(whole_answer());
    Registry registry;
    GatewayFixture gw(
        config(upstream, registry.path.path(), "[limits]\nredis = \"" + redis.url() + "\"\n"),
        registry.hooks());
    const auto [id, key] = create(gw, R"({"name":"five","rpm":5})");
    EXPECT_EQ(ask(gw, key).status, 200U);  // through Redis
    redis.kill();
    const auto t0 = std::chrono::steady_clock::now();
    // Served on the node's own bucket, which followed its traffic: 4 of 5 left.
    for (int i = 0; i < 4; ++i) EXPECT_EQ(ask(gw, key).status, 200U) << i;
    EXPECT_EQ(ask(gw, key).status, 429U);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_GE(metric(gw, "tokenradar_limits_redis_fallback_total"), 5);
    EXPECT_EQ(metric(gw, "tokenradar_limits_redis_up"), 0);
}

TEST(GatewayKeys, TheConfigurationSaysWhereKeysLiveAndRefusesMixUps) {
    const auto error_of = [](const std::string& toml) {
        try {
            testing::serve_config(toml);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string admin =
        "[[auth.admin_keys]]\nname = \"ops\"\nsha256 = \"" + net::hash_api_key(kAdminKey) + "\"\n";
    const std::string model = R"(
[[providers]]
name = "p"
api = "openai"
base_url = "http://127.0.0.1:9/v1"
key_env = ""
[[models]]
name = "m"
upstreams = ["p/x"]
)";
    // Admin keys need a file for the keys; "auto" puts it beside the store.
    EXPECT_NE(error_of("[store]\npath = \"\"\n[auth]\n" + admin + model).find("auth.registry"),
              std::string::npos);
    const auto beside =
        testing::serve_config("[store]\npath = \"/tmp/x/tr.db\"\n[auth]\n" + admin + model);
    EXPECT_EQ(beside.gateway.key_registry_path, "/tmp/x/tr.keys.db");
    // Beside a PostgreSQL store, "auto" is that database; a URL names another one.
    const auto in_pg = testing::serve_config(
        "[store]\nurl = \"postgresql://tr:s3cret@db.internal/tr\"\n[auth]\n" + admin + model);
    EXPECT_EQ(in_pg.gateway.key_registry_url, "postgresql://tr:s3cret@db.internal/tr");
    EXPECT_TRUE(in_pg.gateway.key_registry_path.empty());
    EXPECT_EQ(in_pg.gateway.key_registry_shown,
              "postgresql postgresql://tr:[redacted]@db.internal/tr");
    const auto elsewhere = testing::serve_config(
        "[store]\npath = \"/tmp/x/tr.db\"\n[auth]\nregistry = \"postgres://k@10.0.0.9/keys\"\n" +
        admin + model);
    EXPECT_EQ(elsewhere.gateway.key_registry_url, "postgres://k@10.0.0.9/keys");
    EXPECT_TRUE(elsewhere.gateway.key_registry_path.empty());
    EXPECT_TRUE(beside.gateway.client_keys.empty());  // every client key may be virtual
    // An admin key must not also be a client key.
    const std::string both = "[store]\npath = \"\"\n[auth]\nregistry = \"/tmp/k.db\"\n" + admin +
                             "[[auth.keys]]\nname = \"c\"\nsha256 = \"" +
                             net::hash_api_key(kAdminKey) + "\"\n" + model;
    EXPECT_NE(error_of(both).find("auth.admin_keys"), std::string::npos) << error_of(both);
    EXPECT_NE(error_of("[auth]\nrefresh = \"10ms\"\n" + admin + model).find("auth.refresh"),
              std::string::npos);
    // Limits share the cache's Redis unless [limits] says otherwise.
    const std::string cache = "[cache]\nredis = \"redis://127.0.0.1:6390\"\n";
    const std::string base = "[store]\npath = \"\"\n[auth]\nregistry = \"/tmp/k.db\"\n" + admin;
    EXPECT_EQ(testing::gateway_config(base + cache + model).limits_redis_url,
              "redis://127.0.0.1:6390");
    EXPECT_EQ(
        testing::gateway_config(base + "[limits]\nredis = \"\"\n" + cache + model).limits_redis_url,
        "");
    EXPECT_NE(error_of(base + "[limits]\nredis = \"http://x\"\n" + model).find("limits.redis"),
              std::string::npos);
}

}  // namespace
}  // namespace tokenradar::gateway
