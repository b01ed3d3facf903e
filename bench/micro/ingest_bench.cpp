// Observatory ingestion, the sans-IO half (target >= 300,000 records/s on one core):
// parse_submission() over a 10,000-record body as a JSON array and as NDJSON, and the same
// NDJSON body gzip'd (gunzip + parse). Records are what bench --submit sends: to_json() of a
// streamed, successful request (derived metrics included), 32-hex request ids, ~750 bytes.

#include <tokenradar/observatory/ingest.hpp>

#include <benchmark/benchmark.h>
#include <boost/json.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace {

using namespace tokenradar;
using observatory::BodyFormat;

constexpr std::int64_t kNow = 1'780'000'000'000'000;
constexpr int kRecords = 10'000;

Measurement typical(int i) {
    Measurement m;
    const auto seq = static_cast<std::uint64_t>(i + 1);
    m.request_id =
        fmt::format("{:016x}{:016x}", seq * 0x9e3779b97f4a7c15ull, ~seq * 0xbf58476d1ce4e5b9ull);
    m.response_id = "chatcmpl-" + m.request_id.substr(0, 24);
    m.attempt = 1;
    m.labels.provider = "openai";
    m.labels.model = "gpt-4o-2024-08-06";
    m.labels.endpoint = "api.openai.com";
    m.labels.upstream_region = "us-east";
    m.labels.client_region = "eu-west";
    m.labels.task = "gen-500";
    m.labels.source = "bench";
    m.labels.api = "openai";
    m.http_status = 200;
    m.ts_us = kNow - 3'600'000'000 + i * 1000;
    m.t.headers = 180'000'000 + i;
    m.t.first_chunk = 250'000'000 + i;
    m.t.first_token = 280'000'000 + i;
    m.t.last_token = 12'100'000'000 + i;
    m.t.done = 12'110'000'000 + i;
    m.connect_ns = 20'000'000;
    m.tls_ns = 30'000'000;
    m.prompt_tokens = 812;
    m.cached_prompt_tokens = 512;
    m.output_tokens = 500;
    m.output_events = 497;
    m.chunk_gap_p50_ns = 23'000'000;
    m.chunk_gap_p99_ns = 61'000'000;
    m.chunk_gap_max_ns = 190'000'000;
    return m;
}

std::string ndjson_body() {
    std::string body;
    for (int i = 0; i < kRecords; ++i) {
        body += boost::json::serialize(to_json(typical(i)));
        body += '\n';
    }
    return body;
}

std::string array_body() {
    boost::json::array a;
    for (int i = 0; i < kRecords; ++i) a.push_back(to_json(typical(i)));
    return boost::json::serialize(a);
}

observatory::IngestContext context() {
    observatory::IngestContext ctx;
    ctx.now_us = kNow;
    ctx.submitter = "key:bench";
    return ctx;
}

void run(benchmark::State& state, const std::string& body, BodyFormat format, bool gzipped) {
    const auto ctx = context();
    for (auto _ : state) {
        std::string plain;
        std::string_view text = body;
        if (gzipped) {
            auto out = observatory::gunzip(body, 64 << 20);
            if (!out) {
                state.SkipWithError(out.error().message.c_str());
                return;
            }
            plain = std::move(*out);
            text = plain;
        }
        auto sub = observatory::parse_submission(text, format, ctx);
        if (!sub || sub->records.size() != kRecords) {
            state.SkipWithError("not every record was accepted");
            return;
        }
        benchmark::DoNotOptimize(sub->records.data());
    }
    state.SetItemsProcessed(state.iterations() * kRecords);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(body.size()));
    state.counters["body_bytes"] = static_cast<double>(body.size());
}

void BM_Ingest_JsonArray(benchmark::State& state) {
    static const std::string body = array_body();
    run(state, body, BodyFormat::json_array, false);
}
BENCHMARK(BM_Ingest_JsonArray)->Unit(benchmark::kMillisecond);

void BM_Ingest_Ndjson(benchmark::State& state) {
    static const std::string body = ndjson_body();
    run(state, body, BodyFormat::ndjson, false);
}
BENCHMARK(BM_Ingest_Ndjson)->Unit(benchmark::kMillisecond);

void BM_Ingest_NdjsonGzip(benchmark::State& state) {
    static const std::string body = observatory::gzip(ndjson_body());
    run(state, body, BodyFormat::ndjson, true);
}
BENCHMARK(BM_Ingest_NdjsonGzip)->Unit(benchmark::kMillisecond);

// The parts: measurement_from_json on an already-parsed record, and gunzip alone.
void BM_Ingest_MeasurementFromJsonOnly(benchmark::State& state) {
    const boost::json::value v = to_json(typical(7));
    for (auto _ : state) {
        auto m = measurement_from_json(v);
        benchmark::DoNotOptimize(m);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ingest_MeasurementFromJsonOnly);

void BM_Ingest_GunzipOnly(benchmark::State& state) {
    static const std::string plain = ndjson_body();
    static const std::string body = observatory::gzip(plain);
    for (auto _ : state) {
        auto out = observatory::gunzip(body, 64 << 20);
        benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(state.iterations() * kRecords);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(plain.size()));
}
BENCHMARK(BM_Ingest_GunzipOnly)->Unit(benchmark::kMillisecond);

}  // namespace
