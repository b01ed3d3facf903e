#include <tokenradar/observatory/ingest.hpp>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tokenradar::observatory {
namespace {

namespace json = boost::json;

constexpr std::int64_t kNow = 1'780'000'000'000'000;  // 2026-05-28, UTC microseconds
constexpr std::int64_t kMinuteUs = 60'000'000;
constexpr std::int64_t kDayUs = 24 * 60 * kMinuteUs;

IngestContext context() {
    IngestContext ctx;
    ctx.now_us = kNow;
    ctx.submitter = "key:acme";
    return ctx;
}

// A record of the shape bench and the web tests submit (web/tests/lib/compare.mjs).
Measurement measurement(int i) {
    Measurement m;
    m.request_id = "req-" + std::to_string(i);
    m.client_id = "claimed-by-record";
    m.attempt = 1;
    m.labels.provider = "openai-sim";
    m.labels.model = "gpt-4o";
    m.labels.endpoint = "localhost";
    m.labels.upstream_region = "local";
    m.labels.client_region = "eu-west";
    m.labels.task = "chat";
    m.labels.source = "bench";
    m.labels.api = "openai";
    m.http_status = 200;
    m.ts_us = kNow - i * 1000;
    m.t.headers = 100'000'000;
    m.t.first_chunk = 150'000'000 + i;
    m.t.first_token = 150'000'000 + i;
    m.t.last_token = 1'150'000'000 + i;
    m.t.done = 1'160'000'000 + i;
    m.output_tokens = 41;
    m.output_events = 41;
    return m;
}

json::object record(int i) { return to_json(measurement(i)); }

std::string array_of(const std::vector<json::object>& records) {
    json::array a;
    for (const auto& r : records) a.push_back(r);
    return json::serialize(a);
}

std::string ndjson_of(const std::vector<json::object>& records, std::string_view eol = "\n") {
    std::string out;
    for (const auto& r : records) {
        out += json::serialize(r);
        out += eol;
    }
    return out;
}

Submission parse_ok(std::string_view body, BodyFormat format,
                    const IngestContext& ctx = context()) {
    auto r = parse_submission(body, format, ctx);
    if (!r) throw std::runtime_error("parse_submission: " + r.error().message);
    return std::move(*r);
}

// The one error a single-record submission gets.
RecordError error_of(json::object rec, const IngestContext& ctx = context()) {
    const Submission s = parse_ok(array_of({std::move(rec)}), BodyFormat::json_array, ctx);
    EXPECT_TRUE(s.records.empty());
    if (s.errors.size() != 1) return {99, "no error", ""};
    return s.errors[0];
}

std::string message_of(const Result<Submission>& r) { return r ? "" : r.error().message; }

TEST(Ingest, AcceptsAnArrayAndStampsTheServersFields) {
    const Submission s = parse_ok(array_of({record(0), record(1)}), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 2u);
    EXPECT_EQ(s.indexes, (std::vector<std::size_t>{0, 1}));
    EXPECT_TRUE(s.errors.empty());
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_EQ(s.total, 2u);

    Measurement expected = measurement(1);
    expected.client_id = "key:acme";  // the submitter, not the record's claim
    expected.received_us = kNow;
    EXPECT_EQ(s.records[1], expected);
}

TEST(Ingest, SubmitterDecidesClientIdEvenWhenTheRecordHasNone) {
    json::object rec = record(0);
    rec.erase("client_id");
    json::object other = record(1);
    other["client_id"] = "key:someone-else";
    const Submission s = parse_ok(array_of({rec, other}), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 2u);
    EXPECT_EQ(s.records[0].client_id, "key:acme");
    EXPECT_EQ(s.records[1].client_id, "key:acme");
}

TEST(Ingest, EmptySourceBecomesSubmittedAndAMissingClientRegionComesFromTheContext) {
    json::object rec = record(0);
    rec.erase("source");
    rec["client_region"] = "";
    json::object keeps = record(1);
    IngestContext ctx = context();
    ctx.client_region = "geoip-region";
    const Submission s = parse_ok(array_of({rec, keeps}), BodyFormat::json_array, ctx);
    ASSERT_EQ(s.records.size(), 2u);
    EXPECT_EQ(s.records[0].labels.source, "submitted");
    EXPECT_EQ(s.records[0].labels.client_region, "geoip-region");
    EXPECT_EQ(s.records[1].labels.source, "bench");
    EXPECT_EQ(s.records[1].labels.client_region, "eu-west");
}

// A submitter said source "gateway" and changed the gateway page's counts.
TEST(Ingest, TheServerNotTheRecordSaysARecordIsThisNodesGatewayOrSim) {
    std::vector<json::object> records;
    for (const char* source : {"gateway", "sim", "bench", "submitted"}) {
        json::object rec = record(static_cast<int>(records.size()));
        rec["source"] = source;
        records.push_back(std::move(rec));
    }
    const Submission s = parse_ok(array_of(records), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 4u);
    EXPECT_EQ(s.records[0].labels.source, "submitted");
    EXPECT_EQ(s.records[1].labels.source, "submitted");
    EXPECT_EQ(s.records[2].labels.source, "bench");  // a submitter may say it ran a benchmark
    EXPECT_EQ(s.records[3].labels.source, "submitted");

    // A key in [observatory] gateway_keys (a gateway forwarding its records) keeps them.
    IngestContext trusted = context();
    trusted.trusted_source = true;
    const Submission t = parse_ok(array_of(records), BodyFormat::json_array, trusted);
    ASSERT_EQ(t.records.size(), 4u);
    EXPECT_EQ(t.records[0].labels.source, "gateway");
    EXPECT_EQ(t.records[1].labels.source, "sim");
    EXPECT_EQ(t.records[2].labels.source, "bench");
}

// A client key's name is the gateway's own: a public submitter's is dropped (it would add
// cells to everybody's observatory); a gateway forwarding with a trusted key keeps it.
TEST(Ingest, OnlyATrustedSubmitterKeepsAClientKey) {
    json::object rec = record(0);
    rec["client_key"] = "team-a";
    const Submission s = parse_ok(array_of({rec}), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.records[0].labels.client_key, "");
    IngestContext trusted = context();
    trusted.trusted_source = true;
    const Submission t = parse_ok(array_of({rec}), BodyFormat::json_array, trusted);
    ASSERT_EQ(t.records.size(), 1u);
    EXPECT_EQ(t.records[0].labels.client_key, "team-a");
}

TEST(Ingest, ReceivedUsInARecordIsIgnored) {
    json::object rec = record(0);
    rec["received_us"] = 5;
    const Submission s = parse_ok(array_of({rec}), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.records[0].received_us, kNow);
}

TEST(Ingest, MeasurementErrorsAreSplitIntoFieldAndMessage) {
    json::object rec = record(0);
    rec["attempt"] = 0;
    EXPECT_EQ(error_of(rec), (RecordError{0, "attempt", "expected an integer from 1 to 100"}));

    rec = record(0);
    rec["metrics_spec"] = 2;
    EXPECT_EQ(error_of(rec),
              (RecordError{0, "metrics_spec", "expected 1 (this server implements spec 1)"}));

    rec = record(0);
    rec["first_token_ns"] = 50'000'000;  // before headers_ns
    EXPECT_EQ(error_of(rec), (RecordError{0, "timestamps",
                                          "expected 0 <= headers <= first_chunk <= first_token <= "
                                          "first_answer <= last_token <= done"}));

    rec = record(0);
    rec["cache"] = "maybe";
    EXPECT_EQ(error_of(rec),
              (RecordError{0, "cache", "expected one of miss, exact, semantic, bypass"}));

    rec = record(0);
    rec.erase("request_id");
    EXPECT_EQ(error_of(rec), (RecordError{0, "request_id", "expected a non-empty string"}));

    const Submission s = parse_ok("[42]", BodyFormat::json_array);
    ASSERT_EQ(s.errors.size(), 1u);
    EXPECT_EQ(s.errors[0], (RecordError{0, "record", "expected a JSON object"}));
}

TEST(Ingest, ProviderAndModelAreRequired) {
    json::object rec = record(0);
    rec["provider"] = "";
    EXPECT_EQ(error_of(rec), (RecordError{0, "provider", "expected a non-empty string"}));
    rec = record(0);
    rec.erase("model");
    EXPECT_EQ(error_of(rec), (RecordError{0, "model", "expected a non-empty string"}));
}

TEST(Ingest, EveryLabelValueIsChecked) {
    struct Case {
        std::string field;
        std::string value;
        std::string message;
    };
    const std::vector<Case> cases = {
        {"provider",
         "open\x07"
         "ai",
         "expected no control characters, got U+0007 at offset 4"},
        {"model", std::string(129, 'm'), "expected at most 128 bytes, got 129"},
        {"endpoint", "a\nb", "expected no control characters, got U+000A at offset 1"},
        {"task", "   ", "expected text, got only spaces"},
        {"upstream_region", "\xc2\x85", "expected no control characters, got U+0085 at offset 0"},
        {"client_region", std::string(200, 'r'), "expected at most 128 bytes, got 200"},
    };
    for (const Case& c : cases) {
        json::object rec = record(0);
        rec[c.field] = c.value;
        EXPECT_EQ(error_of(rec), (RecordError{0, c.field, c.message})) << c.field;
    }
    json::object markup = record(0);
    markup["model"] = "<img src=x onerror=alert(1)>";  // text, rendered inert by the dashboard
    const Submission s = parse_ok(array_of({markup}), BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 1u);
    EXPECT_EQ(s.records[0].labels.model, "<img src=x onerror=alert(1)>");
}

TEST(Ingest, InvalidUtf8IsNotJsonSoTheWholeBodyIsRefused) {
    json::object rec = record(0);
    std::string body = array_of({rec});
    body.replace(body.find("gpt-4o"), 6, "gpt-\xff\xfe");
    const auto r = parse_submission(body, BodyFormat::json_array, context());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
}

TEST(Ingest, RequestIdIsAtMost128Bytes) {
    json::object rec = record(0);
    rec["request_id"] = std::string(128, 'r');
    EXPECT_EQ(parse_ok(array_of({rec}), BodyFormat::json_array).records.size(), 1u);
    rec["request_id"] = std::string(129, 'r');
    EXPECT_EQ(error_of(rec), (RecordError{0, "request_id", "expected at most 128 bytes, got 129"}));
}

TEST(Ingest, TimestampMustBeNeitherInTheFutureNorOlderThanSevenDays) {
    json::object rec = record(0);
    rec["ts_us"] = kNow + 5 * kMinuteUs;  // the edges are allowed
    json::object oldest = record(1);
    oldest["ts_us"] = kNow - 7 * kDayUs;
    EXPECT_EQ(parse_ok(array_of({rec, oldest}), BodyFormat::json_array).records.size(), 2u);

    rec["ts_us"] = kNow + 5 * kMinuteUs + 1;
    EXPECT_EQ(error_of(rec), (RecordError{0, "ts_us",
                                          "expected at most 5m after the server's clock, got "
                                          "301s after"}));
    rec["ts_us"] = kNow + 60 * kMinuteUs;
    EXPECT_EQ(error_of(rec).message, "expected at most 5m after the server's clock, got 1h after");
    rec["ts_us"] = kNow - 7 * kDayUs - 1;
    EXPECT_EQ(error_of(rec), (RecordError{0, "ts_us",
                                          "expected at most 7d before the server's clock, got "
                                          "604801s before"}));

    // A month old: whole seconds, not "2.592e+06s".
    rec["ts_us"] = kNow - 30 * kDayUs - 1;
    EXPECT_EQ(error_of(rec).message,
              "expected at most 7d before the server's clock, got 2592001s before");
    rec["ts_us"] = INT64_MAX;
    EXPECT_EQ(error_of(rec).message,
              "expected at most 5m after the server's clock, got 9221592036855s after");

    IngestContext strict = context();
    strict.limits.max_clock_skew = std::chrono::seconds(1);
    strict.limits.max_age = std::chrono::hours(1);
    rec["ts_us"] = kNow + 2'000'000;
    EXPECT_EQ(error_of(rec, strict).message,
              "expected at most 1s after the server's clock, got 2s after");
    rec["ts_us"] = kNow - 2 * 60 * kMinuteUs;
    EXPECT_EQ(error_of(rec, strict).message,
              "expected at most 1h before the server's clock, got 2h before");
}

TEST(Ingest, ErrorsCarryTheRecordsIndexAndGoodRecordsTheirs) {
    json::object bad = record(1);
    bad["stream"] = "yes";
    json::object bad2 = record(3);
    bad2["model"] = "";
    const Submission s =
        parse_ok(array_of({record(0), bad, record(2), bad2, record(4)}), BodyFormat::json_array);
    EXPECT_EQ(s.indexes, (std::vector<std::size_t>{0, 2, 4}));
    ASSERT_EQ(s.records.size(), 3u);
    EXPECT_EQ(s.records[1].request_id, "req-2");
    ASSERT_EQ(s.errors.size(), 2u);
    EXPECT_EQ(s.errors[0], (RecordError{1, "stream", "expected true or false"}));
    EXPECT_EQ(s.errors[1], (RecordError{3, "model", "expected a non-empty string"}));
    EXPECT_EQ(s.total, 5u);
}

TEST(Ingest, DuplicatesInOneSubmissionAreCountedNotKept) {
    json::object retry = record(0);
    retry["attempt"] = 2;  // another attempt of the same request: not a duplicate
    json::object again = record(0);
    again["output_tokens"] = 7;  // same identity, other content: still a duplicate
    json::object invalid_twin = record(1);
    invalid_twin["status"] = "fine";  // rejected, so it neither counts nor blocks the next
    const Submission s =
        parse_ok(array_of({record(0), retry, again, invalid_twin, record(1), record(1), record(0)}),
                 BodyFormat::json_array);
    ASSERT_EQ(s.records.size(), 3u);
    EXPECT_EQ(s.indexes, (std::vector<std::size_t>{0, 1, 4}));
    EXPECT_EQ(s.records[0].output_tokens, 41);  // the first one is kept
    EXPECT_EQ(s.records[1].attempt, 2);
    EXPECT_EQ(s.duplicates, 3u);
    ASSERT_EQ(s.errors.size(), 1u);
    EXPECT_EQ(s.errors[0].index, 3u);
    EXPECT_EQ(s.total, 7u);
}

TEST(Ingest, ArrayFramingAndWhitespace) {
    EXPECT_EQ(parse_ok("[]", BodyFormat::json_array).total, 0u);
    EXPECT_EQ(parse_ok(" \r\n[ \n ]\n", BodyFormat::json_array).total, 0u);
    const std::string one = json::serialize(record(0));
    const Submission s = parse_ok("\n[\n  " + one + " ,\n\t" + json::serialize(record(1)) + "\n]\n",
                                  BodyFormat::json_array);
    EXPECT_EQ(s.records.size(), 2u);
}

TEST(Ingest, ArrayErrorsNameWhere) {
    const auto fail = [](std::string_view body) {
        return message_of(parse_submission(body, BodyFormat::json_array, context()));
    };
    EXPECT_EQ(fail(""), "body: expected a JSON array of records at line 1, column 1");
    EXPECT_EQ(fail("\n {\"a\":1}"), "body: expected a JSON array of records at line 2, column 2");
    EXPECT_EQ(fail(ndjson_of({record(0)})),
              "body: expected a JSON array of records at line 1, column 1");
    const std::string one = json::serialize(record(0));
    EXPECT_EQ(fail("[" + one + "\n " + one + "]"),
              fmt::format("body: expected ',' or ']' after record 0 at line 2, column 2"));
    EXPECT_EQ(fail("[" + one + ",\n  {\"request_id\": }]"),
              "body: expected a JSON record at line 2, column 3 (record 1), got invalid JSON "
              "(syntax error)");
    EXPECT_EQ(fail("[" + one + ","),
              fmt::format("body: expected a JSON record at line 1, column {} (record 1), got "
                          "invalid JSON (incomplete JSON)",
                          one.size() + 3));
    EXPECT_EQ(fail("[" + one + ",]"),
              fmt::format("body: expected a JSON record at line 1, column {} "
                          "(record 1), got invalid JSON (syntax error)",
                          one.size() + 3));
    EXPECT_EQ(fail("[" + one), fmt::format("body: expected ',' or ']' after record 0 at line 1, "
                                           "column {}",
                                           one.size() + 2));
    EXPECT_EQ(fail("[" + one + "] x"),
              fmt::format("body: expected nothing after the array's ']', got more at line 1, "
                          "column {}",
                          one.size() + 4));
}

TEST(Ingest, NdjsonAllowsBlankLinesCrlfAndAMissingLastNewline) {
    const std::string a = json::serialize(record(0));
    const std::string b = json::serialize(record(1));
    for (const std::string& body :
         {a + "\n" + b + "\n", a + "\n" + b, "\n\n" + a + "\n  \n\n" + b + "\n\n",
          a + "\r\n" + b + "\r\n", a + "\r\n\r\n" + b, "  " + a + "  \n\t" + b}) {
        const Submission s = parse_ok(body, BodyFormat::ndjson);
        EXPECT_EQ(s.records.size(), 2u) << body;
        EXPECT_EQ(s.indexes, (std::vector<std::size_t>{0, 1})) << body;
    }
    EXPECT_EQ(parse_ok("", BodyFormat::ndjson).total, 0u);
    EXPECT_EQ(parse_ok("\n\r\n \n", BodyFormat::ndjson).total, 0u);
}

TEST(Ingest, NdjsonIndexesCountRecordsNotLines) {
    json::object bad = record(1);
    bad["attempt"] = "one";
    const std::string body =
        "\n" + json::serialize(record(0)) + "\n\n" + json::serialize(bad) + "\n";
    const Submission s = parse_ok(body, BodyFormat::ndjson);
    ASSERT_EQ(s.errors.size(), 1u);
    EXPECT_EQ(s.errors[0], (RecordError{1, "attempt", "expected an integer from 1 to 100"}));
}

TEST(Ingest, NdjsonBadLineNamesItsLine) {
    const std::string a = json::serialize(record(0));
    const auto fail = [](std::string_view body) {
        return message_of(parse_submission(body, BodyFormat::ndjson, context()));
    };
    EXPECT_EQ(fail(a + "\n\n{\"request_id\": \n" + a),
              "body: expected one JSON record per line, line 3 (record 1) is not JSON (incomplete "
              "JSON)");
    EXPECT_EQ(fail(a + "\r\n" + a + " " + a + "\r\n"),
              fmt::format("body: expected one JSON record per line, line 2 has more after the "
                          "record at column {}",
                          a.size() + 2));
    EXPECT_EQ(fail("[" + a + "]"), "");  // a line holding an array is one record, not an object
    EXPECT_EQ(fail("nope\n"),
              "body: expected one JSON record per line, line 1 (record 0) is not JSON (syntax "
              "error)");
}

TEST(Ingest, TooManyRecordsIsPayloadTooLarge) {
    IngestContext ctx = context();
    ctx.limits.max_records = 3;
    std::vector<json::object> three = {record(0), record(1), record(2)};
    for (BodyFormat format : {BodyFormat::json_array, BodyFormat::ndjson}) {
        const auto body = [&](const std::vector<json::object>& recs) {
            return format == BodyFormat::json_array ? array_of(recs) : ndjson_of(recs);
        };
        EXPECT_EQ(parse_ok(body(three), format, ctx).records.size(), 3u);
        std::vector<json::object> four = three;
        four.push_back(record(3));
        const auto r = parse_submission(body(four), format, ctx);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code, make_error_code(Errc::payload_too_large));
        EXPECT_EQ(http_status(r.error().code), 413);
        EXPECT_EQ(r.error().message, "body: expected at most 3 records, got more");
    }
    // The default: 10,000 (invalid records count too).
    std::string body = "[{}";
    for (int i = 1; i < 10'000; ++i) body += ",{}";
    EXPECT_EQ(parse_ok(body + "]", BodyFormat::json_array).errors.size(), 10'000u);
    EXPECT_EQ(message_of(parse_submission(body + ",{}]", BodyFormat::json_array, context())),
              "body: expected at most 10000 records, got more");
}

// ---- gzip ----------------------------------------------------------------------------------

TEST(Gzip, WritesOneGzipMemberAtEveryLevel) {
    const std::string body = ndjson_of({record(0), record(1), record(2)});
    for (int level : {-1, 0, 1, 9}) {
        const std::string gz = gzip(body, level);
        ASSERT_GE(gz.size(), 18u);  // 10-byte header, 8-byte trailer
        EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f) << level;
        EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b) << level;
        EXPECT_EQ(gunzip(gz, body.size()).value(), body) << level;
        if (level != 0) {
            EXPECT_LT(gz.size(), body.size() / 2) << level;  // JSON compresses well
        }
    }
}

TEST(Gunzip, RoundTripsABody) {
    const std::string body = ndjson_of({record(0), record(1), record(2)});
    const auto out = gunzip(gzip(body), 1 << 20);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(*out, body);
    // Output that starts small must grow: 1 MiB of varied text from a few KiB.
    std::string big;
    for (int i = 0; big.size() < (1 << 20); ++i) big += json::serialize(record(i)) + "\n";
    const auto grown = gunzip(gzip(big), big.size());
    ASSERT_TRUE(grown) << grown.error().message;
    EXPECT_EQ(*grown, big);
    EXPECT_EQ(gunzip(gzip(""), 10).value(), "");
}

TEST(Gunzip, ConcatenatedMembersAreJoined) {
    const auto out = gunzip(gzip("first\n") + gzip("second\n"), 100);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(*out, "first\nsecond\n");
}

TEST(Gunzip, TruncatedCorruptOrNotGzipIsABadRequest) {
    const std::string gz = gzip(ndjson_of({record(0), record(1)}));
    const auto message = [](std::string_view in) {
        auto r = gunzip(in, 1 << 20);
        if (r) return std::string("accepted");
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
        return r.error().message;
    };
    EXPECT_EQ(message(""), "body: expected gzip data, got an empty body");
    EXPECT_EQ(
        message(gz.substr(0, gz.size() - 4)),
        fmt::format("body: expected gzip data, the data ends early (truncated after {} bytes)",
                    gz.size() - 4));
    EXPECT_EQ(message(gz.substr(0, 5)),
              "body: expected gzip data, the data ends early (truncated after 5 bytes)");
    EXPECT_EQ(message("[{\"request_id\":\"x\"}]"),
              "body: expected gzip data, got incorrect header check at byte 2");
    std::string crc = gz;
    crc[crc.size() - 6] ^= 0x55;  // inside the CRC32 trailer
    EXPECT_EQ(message(crc).rfind("body: expected gzip data, got incorrect data check", 0), 0u)
        << message(crc);
    EXPECT_EQ(
        message(gz + "garbage").rfind("body: expected gzip data, got incorrect header check", 0),
        0u);
}

TEST(Gunzip, ABombStopsOneBytePastTheLimit) {
    const std::string zeros(16 << 20, '\0');  // 16 MiB -> ~16 KiB
    const std::string bomb = gzip(zeros, 9);
    ASSERT_LT(bomb.size(), 64u << 10);
    const auto r = gunzip(bomb, 1 << 20);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::payload_too_large));
    EXPECT_EQ(http_status(r.error().code), 413);
    EXPECT_EQ(r.error().message, "body: expected at most 1048576 bytes after gzip decoding");
    // Exactly at the limit is fine, one byte over is not.
    const std::string body(5000, 'x');
    EXPECT_EQ(gunzip(gzip(body), 5000).value(), body);
    EXPECT_FALSE(gunzip(gzip(body), 4999));
    EXPECT_EQ(gunzip(gzip(body) + gzip("y"), 5000).error().code,
              make_error_code(Errc::payload_too_large));
}

// ---- the answer ------------------------------------------------------------------------------

TEST(IngestOutcome, ListsErrorsUpToTheCap) {
    std::vector<RecordError> errors;
    for (std::size_t i = 0; i < 5; ++i) errors.push_back({i * 2, "ts_us", "expected it"});
    EXPECT_EQ(json::serialize(outcome_json(7, 1, std::span(errors).first(1))),
              R"({"accepted":7,"duplicates":1,"rejected":1,)"
              R"("errors":[{"index":0,"field":"ts_us","message":"expected it"}]})");
    const json::object capped = outcome_json(9998, 3, errors, 2);
    EXPECT_EQ(capped.at("rejected"), 5);
    EXPECT_EQ(capped.at("errors").as_array().size(), 2u);
    EXPECT_EQ(capped.at("errors").as_array()[1].at("index"), 2);
    EXPECT_EQ(capped.at("more_errors"), 3);
    EXPECT_EQ(json::serialize(outcome_json(0, 0, {})),
              R"({"accepted":0,"duplicates":0,"rejected":0,"errors":[]})");
}

TEST(IngestOutcome, AnswersAWholeSubmission) {
    json::object bad = record(1);
    bad["route"] = "sideways";
    const Submission s = parse_ok(ndjson_of({record(0), bad, record(0)}), BodyFormat::ndjson);
    EXPECT_EQ(
        json::serialize(outcome_json(s.records.size(), s.duplicates, s.errors)),
        R"({"accepted":1,"duplicates":1,"rejected":1,"errors":[{"index":1,"field":"route",)"
        R"("message":"expected one of primary, fallback, hedge, latency, affinity, local, region"}]})");
}

}  // namespace
}  // namespace tokenradar::observatory

namespace tokenradar::observatory {
namespace {

TEST(IngestOutcome, ASubmitterReadsBackWhatTheServerAnswered) {
    const std::vector<RecordError> errors = {{2, "ts_us", "expected a time in the last 7 days"}};
    SubmitOutcome out;
    ASSERT_TRUE(add_outcome(out, boost::json::serialize(outcome_json(7, 1, errors)), 100));
    ASSERT_TRUE(add_outcome(out, boost::json::serialize(outcome_json(3, 0, {})), 110));
    EXPECT_EQ(out.accepted, 10u);
    EXPECT_EQ(out.duplicates, 1u);
    EXPECT_EQ(out.rejected, 1u);
    EXPECT_EQ(out.errors,
              (std::vector<std::string>{"record 102: ts_us: expected a time in the last 7 days"}));
    const auto bad = add_outcome(out, "<html>502</html>", 0);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "observatory answer: expected a JSON object");
    EXPECT_EQ(out.accepted, 10u);
}

}  // namespace
}  // namespace tokenradar::observatory
