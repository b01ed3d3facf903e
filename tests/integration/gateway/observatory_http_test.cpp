// The observatory through a real `tokenradar serve` (serve::Service in-process on port 0,
// SQLite in a temp file): POST /api/v1/measurements in each mode and body form with the
// documented answers and statuses, the query endpoints' numbers after ingestion and after
// gateway traffic, and the rollups surviving a restart. docs/observatory-api.md is the
// contract checked here.

#include "../../support/clickhouse_server.hpp"
#include "../../support/postgres_server.hpp"
#include "../../support/service_fixture.hpp"
#include "../../support/sim_fixture.hpp"
#include "../../support/store_records.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/observatory/ingest.hpp>
#include <tokenradar/serve/service.hpp>
#include <tokenradar/store/clickhouse_store.hpp>
#include <tokenradar/store/postgres_store.hpp>
#include <tokenradar/store/sqlite_store.hpp>

#include <boost/json.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::gateway {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;
using testing::Fetched;
using ::testing::HasSubstr;
using testing::HeaderPairs;
using testing::ServiceFixture;
using ::testing::StartsWith;
using testing::TempDb;

constexpr std::int64_t kMsNs = 1'000'000;
constexpr std::string_view kKeyA = "ingest-key-team-a";
constexpr std::string_view kKeyB = "ingest-key-team-b";

// `tokenradar serve`'s configuration: the store at `db`, the [observatory] table given, and
// a model whose first upstream refuses connections (port 1) and whose second is `sim_url`,
// so each gateway request is two attempts: primary (connection_error), then fallback.
std::string service_config(const std::string& db, const std::string& observatory,
                           const std::string& sim_url = "http://127.0.0.1:1") {
    return R"(
[auth]
mode = "none"
[store]
path = ")" +
           db + R"("
flush_interval = "20ms"
[dashboard]
enabled = false
)" + observatory +
           R"(
[[providers]]
name = "dead"
api = "openai"
base_url = "http://127.0.0.1:1/v1"
key_env = "TEST_UPSTREAM_KEY"
[[providers]]
name = "sim"
api = "openai"
base_url = ")" +
           sim_url + R"(/v1"
key_env = "TEST_UPSTREAM_KEY"
[[models]]
name = "fast"
upstreams = ["dead/gpt-4o", "sim/gpt-4o"]
)";
}

// [observatory] in keys mode with keys team-a and team-b; `extra` adds keys to the table.
std::string keys_mode(const std::string& extra = {}) {
    return "[observatory]\ningest = \"keys\"\ncache_ttl = \"0s\"\n" + extra +
           "[[observatory.ingest_keys]]\nname = \"team-a\"\nsha256 = \"" +
           net::hash_api_key(kKeyA) +
           "\"\n[[observatory.ingest_keys]]\nname = \"team-b\"\nsha256 = \"" +
           net::hash_api_key(kKeyB) + "\"\n";
}

// A successful streamed request as bench measures it: TTFT `ttft_ms`, then 10 more tokens
// 20 ms apart (TPOT 20 ms).
Measurement submitted(int i, double ttft_ms, std::int64_t ts_us, std::string provider = "acme") {
    Measurement m;
    m.request_id = "req-" + std::to_string(i);
    m.labels.provider = std::move(provider);
    m.labels.model = "acme-large";
    m.labels.endpoint = "api.acme.test";
    m.labels.upstream_region = "us-east";
    m.labels.client_region = "eu-west";
    m.labels.task = "chat";
    m.labels.source = "bench";
    m.labels.api = "openai";
    m.http_status = 200;
    m.ts_us = ts_us;
    const auto ttft = static_cast<std::int64_t>(ttft_ms * static_cast<double>(kMsNs));
    m.t.headers = ttft / 2;
    m.t.first_chunk = ttft;
    m.t.first_token = ttft;
    m.t.last_token = ttft + 10 * 20 * kMsNs;
    m.t.done = m.t.last_token;
    m.output_tokens = 11;
    m.output_events = 11;
    m.prompt_tokens = 100;
    return m;
}

// Records first..last-1 with TTFT 100 + 10 i ms, a second apart, ending a minute ago.
std::vector<Measurement> batch(int first, int last, std::string provider = "acme") {
    const std::int64_t now = wall_now_us();
    std::vector<Measurement> out;
    for (int i = first; i < last; ++i) {
        out.push_back(
            submitted(i, 100.0 + 10.0 * i, now - 60'000'000 - (last - i) * 1'000'000LL, provider));
    }
    return out;
}

std::string array_of(const std::vector<Measurement>& records) {
    json::array a;
    for (const auto& m : records) a.push_back(to_json(m));
    return json::serialize(a);
}

std::string ndjson_of(const std::vector<Measurement>& records) {
    std::string out;
    for (const auto& m : records) out += json::serialize(to_json(m)) + "\n";
    return out;
}

HeaderPairs bearer(std::string_view key) {
    return {{"authorization", "Bearer " + std::string(key)}};
}

Fetched post(const ServiceFixture& s, std::string body, HeaderPairs headers,
             std::string content_type = "application/json") {
    if (!content_type.empty()) headers.emplace_back("content-type", std::move(content_type));
    return testing::fetch(http::verb::post, s.url("/api/v1/measurements"), std::move(headers),
                          std::move(body));
}

Fetched get(const ServiceFixture& s, const std::string& target, HeaderPairs headers = {}) {
    return testing::fetch(http::verb::get, s.url(target), std::move(headers));
}

// The OpenAI-style error's message ("" when the body is not one).
std::string error_message(const Fetched& f) {
    boost::system::error_code ec;
    const auto v = json::parse(f.body, ec);
    if (ec || !v.is_object() || !v.as_object().contains("error")) return {};
    return std::string(v.at("error").at("message").as_string());
}

std::vector<Measurement> stored(const std::string& db) {
    auto store = store::SqliteStore::open(db);
    EXPECT_TRUE(store) << (store ? "" : store.error().message);
    if (!store) return {};
    return (*store)->select({}).value();
}

const json::object* row_of(const json::value& answer, std::string_view provider) {
    for (const auto& row : answer.at("rows").as_array()) {
        if (row.at("provider").as_string() == provider) return &row.as_object();
    }
    return nullptr;
}

double number(const json::value& v) { return v.to_number<double>(); }

// ---- ingestion --------------------------------------------------------------------------

TEST(ObservatoryIngest, ArrayNdjsonAndGzipBodiesAreStoredUnderTheKeysName) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    auto array = post(s, array_of(batch(0, 5)), bearer(kKeyA));
    EXPECT_EQ(array.status, 200u) << array.body;
    EXPECT_EQ(array.body, R"({"accepted":5,"duplicates":0,"rejected":0,"errors":[]})");
    EXPECT_EQ(array.headers[http::field::cache_control], "no-store");

    auto ndjson = post(s, ndjson_of(batch(5, 8)), bearer(kKeyA), "application/x-ndjson");
    EXPECT_EQ(ndjson.status, 200u) << ndjson.body;
    EXPECT_EQ(ndjson.body, R"({"accepted":3,"duplicates":0,"rejected":0,"errors":[]})");

    // The same records again (one new one among them): the stored ones are duplicates.
    auto again = post(s, array_of(batch(3, 9)), bearer(kKeyA));
    EXPECT_EQ(again.status, 200u) << again.body;
    EXPECT_EQ(again.body, R"({"accepted":1,"duplicates":5,"rejected":0,"errors":[]})");

    HeaderPairs gzipped = bearer(kKeyA);
    gzipped.emplace_back("content-encoding", "gzip");
    auto gz = post(s, observatory::gzip(ndjson_of(batch(9, 12))), gzipped, "application/x-ndjson");
    EXPECT_EQ(gz.status, 200u) << gz.body;
    EXPECT_EQ(gz.body, R"({"accepted":3,"duplicates":0,"rejected":0,"errors":[]})");
    auto gz_array = post(s, observatory::gzip(array_of(batch(12, 14))), gzipped);
    EXPECT_EQ(gz_array.body, R"({"accepted":2,"duplicates":0,"rejected":0,"errors":[]})");

    // Another key's records with the same request ids are that key's own, not duplicates.
    auto other = post(s, array_of(batch(0, 2)), bearer(kKeyB));
    EXPECT_EQ(other.body, R"({"accepted":2,"duplicates":0,"rejected":0,"errors":[]})");

    // The answer came after the commit: everything is in the store already.
    const auto records = stored(db.path());
    ASSERT_EQ(records.size(), 16u);
    int a = 0;
    int b = 0;
    for (const auto& m : records) {
        if (m.client_id == "key:team-a") ++a;
        if (m.client_id == "key:team-b") ++b;
        EXPECT_EQ(m.labels.source, "bench");
        EXPECT_GT(m.received_us, m.ts_us);
    }
    EXPECT_EQ(a, 14);
    EXPECT_EQ(b, 2);
    // /metrics counts them: 16 stored, 5 duplicates, 6 requests.
    const std::string metrics = get(s, "/metrics").body;
    EXPECT_THAT(metrics, HasSubstr("tokenradar_ingest_records_total{outcome=\"accepted\"} 16\n"));
    EXPECT_THAT(metrics, HasSubstr("tokenradar_ingest_records_total{outcome=\"duplicate\"} 5\n"));
    EXPECT_THAT(metrics, HasSubstr("tokenradar_ingest_requests_total{outcome=\"ok\"} 6\n"));
}

TEST(ObservatoryIngest, TenThousandRecordsInOneGzipBody) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    const std::int64_t now = wall_now_us();
    std::string body;
    for (int i = 0; i < 10'000; ++i) {
        body +=
            json::serialize(to_json(submitted(i, 200.0 + i % 100, now - 1'000'000 - i * 1000LL))) +
            "\n";
    }
    HeaderPairs headers = bearer(kKeyA);
    headers.emplace_back("content-encoding", "gzip");
    auto f = post(s, observatory::gzip(body), headers, "application/x-ndjson");
    ASSERT_EQ(f.status, 200u) << f.body.substr(0, 500);
    EXPECT_EQ(f.body, R"({"accepted":10000,"duplicates":0,"rejected":0,"errors":[]})");
    auto board = json::parse(get(s, "/api/v1/leaderboard?window=15m").body);
    ASSERT_NE(row_of(board, "acme"), nullptr);
    EXPECT_EQ(row_of(board, "acme")->at("samples").to_number<int>(), 10'000);
    // One more is over the limit and stores nothing.
    body += json::serialize(to_json(submitted(10'000, 200.0, now - 1'000'000))) + "\n";
    EXPECT_EQ(post(s, observatory::gzip(body), headers, "application/x-ndjson").status, 413u);
    EXPECT_EQ(stored(db.path()).size(), 10'000u);
}

TEST(ObservatoryIngest, KeysModeRefusesMissingAndUnknownKeys) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    auto none = post(s, array_of(batch(0, 1)), {});
    EXPECT_EQ(none.status, 401u);
    EXPECT_THAT(error_message(none), HasSubstr("expected Authorization: Bearer <ingest key>"));
    EXPECT_EQ(none.headers["www-authenticate"], "Bearer realm=\"tokenradar\"");
    auto wrong = post(s, array_of(batch(0, 1)), bearer("not-a-key"));
    EXPECT_EQ(wrong.status, 401u);
    EXPECT_THAT(error_message(wrong), HasSubstr("unknown ingest key"));
    auto basic = post(s, array_of(batch(0, 1)), {{"authorization", "Basic dGVhbS1hOng="}});
    EXPECT_EQ(basic.status, 401u);
    EXPECT_TRUE(stored(db.path()).empty());
    auto right = post(s, array_of(batch(0, 1)), bearer(kKeyB));
    EXPECT_EQ(right.status, 200u) << right.body;
    EXPECT_EQ(stored(db.path()).at(0).client_id, "key:team-b");
}

TEST(ObservatoryIngest, WholeBodyErrorsStoreNothing) {
    TempDb db;
    ServiceFixture s(
        service_config(db.path(), keys_mode("max_body_bytes = 2048\nmax_records = 2\n")));
    const HeaderPairs key = bearer(kKeyA);
    HeaderPairs gzipped = key;
    gzipped.emplace_back("content-encoding", "gzip");

    auto bad_gzip = post(s, "this is not gzip", gzipped);
    EXPECT_EQ(bad_gzip.status, 400u);
    EXPECT_THAT(error_message(bad_gzip), StartsWith("body: expected gzip data"));

    auto big = post(s, "[" + std::string(3000, ' ') + "]", key);
    EXPECT_EQ(big.status, 413u);
    EXPECT_EQ(error_message(big), "body: expected at most 2048 bytes");
    // Small on the wire, too big inflated.
    auto bomb = post(s, observatory::gzip("[" + std::string(100'000, ' ') + "]"), gzipped);
    EXPECT_EQ(bomb.status, 413u) << bomb.body;

    auto many = post(s, "[{},{},{}]", key);
    EXPECT_EQ(many.status, 413u);
    EXPECT_THAT(error_message(many), HasSubstr("expected at most 2 records"));
    auto many_lines = post(s, "{}\n{}\n{}\n", key, "application/x-ndjson");
    EXPECT_EQ(many_lines.status, 413u);

    auto text = post(s, "[]", key, "text/plain");
    EXPECT_EQ(text.status, 400u);
    EXPECT_THAT(error_message(text), StartsWith("content-type: expected application/json"));
    HeaderPairs brotli = key;
    brotli.emplace_back("content-encoding", "br");
    auto br = post(s, "[]", brotli);
    EXPECT_EQ(br.status, 400u);
    EXPECT_EQ(error_message(br), "content-encoding: expected gzip or none, got 'br'");

    auto not_json = post(s, "{\"a\": 1}", key);  // an object, not an array
    EXPECT_EQ(not_json.status, 400u);
    auto bad_line = post(s, "{}\nnot json\n", key, "application/x-ndjson");
    EXPECT_EQ(bad_line.status, 400u);
    EXPECT_THAT(error_message(bad_line), HasSubstr("line 2"));

    EXPECT_TRUE(stored(db.path()).empty());
    // The limits leave ordinary bodies alone: one record fits in 2048 bytes.
    EXPECT_EQ(post(s, array_of(batch(0, 1)), key).status, 200u);
}

TEST(ObservatoryIngest, RejectedRecordsAreListedWithIndexFieldAndMessage) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    auto records = batch(0, 5);
    records[1].ts_us = wall_now_us() + 3'600'000'000LL;  // an hour in the future
    records[3].labels.model = std::string("gpt\x01x");
    auto f = post(s, array_of(records), bearer(kKeyA));
    ASSERT_EQ(f.status, 200u) << f.body;
    const auto answer = json::parse(f.body);
    EXPECT_EQ(answer.at("accepted").to_number<int>(), 3);
    EXPECT_EQ(answer.at("duplicates").to_number<int>(), 0);
    EXPECT_EQ(answer.at("rejected").to_number<int>(), 2);
    const auto& errors = answer.at("errors").as_array();
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].at("index").to_number<int>(), 1);
    EXPECT_EQ(errors[0].at("field").as_string(), "ts_us");
    EXPECT_THAT(std::string(errors[0].at("message").as_string()),
                StartsWith("expected at most 5m after the server's clock, got "));
    EXPECT_EQ(errors[1].at("index").to_number<int>(), 3);
    EXPECT_EQ(errors[1].at("field").as_string(), "model");
    EXPECT_EQ(errors[1].at("message").as_string(),
              "expected no control characters, got U+0001 at offset 3");
    // The others are stored; the NDJSON form counts the same indexes (blank lines skipped).
    EXPECT_EQ(stored(db.path()).size(), 3u);
    auto lines = post(s, "\n" + ndjson_of({records[1]}) + "\n" + ndjson_of({records[0]}),
                      bearer(kKeyB), "application/x-ndjson");
    ASSERT_EQ(lines.status, 200u) << lines.body;
    const auto by_lines = json::parse(lines.body);
    EXPECT_EQ(by_lines.at("accepted").to_number<int>(), 1);
    ASSERT_EQ(by_lines.at("errors").as_array().size(), 1u);
    EXPECT_EQ(by_lines.at("errors").at(0).at("index").to_number<int>(), 0);
    EXPECT_EQ(by_lines.at("errors").at(0).at("field").as_string(), "ts_us");
}

TEST(ObservatoryIngest, OffModeIs404AndGetIs405) {
    TempDb db;
    ServiceFixture off(service_config(db.path(), "[observatory]\ningest = \"off\"\n"));
    auto refused = post(off, array_of(batch(0, 1)), bearer(kKeyA));
    EXPECT_EQ(refused.status, 404u);
    EXPECT_THAT(error_message(refused), HasSubstr("ingestion is off"));
    auto wrong_method = get(off, "/api/v1/measurements");
    EXPECT_EQ(wrong_method.status, 405u);
    EXPECT_EQ(wrong_method.headers[http::field::allow], "POST");
    EXPECT_TRUE(stored(db.path()).empty());
}

TEST(ObservatoryIngest, PublicModeLimitsEachAddressAfterItsBurst) {
    TempDb db;
    ServiceFixture s(service_config(
        db.path(), "[observatory]\ningest = \"public\"\npublic_rate = 0.01\npublic_burst = 2\n"));
    EXPECT_EQ(post(s, array_of(batch(0, 2)), {}).status, 200u);
    // No trusted_proxies: a client's X-Forwarded-For changes nothing.
    EXPECT_EQ(post(s, array_of(batch(2, 4)), {{"x-forwarded-for", "198.51.100.9"}}).status, 200u);
    auto limited = post(s, array_of(batch(4, 6)), {});
    EXPECT_EQ(limited.status, 429u);
    EXPECT_THAT(error_message(limited), HasSubstr("requests/s from one address"));
    // One token every 100 s: the wait is most of that.
    const int retry_after = std::stoi(std::string(limited.headers[http::field::retry_after]));
    EXPECT_GE(retry_after, 90);
    EXPECT_LE(retry_after, 100);
    const auto records = stored(db.path());
    ASSERT_EQ(records.size(), 4u);
    for (const auto& m : records) EXPECT_EQ(m.client_id, "ip:127.0.0.1");
}

TEST(ObservatoryIngest, BehindATrustedProxyEachForwardedClientIsLimitedAndNamedApart) {
    TempDb db;
    ServiceFixture s(service_config(db.path(),
                                    "[observatory]\ningest = \"public\"\npublic_rate = 0.01\n"
                                    "public_burst = 1\ntrusted_proxies = [\"127.0.0.0/8\"]\n"));
    const auto via_proxy = [](const char* forwarded_for) {
        return HeaderPairs{{"x-forwarded-for", forwarded_for}};
    };
    EXPECT_EQ(post(s, array_of(batch(0, 2)), via_proxy("6.6.6.6, 198.51.100.1")).status, 200u);
    EXPECT_EQ(post(s, array_of(batch(2, 4)), via_proxy("198.51.100.1")).status, 429u);
    EXPECT_EQ(post(s, array_of(batch(4, 6)), via_proxy("198.51.100.2")).status, 200u);
    EXPECT_EQ(post(s, array_of(batch(6, 8)), {}).status, 200u);  // the proxy's own request
    std::multiset<std::string> clients;
    for (const auto& m : stored(db.path())) clients.insert(m.client_id);
    EXPECT_EQ(clients, (std::multiset<std::string>{"ip:127.0.0.1", "ip:127.0.0.1",
                                                   "ip:198.51.100.1", "ip:198.51.100.1",
                                                   "ip:198.51.100.2", "ip:198.51.100.2"}));
}

// ---- queries ------------------------------------------------------------------------------

TEST(ObservatoryQueries, LeaderboardGivesTheSubmittedRecordsNumbers) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    // TTFT 100, 110, ..., 500 ms: 41 samples, p50 (lower nearest rank, floor(0.5 * 40)) is
    // the 21st, 300 ms; p95 the 39th, 480 ms.
    ASSERT_EQ(post(s, array_of(batch(0, 41)), bearer(kKeyA)).status, 200u);
    // Two failures of another provider, too few for numbers.
    auto failed = batch(0, 2, "flaky");
    for (auto& m : failed) {
        m.request_id += "-flaky";  // team-a's req-0 and req-1 are stored already
        m.status = RequestStatus::http(500);
        m.http_status = 500;
        m.t = {};
        m.output_tokens.reset();
        m.output_events = 0;
    }
    ASSERT_EQ(post(s, array_of(failed), bearer(kKeyA)).status, 200u);

    auto f = get(s, "/api/v1/leaderboard");
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(f.headers[http::field::cache_control], "public, max-age=10");
    EXPECT_EQ(f.headers["x-content-type-options"], "nosniff");
    const auto answer = json::parse(f.body);
    EXPECT_EQ(answer.at("window").as_string(), "24h");
    EXPECT_EQ(answer.at("min_samples").to_number<int>(), 20);
    const json::object* acme = row_of(answer, "acme");
    ASSERT_NE(acme, nullptr) << f.body;
    EXPECT_EQ(acme->at("model").as_string(), "acme-large");
    EXPECT_EQ(acme->at("samples").to_number<int>(), 41);
    EXPECT_EQ(acme->at("errors").to_number<int>(), 0);
    EXPECT_FALSE(acme->at("insufficient").as_bool());
    const auto& ttft = acme->at("ttft_ms");
    EXPECT_EQ(ttft.at("samples").to_number<int>(), 41);
    EXPECT_NEAR(number(ttft.at("p50")), 300.0, 3.0);
    EXPECT_NEAR(number(ttft.at("p95")), 480.0, 4.8);
    EXPECT_NEAR(number(acme->at("tpot_ms").at("p50")), 20.0, 0.2);
    EXPECT_NEAR(number(acme->at("decode_tps_p50")), 50.0, 0.5);
    const json::object* flaky = row_of(answer, "flaky");
    ASSERT_NE(flaky, nullptr) << f.body;
    EXPECT_EQ(flaky->at("samples").to_number<int>(), 2);
    EXPECT_EQ(flaky->at("errors").to_number<int>(), 2);
    EXPECT_TRUE(flaky->at("insufficient").as_bool());
    EXPECT_TRUE(flaky->at("ttft_ms").at("p50").is_null());
    // Insufficient rows come last.
    EXPECT_EQ(answer.at("rows").as_array().back().at("provider").as_string(), "flaky");

    // A short window reads minute buckets: the same numbers.
    auto recent = json::parse(get(s, "/api/v1/leaderboard?window=15m").body);
    EXPECT_EQ(row_of(recent, "acme")->at("samples").to_number<int>(), 41);
    EXPECT_EQ(number(row_of(recent, "acme")->at("ttft_ms").at("p50")), number(ttft.at("p50")));
    // Filters and the other endpoints see the same records.
    auto labels = json::parse(get(s, "/api/v1/labels?window=1h").body);
    EXPECT_EQ(json::serialize(labels.at("labels").at("provider")), R"(["acme","flaky"])");
    auto dist = json::parse(get(s, "/api/v1/distribution?provider=acme&points=5").body);
    EXPECT_EQ(dist.at("series").as_array().at(0).at("samples").to_number<int>(), 41);
}

TEST(ObservatoryQueries, EtagsRevalidateAndBadRequestsNameTheParameter) {
    TempDb db;
    ServiceFixture s(service_config(db.path(), keys_mode()));
    ASSERT_EQ(post(s, array_of(batch(0, 25)), bearer(kKeyA)).status, 200u);
    auto first = get(s, "/api/v1/leaderboard?window=1h");
    ASSERT_EQ(first.status, 200u);
    const std::string etag(first.headers[http::field::etag]);
    ASSERT_FALSE(etag.empty());
    auto again = get(s, "/api/v1/leaderboard?window=1h", {{"if-none-match", etag}});
    EXPECT_EQ(again.status, 304u);
    EXPECT_TRUE(again.body.empty());
    EXPECT_EQ(again.headers[http::field::etag], etag);
    // HEAD: the same head, no body.
    auto head = testing::fetch(http::verb::head, s.url("/api/v1/leaderboard?window=1h"));
    EXPECT_EQ(head.status, 200u);
    EXPECT_TRUE(head.body.empty());
    EXPECT_EQ(head.headers[http::field::etag], etag);
    EXPECT_EQ(
        get(s, "/api/v1/leaderboard?window=1h", {{"if-none-match", "\"other\", " + etag}}).status,
        304u);
    // New data, new answer (cache_ttl = 0s here).
    ASSERT_EQ(post(s, array_of(batch(25, 26)), bearer(kKeyA)).status, 200u);
    auto changed = get(s, "/api/v1/leaderboard?window=1h", {{"if-none-match", etag}});
    EXPECT_EQ(changed.status, 200u);
    EXPECT_NE(std::string(changed.headers[http::field::etag]), etag);

    auto bad_window = get(s, "/api/v1/leaderboard?window=forever");
    EXPECT_EQ(bad_window.status, 400u);
    EXPECT_EQ(json::parse(bad_window.body).at("error").at("param").as_string(), "window");
    EXPECT_EQ(bad_window.headers[http::field::cache_control], "no-store");
    auto foreign = get(s, "/api/v1/leaderboard?tz=UTC");
    EXPECT_EQ(foreign.status, 400u);
    EXPECT_EQ(json::parse(foreign.body).at("error").at("param").as_string(), "tz");
    auto bad_q = get(s, "/api/v1/heatmap?q=1.5");
    EXPECT_EQ(bad_q.status, 400u);
    EXPECT_EQ(json::parse(bad_q.body).at("error").at("param").as_string(), "q");
    EXPECT_EQ(get(s, "/api/v1/nothing").status, 404u);

    auto posted = testing::post_json(s.url("/api/v1/leaderboard"), "{}");
    EXPECT_EQ(posted.status, 405u);
    EXPECT_EQ(posted.headers[http::field::allow], "GET, HEAD");
}

TEST(ObservatoryQueries, StatusCsvAndBadgesAreServedWithoutAClientKey) {
    TempDb db;
    // Client keys required for the gateway's own routes: the observatory's reads and badges
    // stay public.
    std::string config = service_config(db.path(), keys_mode());
    const std::string none = "[auth]\nmode = \"none\"\n";
    config.replace(config.find(none), none.size(),
                   "[auth]\nmode = \"keys\"\n[[auth.keys]]\nname = \"client\"\nsha256 = \"" +
                       net::hash_api_key("tr-client-key") + "\"\n");
    ServiceFixture s(config);
    ASSERT_EQ(post(s, array_of(batch(0, 41)), bearer(kKeyA)).status, 200u);
    EXPECT_EQ(get(s, "/v1/models").status, 401u);  // auth is on

    const auto status = get(s, "/api/v1/status?provider=acme");
    ASSERT_EQ(status.status, 200u) << status.body;
    const auto doc = json::parse(status.body);
    EXPECT_FALSE(doc.at("incidents_enabled").as_bool());
    const auto& model = doc.at("models").as_array().at(0);
    EXPECT_EQ(model.at("model").as_string(), "acme-large");
    EXPECT_EQ(model.at("buckets").as_array().size(), 24u);
    EXPECT_EQ(model.at("state").as_string(), "green");  // 41 samples, no baseline, no errors

    const auto csv = get(s, "/api/v1/leaderboard?format=csv");
    ASSERT_EQ(csv.status, 200u) << csv.body;
    EXPECT_EQ(csv.headers[http::field::content_type], "text/csv; charset=utf-8");
    EXPECT_EQ(csv.headers[http::field::content_disposition],
              "attachment; filename=\"tokenradar-leaderboard-24h.csv\"");
    EXPECT_THAT(csv.body, ::testing::StartsWith("provider,model,samples,errors,"));
    EXPECT_THAT(csv.body, ::testing::HasSubstr("\r\nacme,acme-large,41,0,0,false,"));

    const auto badge = get(s, "/badge/acme/acme-large/ttft_p50.svg");
    ASSERT_EQ(badge.status, 200u) << badge.body;
    EXPECT_EQ(badge.headers[http::field::content_type], "image/svg+xml; charset=utf-8");
    EXPECT_EQ(badge.headers[http::field::cache_control], "public, max-age=60");
    EXPECT_THAT(badge.body, ::testing::HasSubstr("<title>acme-large TTFT p50: 30"));
    const std::string etag(badge.headers[http::field::etag]);
    ASSERT_FALSE(etag.empty());
    const auto again = get(s, "/badge/acme/acme-large/ttft_p50.svg", {{"if-none-match", etag}});
    EXPECT_EQ(again.status, 304u);
    const auto unknown = get(s, "/badge/acme/acme-large/p42.svg");
    EXPECT_EQ(unknown.status, 404u);
    EXPECT_EQ(unknown.headers[http::field::content_type], "image/svg+xml; charset=utf-8");
}

TEST(ObservatoryQueries, GatewayTrafficShowsInTheGatewayEndpoint) {
    testing::SimFixture sim("instant");
    TempDb db;
    ServiceFixture s(service_config(
        db.path(), "[observatory]\nmin_samples = 1\ncache_ttl = \"0s\"\n", sim.base_url()));
    for (bool stream : {true, false, true}) {
        const std::string body = json::serialize(json::object{
            {"model", "fast"},
            {"stream", stream},
            {"max_tokens", 5},
            {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}});
        auto f = testing::post_json(s.url("/v1/chat/completions"), body);
        ASSERT_EQ(f.status, 200u) << f.body;
    }
    // Records reach the store (and the rollups) at the writer's next flush (20 ms here).
    json::value answer;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        auto f = get(s, "/api/v1/gateway?window=15m");
        ASSERT_EQ(f.status, 200u) << f.body;
        answer = json::parse(f.body);
        if (answer.at("attempts").to_number<int>() >= 6) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    // Three client requests, each a refused primary then a fallback to the sim.
    EXPECT_EQ(answer.at("requests").to_number<int>(), 3) << answer;
    EXPECT_EQ(answer.at("attempts").to_number<int>(), 6) << answer;
    EXPECT_EQ(answer.at("route").at("primary").to_number<int>(), 3);
    EXPECT_EQ(answer.at("route").at("fallback").to_number<int>(), 3);
    EXPECT_EQ(answer.at("route").at("hedge").to_number<int>(), 0);
    EXPECT_EQ(answer.at("status").at("ok").to_number<int>(), 3);
    EXPECT_EQ(answer.at("status").at("connection_error").to_number<int>(), 3) << answer;
    EXPECT_EQ(answer.at("errors").to_number<int>(), 3);
    int cache = 0;
    for (const auto& [name, count] : answer.at("cache").as_object())
        cache += count.to_number<int>();
    EXPECT_EQ(cache, 6);
    // Overhead is timed on the successful attempts.
    const auto& overhead = answer.at("overhead_ms");
    EXPECT_EQ(overhead.at("samples").to_number<int>(), 3);
    EXPECT_GT(number(overhead.at("p50")), 0.0);
    EXPECT_LT(number(overhead.at("p99")), 1000.0);

    // A source filter without gateway gives zeros.
    auto bench_only = json::parse(get(s, "/api/v1/gateway?window=15m&source=bench").body);
    EXPECT_EQ(bench_only.at("attempts").to_number<int>(), 0);
    // The leaderboard has the sim's row: three successes.
    auto board = json::parse(get(s, "/api/v1/leaderboard?window=15m").body);
    const json::object* sim_row = row_of(board, "sim");
    ASSERT_NE(sim_row, nullptr) << board;
    EXPECT_EQ(sim_row->at("samples").to_number<int>(), 3);
    // Non-streamed requests have no first token of their own (metrics.md): two TTFTs.
    EXPECT_EQ(sim_row->at("ttft_ms").at("samples").to_number<int>(), 2);
    EXPECT_EQ(sim_row->at("e2e_ms").at("samples").to_number<int>(), 3);
}

TEST(ObservatoryQueries, DisabledObservatoryAnswers404) {
    TempDb db;
    {
        // Neither queries nor ingestion: /api/v1 is not mounted at all.
        ServiceFixture s(service_config(db.path(), "[observatory]\nenabled = false\n"));
        EXPECT_EQ(get(s, "/api/v1/leaderboard").status, 404u);
        EXPECT_EQ(get(s, "/readyz").status, 200u);
    }
    // Ingestion without the query API.
    ServiceFixture s(service_config(db.path(), keys_mode("enabled = false\n")));
    auto query = get(s, "/api/v1/leaderboard");
    EXPECT_EQ(query.status, 404u);
    EXPECT_THAT(error_message(query), HasSubstr("[observatory] enabled"));
    EXPECT_EQ(get(s, "/api/v1/labels").status, 404u);
    EXPECT_EQ(post(s, array_of(batch(0, 1)), bearer(kKeyA)).status, 200u);
}

// Forged provenance: a public submitter sent source "gateway" (fallbacks, cache
// hits, errors) and the gateway page counted them as this node's.
TEST(ObservatoryIngest, APublicSubmissionSayingGatewayDoesNotChangeTheGatewayCounts) {
    testing::SimFixture sim("instant");
    TempDb db;
    ServiceFixture s(service_config(
        db.path(), "[observatory]\ningest = \"public\"\nmin_samples = 1\ncache_ttl = \"0s\"\n",
        sim.base_url()));
    const std::string chat = json::serialize(
        json::object{{"model", "fast"},
                     {"max_tokens", 5},
                     {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}});
    ASSERT_EQ(testing::post_json(s.url("/v1/chat/completions"), chat).status, 200u);
    const auto gateway_page = [&] {
        auto f = get(s, "/api/v1/gateway?window=15m");
        EXPECT_EQ(f.status, 200u) << f.body;
        json::value v = json::parse(f.body);
        v.as_object().erase("generated_at");
        return v;
    };
    // One client request: a refused primary, then the fallback (two records).
    json::value before;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        before = gateway_page();
        if (before.at("attempts").to_number<int>() >= 2) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    ASSERT_EQ(before.at("attempts").to_number<int>(), 2) << before;

    std::vector<Measurement> forged = batch(0, 10);
    for (std::size_t i = 0; i < forged.size(); ++i) {
        Measurement& m = forged[i];
        m.labels.source = "gateway";
        m.labels.route = Route::fallback;
        m.labels.cache = Cache::exact;
        m.attempt = 1 + static_cast<int>(i % 2);
        if (i % 3 == 0) {
            m.status = RequestStatus::http(500);
            m.http_status = 500;
        }
    }
    auto f = post(s, array_of(forged), {});
    ASSERT_EQ(f.status, 200u) << f.body;
    EXPECT_EQ(f.body, R"({"accepted":10,"duplicates":0,"rejected":0,"errors":[]})");
    // They are stored and rolled up, as submitted records.
    const auto rolled_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < rolled_up &&
           row_of(json::parse(get(s, "/api/v1/leaderboard?window=15m").body), "acme") == nullptr) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(gateway_page(), before);
    auto board = json::parse(get(s, "/api/v1/leaderboard?window=15m&source=submitted").body);
    ASSERT_NE(row_of(board, "acme"), nullptr) << board;
    EXPECT_EQ(row_of(board, "acme")->at("samples").to_number<int>(), 10);
    for (const auto& m : stored(db.path())) {
        if (m.client_id == "ip:127.0.0.1") {
            EXPECT_EQ(m.labels.source, "submitted");
        }
    }
}

// Label cardinality: 10 x 10,000 records with unique 100-byte model names from one
// address took the observatory to 1 GB RSS and a 52 MB leaderboard. Here 2 x 2,000 (fast).
TEST(ObservatoryIngest, UniqueLabelValuesFromOneAddressAreBoundedAndAnswersStaySmall) {
    TempDb db;
    ServiceFixture s(
        service_config(db.path(),
                       "[observatory]\ningest = \"public\"\nmin_samples = 1\ncache_ttl = \"0s\"\n"
                       "max_new_label_values = 50\n"));
    std::size_t accepted = 0;
    for (int round = 0; round < 2; ++round) {
        std::vector<Measurement> records = batch(round * 2'000, (round + 1) * 2'000);
        for (std::size_t i = 0; i < records.size(); ++i) {
            std::string name = "model-" + std::to_string(round * 2'000 + i);
            name.resize(100, 'x');
            records[i].labels.model = std::move(name);
        }
        HeaderPairs gzipped{{"content-encoding", "gzip"}};
        auto f = post(s, observatory::gzip(ndjson_of(records)), gzipped, "application/x-ndjson");
        ASSERT_EQ(f.status, 200u) << f.body.substr(0, 300);
        const auto answer = json::parse(f.body);
        accepted += answer.at("accepted").to_number<std::size_t>();
        EXPECT_EQ(answer.at("accepted").to_number<std::size_t>() +
                      answer.at("rejected").to_number<std::size_t>(),
                  2'000u);
        EXPECT_EQ(answer.at("errors").as_array().size(), 100u);  // the answer stays small too
        const auto& first = answer.at("errors").at(0);
        EXPECT_EQ(first.at("index").to_number<int>(), round == 0 ? 50 : 0);
        EXPECT_EQ(first.at("field").as_string(), "model");
        EXPECT_THAT(std::string(first.at("message").as_string()),
                    HasSubstr("this submitter added 50 new model values today"));
    }
    EXPECT_EQ(accepted, 50u);
    EXPECT_EQ(stored(db.path()).size(), 50u);
    // Values the observatory knows are still accepted from the same address.
    std::vector<Measurement> known = batch(4'000, 4'010);
    for (auto& m : known) {
        m.labels.model = "model-7";
        m.labels.model.resize(100, 'x');
    }
    auto again = post(s, array_of(known), {});
    EXPECT_EQ(again.body, R"({"accepted":10,"duplicates":0,"rejected":0,"errors":[]})");

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    json::value board;
    do {
        board = json::parse(get(s, "/api/v1/leaderboard?window=24h").body);
        if (board.at("rows").as_array().size() >= 50) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(board.at("rows").as_array().size(), 50u);
    EXPECT_FALSE(board.at("truncated").as_bool());
    auto cut = get(s, "/api/v1/leaderboard?window=24h&limit=3");
    EXPECT_LT(cut.body.size(), 5'000u);
    EXPECT_EQ(json::parse(cut.body).at("rows").as_array().size(), 3u);
    EXPECT_TRUE(json::parse(cut.body).at("truncated").as_bool());
    EXPECT_THAT(get(s, "/metrics").body,
                HasSubstr("tokenradar_ingest_label_budget_rejected_total 3950\n"));
}

// ---- restart ------------------------------------------------------------------------------

// The answer without the moment it was computed.
json::value without_time(const Fetched& f) {
    json::value v = json::parse(f.body);
    v.as_object().erase("generated_at");
    return v;
}

TEST(ObservatoryRestart, RollupsAreSavedAndLoadedAgain) {
    TempDb db;
    const std::string config = service_config(db.path(), keys_mode());
    const std::vector<std::string> targets = {"/api/v1/leaderboard",
                                              "/api/v1/leaderboard?window=15m", "/api/v1/regions",
                                              "/api/v1/distribution?points=10"};
    std::vector<json::value> before;
    std::vector<std::string> etags;
    {
        ServiceFixture s(config);
        ASSERT_TRUE(s.wait_ready());
        // Two submitters, weighted apart per hour: the restart must keep who sent what.
        ASSERT_EQ(post(s, array_of(batch(0, 41)), bearer(kKeyA)).status, 200u);
        std::vector<Measurement> slow;
        for (int i = 0; i < 9; ++i)
            slow.push_back(submitted(i, 1000.0 + i, wall_now_us() - 30'000'000));
        ASSERT_EQ(post(s, array_of(slow), bearer(kKeyB)).status, 200u);
        for (const auto& t : targets) {
            auto f = get(s, t);
            ASSERT_EQ(f.status, 200u) << t << f.body;
            before.push_back(without_time(f));
            etags.emplace_back(f.headers[http::field::etag]);
        }
        s.stop();
    }
    {
        // The stop saved every hour row with the last record's id as watermark: the next start
        // loads them instead of rolling the records up again.
        auto raw = store::SqliteStore::open(db.path()).value();
        std::size_t rows = 0;
        const auto watermark = raw->load_rollups([&](store::RollupRow&&) { ++rows; });
        ASSERT_TRUE(watermark);
        EXPECT_EQ(*watermark, raw->last_id().value());
        EXPECT_GE(rows, 2u);  // at least one hour row per submitter
    }
    ServiceFixture again(config);
    ASSERT_TRUE(again.wait_ready());
    EXPECT_TRUE(again.service().ready());
    for (std::size_t i = 0; i < targets.size(); ++i) {
        auto f = get(again, targets[i]);
        ASSERT_EQ(f.status, 200u) << targets[i];
        EXPECT_EQ(without_time(f), before[i]) << targets[i];
        EXPECT_EQ(std::string(f.headers[http::field::etag]), etags[i]) << targets[i];
    }
    const auto board = before[0];
    EXPECT_EQ(row_of(board, "acme")->at("samples").to_number<int>(), 50);
}

TEST(ObservatoryRestart, QueriesAre503UntilTheRollupsAreLoaded) {
    TempDb db;
    {
        // Records without saved rollups (another writer): the next start rolls them up.
        auto store = store::SqliteStore::open(db.path()).value();
        auto records = batch(0, 30);
        for (auto& m : records) m.client_id = "key:team-a";
        ASSERT_TRUE(store->insert(records));
    }
    // Another connection holds the write lock: loading ends by saving the rows, so it waits.
    sqlite3* lock = nullptr;
    ASSERT_EQ(sqlite3_open(db.path().c_str(), &lock), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(lock, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    ServiceFixture s(service_config(db.path(), "[observatory]\n"));
    EXPECT_EQ(get(s, "/readyz").status, 503u);
    auto early = get(s, "/api/v1/leaderboard");
    EXPECT_EQ(early.status, 503u) << early.body;
    EXPECT_EQ(early.headers[http::field::retry_after], "1");
    EXPECT_EQ(early.headers[http::field::cache_control], "no-store");
    EXPECT_THAT(error_message(early), HasSubstr("loading"));
    EXPECT_FALSE(s.service().ready());
    ASSERT_EQ(sqlite3_exec(lock, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(lock);

    ASSERT_TRUE(s.wait_ready());
    auto board = get(s, "/api/v1/leaderboard");
    ASSERT_EQ(board.status, 200u) << board.body;
    EXPECT_EQ(row_of(json::parse(board.body), "acme")->at("samples").to_number<int>(), 30);
}

// ---- store.url: PostgreSQL instead of the file ---------------------------------------------

// service_config() with `[store] url = URL` in place of the file.
std::string postgres_config(const std::string& url, const std::string& observatory) {
    std::string config = service_config("unused.db", observatory);
    const std::string path = "path = \"unused.db\"";
    return config.replace(config.find(path), path.size(), "url = \"" + url + "\"");
}

TEST(ObservatoryOnPostgres, IngestionQueriesAndRollupsSurviveARestart) {
    if (!testing::PostgresServer::available()) {
        GTEST_SKIP() << testing::PostgresServer::skip_reason();
    }
    testing::PostgresServer server;
    const std::string config = postgres_config(server.url(), keys_mode());
    json::value before;
    {
        ServiceFixture s(config);
        ASSERT_TRUE(s.wait_ready());
        auto first = post(s, array_of(batch(0, 41)), bearer(kKeyA));
        EXPECT_EQ(first.body, R"({"accepted":41,"duplicates":0,"rejected":0,"errors":[]})");
        auto again = post(s, array_of(batch(36, 42)), bearer(kKeyA));
        EXPECT_EQ(again.body, R"({"accepted":1,"duplicates":5,"rejected":0,"errors":[]})");
        auto board = get(s, "/api/v1/leaderboard");
        ASSERT_EQ(board.status, 200u) << board.body;
        before = without_time(board);
        EXPECT_EQ(row_of(before, "acme")->at("samples").to_number<int>(), 42);
        EXPECT_THAT(s.service().store_summary(), HasSubstr("postgresql://tokenradar:[redacted]@"));
        s.stop();
        EXPECT_THAT(s.service().store_summary(),
                    ::testing::Not(HasSubstr(testing::PostgresServer::kPassword)));
    }
    {
        auto raw = store::PostgresStore::open(server.url()).value();
        const auto records = raw->select({}).value();
        ASSERT_EQ(records.size(), 42u);
        EXPECT_EQ(records.front().client_id, "key:team-a");
        std::size_t rows = 0;
        const auto watermark = raw->load_rollups([&](store::RollupRow&&) { ++rows; });
        ASSERT_TRUE(watermark);
        EXPECT_EQ(*watermark, raw->last_id().value());
        EXPECT_GE(rows, 1u);
    }
    ServiceFixture restarted(config);
    ASSERT_TRUE(restarted.wait_ready());
    auto board = get(restarted, "/api/v1/leaderboard");
    ASSERT_EQ(board.status, 200u);
    EXPECT_EQ(without_time(board), before);
}

// Several gateways write into one database; the one that saves the observatory's rollups owns
// it, and a second such owner is refused at start (rollup rows of two owners would replace
// each other's hours).
TEST(ObservatoryOnPostgres, GatewaysShareADatabaseAndOneOwnsTheRollups) {
    if (!testing::PostgresServer::available()) {
        GTEST_SKIP() << testing::PostgresServer::skip_reason();
    }
    testing::PostgresServer server;
    ServiceFixture owner(postgres_config(server.url(), keys_mode()));
    ASSERT_TRUE(owner.wait_ready());
    try {
        ServiceFixture second(postgres_config(server.url(), keys_mode()));
        ADD_FAILURE() << "a second owner of the rollups started";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("test.toml: store: postgresql://tokenradar:[redacted]@"));
        EXPECT_THAT(e.what(), HasSubstr("in use by another tokenradar process"));
    }
    ServiceFixture writer(postgres_config(server.url(), "[observatory]\nenabled = false\n"));
    EXPECT_TRUE(writer.wait_ready());
    EXPECT_EQ(post(owner, array_of(batch(0, 3)), bearer(kKeyA)).status, 200u);
}

TEST(ObservatoryOnPostgres, StoreUrlIsCheckedAndShownRedacted) {
    const std::string url = "postgresql://app:s3cret@db.example:5432/tr";
    const auto c = testing::serve_config(postgres_config(url, ""));
    EXPECT_EQ(c.store.url, url);
    EXPECT_TRUE(c.store.path.empty());
    const std::string described = serve::describe(c);
    EXPECT_THAT(described, HasSubstr("store     postgresql://app:[redacted]@db.example:5432/tr"));
    EXPECT_THAT(described, ::testing::Not(HasSubstr("s3cret")));
    const auto error_of = [](const std::string& toml) -> std::string {
        try {
            (void)testing::serve_config(toml);
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "no error";
    };
    // Line 5 of the config is the [store] table's key (6 once path is put before it).
    std::string both = postgres_config(url, "");
    both.insert(both.find("url = "), "path = \"x.db\"\n");
    EXPECT_THAT(error_of(both), HasSubstr("test.toml:6: store.url: expected either path "
                                          "(SQLite) or url (PostgreSQL, ClickHouse), not both"));
    EXPECT_THAT(error_of(both), ::testing::Not(HasSubstr("s3cret")));
    const std::string mysql = error_of(postgres_config("mysql://app:s3cret@db/tr", ""));
    EXPECT_THAT(mysql, HasSubstr("test.toml:5: store.url: expected a postgresql://"));
    EXPECT_THAT(mysql, HasSubstr("mysql://app:[redacted]@db/tr"));
    EXPECT_THAT(mysql, ::testing::Not(HasSubstr("s3cret")));
}

// serve with store.url and no reachable server: a startup error naming the URL, no password.
TEST(ObservatoryOnPostgres, AnUnreachableStoreIsAStartupErrorWithoutThePassword) {
    const std::string url = "postgresql://app:s3cret@127.0.0.1:" +
                            std::to_string(testing::PostgresServer::free_port()) + "/tr";
    try {
        ServiceFixture s(postgres_config(url, ""));
        ADD_FAILURE() << "started without its store";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("test.toml: store: postgresql://app:[redacted]@127.0.0.1"));
        EXPECT_THAT(e.what(), HasSubstr("cannot connect"));
        EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("s3cret")));
    }
}

// ---- store.url: ClickHouse ------------------------------------------------------------------

// Gateway traffic (through the sim) and submitted records land in ClickHouse; the observatory
// answers from them, saves its rollups there at stop, and a restarted serve answers the same
// from the rollups it loads back (and the records after their watermark: none).
TEST(ObservatoryOnClickHouse, GatewayRequestsIngestionAndRollupsSurviveARestart) {
    if (!testing::ClickHouseServer::available()) {
        GTEST_SKIP() << testing::ClickHouseServer::skip_reason();
    }
    testing::ClickHouseServer server;
    testing::SimFixture sim("instant");
    // One node: its inserts have ended before its writer thread follows the table.
    std::string config = service_config(
        "unused.db", keys_mode("min_samples = 1\nfollow_lag = \"0s\"\n"), sim.base_url());
    const std::string path = "path = \"unused.db\"";
    config.replace(config.find(path), path.size(), "url = \"" + server.url() + "\"");
    json::value board_before;
    json::value gateway_before;
    {
        ServiceFixture s(config);
        ASSERT_TRUE(s.wait_ready());
        for (bool stream : {true, false, true}) {
            const std::string body = json::serialize(json::object{
                {"model", "fast"},
                {"stream", stream},
                {"max_tokens", 5},
                {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}});
            auto f = testing::post_json(s.url("/v1/chat/completions"), body);
            ASSERT_EQ(f.status, 200u) << f.body;
        }
        auto first = post(s, array_of(batch(0, 41)), bearer(kKeyA));
        EXPECT_EQ(first.body, R"({"accepted":41,"duplicates":0,"rejected":0,"errors":[]})");
        auto again = post(s, array_of(batch(36, 42)), bearer(kKeyA));
        EXPECT_EQ(again.body, R"({"accepted":1,"duplicates":5,"rejected":0,"errors":[]})");
        // Gateway records reach the store at the writer's next flush (20 ms here), and the
        // rollups follow the table at the writer's ticks: the last submitted record (the
        // highest id) may come in a later follow than the gateway's, so both are waited for.
        json::value gateway;
        const auto acme_samples = [](const json::value& board) {
            const json::object* row = row_of(board, "acme");
            return row == nullptr ? 0 : row->at("samples").to_number<int>();
        };
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        do {
            auto f = get(s, "/api/v1/gateway?window=15m");
            ASSERT_EQ(f.status, 200u) << f.body;
            gateway = json::parse(f.body);
            auto board = get(s, "/api/v1/leaderboard");
            ASSERT_EQ(board.status, 200u) << board.body;
            board_before = without_time(board);
            if (gateway.at("attempts").to_number<int>() >= 6 && acme_samples(board_before) >= 42) {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        } while (std::chrono::steady_clock::now() < deadline);
        EXPECT_EQ(gateway.at("requests").to_number<int>(), 3) << gateway;
        EXPECT_EQ(gateway.at("attempts").to_number<int>(), 6) << gateway;
        gateway_before = gateway;
        gateway_before.as_object().erase("generated_at");
        ASSERT_NE(row_of(board_before, "acme"), nullptr) << board_before;
        EXPECT_EQ(acme_samples(board_before), 42);
        EXPECT_THAT(s.service().store_summary(), HasSubstr("clickhouse://default:[redacted]@"));
        s.stop();
        EXPECT_THAT(s.service().store_summary(),
                    ::testing::Not(HasSubstr(testing::ClickHouseServer::kPassword)));
    }
    {
        auto raw = store::ClickHouseStore::open(server.url()).value();
        const auto records = raw->select({}).value();
        ASSERT_EQ(records.size(), 48u);  // 42 submitted, 6 gateway attempts
        std::size_t submitted = 0;
        for (const Measurement& m : records) submitted += m.client_id == "key:team-a" ? 1 : 0;
        EXPECT_EQ(submitted, 42u);
        std::size_t rows = 0;
        const auto watermark = raw->load_rollups([&](store::RollupRow&&) { ++rows; });
        ASSERT_TRUE(watermark) << watermark.error().message;
        // The position the node had followed to: every stored id, and the moment it stopped.
        EXPECT_GE(*watermark, raw->last_id().value());
        EXPECT_GE(rows, 2u);  // the sim's hour and acme's
    }
    ServiceFixture restarted(config);
    ASSERT_TRUE(restarted.wait_ready());
    auto board = get(restarted, "/api/v1/leaderboard");
    ASSERT_EQ(board.status, 200u);
    EXPECT_EQ(without_time(board), board_before);
    auto gateway = get(restarted, "/api/v1/gateway?window=15m");
    ASSERT_EQ(gateway.status, 200u);
    EXPECT_EQ(without_time(gateway), gateway_before);
}

TEST(ObservatoryOnClickHouse, StoreUrlIsCheckedAndAnUnreachableServerIsAStartupError) {
    const std::string url = "clickhouse://app:s3cret@127.0.0.1:" +
                            std::to_string(testing::PostgresServer::free_port()) + "/tr";
    std::string config = service_config("unused.db", "");
    const std::string path = "path = \"unused.db\"";
    config.replace(config.find(path), path.size(), "url = \"" + url + "\"");
    const auto c = testing::serve_config(config);
    EXPECT_EQ(c.store.url, url);
    EXPECT_THAT(serve::describe(c), ::testing::Not(HasSubstr("s3cret")));
    try {
        ServiceFixture s(config);
        ADD_FAILURE() << "started without its store";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("test.toml: store: clickhouse://app:[redacted]@127.0.0.1"));
        EXPECT_THAT(e.what(), HasSubstr("cannot connect"));
        EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("s3cret")));
    }
    // Admin keys cannot live in ClickHouse: the registry must be named.
    std::string admin = config;
    admin.replace(admin.find("[auth]\nmode = \"none\""), 20,
                  "[auth]\nmode = \"none\"\n[[auth.admin_keys]]\nname = \"ops\"\nsha256 = \"" +
                      net::hash_api_key(kKeyA) + "\"");
    try {
        (void)testing::serve_config(admin);
        ADD_FAILURE() << "admin keys accepted with nowhere to keep keys";
    } catch (const ConfigError& e) {
        EXPECT_THAT(e.what(), HasSubstr("auth.registry"));
        EXPECT_THAT(e.what(), HasSubstr("ClickHouse"));
    }
}

}  // namespace
}  // namespace tokenradar::gateway
