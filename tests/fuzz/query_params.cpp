// QueryApi::get reads request targets and If-None-Match headers from the network: any bytes
// must give 200, 304, 400 or 404 with a JSON body (empty for 304), never a crash or an
// unbounded allocation; a 200 revalidates to a 304 with its own ETag; the caching and the
// uncaching API give the same answer. Input: the target, then optionally a newline and the
// If-None-Match value.

#include <tokenradar/observatory/query_api.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

using namespace tokenradar;
using namespace tokenradar::observatory;

constexpr std::int64_t kNow = 1'762'041'600'000'000 + 12 * kHourUs;  // 2025-11-02T12:00:00Z
constexpr std::int64_t kMsNs = 1'000'000;

// A week of records over a few cells, so every endpoint has rows, cells and points, including
// insufficient ones and a New York DST change.
const RollupIndex& index() {
    static const RollupIndex* built = [] {
        auto* index = new RollupIndex();
        std::vector<Measurement> records;
        for (int i = 0; i < 4000; ++i) {
            Measurement m;
            m.request_id = "r";
            m.client_id = i % 7 == 0 ? "other" : "";
            m.attempt = i % 13 == 0 ? 2 : 1;
            m.ts_us = kNow - static_cast<std::int64_t>(i) * 151 * 1'000'000 - (i % 3) * kDayUs;
            m.labels.provider = i % 3 == 0 ? "openai" : "anthropic";
            m.labels.model = "model-" + std::to_string(i % 4);
            m.labels.task = i % 2 == 0 ? "chat" : "code";
            m.labels.source = i % 5 == 0 ? "bench" : "gateway";
            m.labels.api = "openai";
            m.labels.client_region = i % 6 == 0 ? "" : "eu-west";
            m.labels.upstream_region = "us-east";
            m.labels.cache = i % 4 == 0 ? Cache::exact : Cache::miss;
            m.labels.route = i % 13 == 0 ? Route::fallback : Route::primary;
            m.labels.stream = i % 9 != 0;
            m.status = i % 17 == 0 ? RequestStatus::http(429) : RequestStatus::ok;
            const std::int64_t ttft = (50 + (i * 37) % 900) * kMsNs;
            m.t.headers = ttft / 2;
            m.t.first_chunk = ttft;
            m.t.first_token = ttft;
            m.output_tokens = 2 + i % 50;
            m.t.last_token = ttft + *m.output_tokens * 20 * kMsNs;
            m.t.done = m.t.last_token;
            m.overhead_ns = 30'000 + (i % 100) * 1000;
            records.push_back(std::move(m));
        }
        index->add(records);
        return index;
    }();
    return *built;
}

QueryApiOptions uncached() {
    QueryApiOptions o;
    o.cache_ttl = std::chrono::milliseconds(0);
    return o;
}

void check(const ApiResponse& r, std::string_view target) {
    switch (r.status) {
        case 200:
        case 304:
            if (r.etag.size() != 18 || r.cache_control != "public, max-age=10") std::abort();
            if (r.status == 304) {
                if (!r.body.empty()) std::abort();
                return;
            }
            // format=csv: a table ending in CRLF, offered as a download.
            if (r.content_type == "text/csv; charset=utf-8") {
                if (!r.body.ends_with("\r\n") || r.filename.empty()) std::abort();
                return;
            }
            if (r.content_type != "application/json" || !r.filename.empty()) std::abort();
            break;
        case 400:
        case 404:
            if (!r.etag.empty() || r.cache_control != "no-store") std::abort();
            break;
        default:
            std::abort();
    }
    boost::system::error_code ec;
    const boost::json::value body = boost::json::parse(r.body, ec);
    if (ec || !body.is_object()) std::abort();
    if (r.status != 200 && !body.at("error").at("message").is_string()) std::abort();
    (void)target;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const QueryApi plain(index(), uncached());
    static const QueryApi cached(index());
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto newline = input.find('\n');
    const std::string_view target = input.substr(0, newline);
    const std::string_view if_none_match =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

    const ApiResponse a = plain.get(target, if_none_match, kNow);
    check(a, target);
    const ApiResponse b = cached.get(target, if_none_match, kNow);
    check(b, target);
    if (a.status != b.status || a.etag != b.etag || a.body != b.body) std::abort();
    if (a.status == 200 && plain.get(target, a.etag, kNow).status != 304) std::abort();
    return 0;
}
