// Tests of src/observatory/query_params.cpp (private): every parameter's checks and messages.
#include "../../../src/observatory/query_params.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tokenradar::observatory {
namespace {

using ::testing::HasSubstr;

ApiRequest ok(std::string_view target, const ParamLimits& limits = {}) {
    auto r = parse_request(target, limits);
    EXPECT_TRUE(r.has_value()) << target << ": " << (r ? "" : r.error().message);
    return r ? *r : ApiRequest{};
}

RequestError fails(std::string_view target, const ParamLimits& limits = {}) {
    auto r = parse_request(target, limits);
    EXPECT_FALSE(r.has_value()) << target;
    return r ? RequestError{} : r.error();
}

const std::vector<std::string>& allowed(const ApiRequest& r, Label l) {
    return r.filter.allowed[cell_slot(l)];
}

TEST(QueryParams, DefaultsFollowTheDocument) {
    const ApiRequest r = ok("/api/v1/leaderboard");
    EXPECT_EQ(r.endpoint, Endpoint::leaderboard);
    EXPECT_EQ(r.window_us, 24 * kHourUs);
    EXPECT_EQ(r.window_text, "24h");
    EXPECT_EQ(r.metric, Metric::ttft);
    EXPECT_EQ(r.quantiles, std::vector<double>{0.5});
    EXPECT_EQ(r.tz, "UTC");
    EXPECT_EQ(r.by, (std::vector<Label>{Label::provider, Label::model}));
    for (const auto& values : r.filter.allowed) EXPECT_TRUE(values.empty());
    EXPECT_EQ(ok("/api/v1/distribution").points, 100u);
    EXPECT_EQ(ok("/api/v1/heatmap").heatmap_by, HeatmapBy::weekday);
}

TEST(QueryParams, EveryEndpointParses) {
    EXPECT_EQ(ok("/api/v1/heatmap?by=model&tz=America/New_York&metric=tpot&q=0.95").endpoint,
              Endpoint::heatmap);
    EXPECT_EQ(ok("/api/v1/timeseries?q=0.5,0.95").endpoint, Endpoint::timeseries);
    EXPECT_EQ(ok("/api/v1/distribution?points=10").endpoint, Endpoint::distribution);
    EXPECT_EQ(ok("/api/v1/regions?window=7d").endpoint, Endpoint::regions);
    EXPECT_EQ(ok("/api/v1/gateway?window=1h").endpoint, Endpoint::gateway);
    EXPECT_EQ(ok("/api/v1/labels?window=30d").endpoint, Endpoint::labels);
}

TEST(QueryParams, UnknownPathIs404) {
    for (auto target : {"/api/v1/nope", "/api/v1/leaderboard/", "/", "/api/v2/leaderboard",
                        "/api/v1/measurements"}) {
        const RequestError e = fails(target);
        EXPECT_EQ(e.errc, Errc::not_found) << target;
        EXPECT_EQ(e.param, "");
        EXPECT_THAT(e.message,
                    HasSubstr(": not found; the query API serves /api/v1/{leaderboard,"));
    }
    EXPECT_EQ(
        fails("/api/v1/nope?window=x").message,
        "/api/v1/nope: not found; the query API serves "
        "/api/v1/{leaderboard,heatmap,timeseries,distribution,regions,gateway,labels,status}");
}

TEST(QueryParams, MalformedTargetIs400WithoutParam) {
    for (auto target : {"/api/v1/leaderboard?window=%zz", "api/v1/leaderboard",
                        "/api/v1/leaderboard#x", "/api/v1/leader board"}) {
        const RequestError e = fails(target);
        EXPECT_EQ(e.errc, Errc::bad_request) << target;
        EXPECT_EQ(e.param, "");
        EXPECT_THAT(e.message, HasSubstr("target: expected a path and a percent-encoded query"));
    }
}

TEST(QueryParams, Window) {
    EXPECT_EQ(ok("/api/v1/leaderboard?window=15m").window_us, 15 * kMinuteUs);
    EXPECT_EQ(ok("/api/v1/leaderboard?window=30d").window_us, 30 * kDayUs);
    EXPECT_EQ(ok("/api/v1/leaderboard?window=1440m").window_text, "24h");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=1d").window_text, "24h");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=2880m").window_text, "2d");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=36h").window_text, "36h");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=30d").window_text, "30d");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=1.5h").window_text, "90m");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=15m").window_text, "15m");
    EXPECT_EQ(ok("/api/v1/leaderboard?window=1m").window_us, kMinuteUs);
    for (auto bad : {"x", "", "0m", "30s", "59s", "31d", "721h", "-1h", "1h30m", "24", "1e3h"}) {
        const RequestError e = fails(std::string("/api/v1/leaderboard?window=") + bad);
        EXPECT_EQ(e.errc, Errc::bad_request);
        EXPECT_EQ(e.param, "window");
        EXPECT_EQ(e.message,
                  fmt::format("window: expected a duration from 1m to 30d such as 15m, 1h, 24h "
                              "or 7d, got '{}'",
                              bad));
    }
    const RequestError twice = fails("/api/v1/leaderboard?window=1h&window=2h");
    EXPECT_EQ(twice.param, "window");
    EXPECT_EQ(twice.message, "window: given more than once; expected one value");
    ParamLimits short_limits;
    short_limits.max_window = std::chrono::hours(24);
    EXPECT_THAT(fails("/api/v1/leaderboard?window=2d", short_limits).message,
                HasSubstr("from 1m to 1d"));
}

TEST(QueryParams, LabelFiltersRepeatAndAreChecked) {
    const ApiRequest r =
        ok("/api/v1/leaderboard?provider=b&provider=a&provider=b&model=gpt%204o&client_region="
           "&task=chat&source=bench&api=openai&upstream_region=us-east");
    EXPECT_EQ(allowed(r, Label::provider), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(allowed(r, Label::model), std::vector<std::string>{"gpt 4o"});
    EXPECT_EQ(allowed(r, Label::client_region), std::vector<std::string>{""});  // unknown region
    EXPECT_EQ(allowed(r, Label::task), std::vector<std::string>{"chat"});
    EXPECT_EQ(allowed(r, Label::upstream_region), std::vector<std::string>{"us-east"});
    EXPECT_EQ(allowed(ok("/api/v1/leaderboard?model=a+b"), Label::model),
              std::vector<std::string>{"a b"});  // URLSearchParams writes spaces as +

    const RequestError control = fails("/api/v1/leaderboard?provider=a%00b");
    EXPECT_EQ(control.param, "provider");
    EXPECT_EQ(control.message, "provider: expected no control characters, got U+0000 at offset 1");
    const RequestError utf8 = fails("/api/v1/regions?model=%FF");
    EXPECT_EQ(utf8.param, "model");
    EXPECT_EQ(utf8.message, "model: expected UTF-8 text, got a malformed byte at offset 0");
    EXPECT_EQ(fails("/api/v1/gateway?task=%20%20").message, "task: expected text, got only spaces");
    const RequestError long_value =
        fails("/api/v1/leaderboard?client_region=" + std::string(129, 'x'));
    EXPECT_EQ(long_value.param, "client_region");
    EXPECT_EQ(long_value.message, "client_region: expected at most 128 bytes, got 129");

    std::string many = "/api/v1/leaderboard?";
    for (int i = 0; i < 65; ++i) many += fmt::format("model=m{}&", i);
    EXPECT_EQ(fails(many).message, "model: expected at most 64 values");
}

TEST(QueryParams, Stream) {
    EXPECT_EQ(allowed(ok("/api/v1/leaderboard?stream=false"), Label::stream),
              std::vector<std::string>{"false"});
    EXPECT_TRUE(allowed(ok("/api/v1/leaderboard?stream=false&stream=true"), Label::stream).empty());
    const RequestError e = fails("/api/v1/leaderboard?stream=yes");
    EXPECT_EQ(e.param, "stream");
    EXPECT_EQ(e.message, "stream: expected true or false, got 'yes'");
    EXPECT_EQ(fails("/api/v1/leaderboard?stream").message,
              "stream: expected true or false, got ''");
}

TEST(QueryParams, Metric) {
    EXPECT_EQ(ok("/api/v1/heatmap?metric=e2e500").metric, Metric::e2e500);
    EXPECT_EQ(ok("/api/v1/distribution?metric=tpot").metric, Metric::tpot);
    EXPECT_EQ(ok("/api/v1/timeseries?metric=e2e").metric, Metric::e2e);
    for (auto bad : {"ttfb", "overhead", "TTFT", ""}) {
        const RequestError e = fails(std::string("/api/v1/heatmap?metric=") + bad);
        EXPECT_EQ(e.param, "metric");
        EXPECT_EQ(e.message,
                  fmt::format("metric: expected ttft, tpot, e2e or e2e500, got '{}'", bad));
    }
}

TEST(QueryParams, Quantiles) {
    EXPECT_EQ(ok("/api/v1/heatmap?q=0.99").quantiles, std::vector<double>{0.99});
    EXPECT_EQ(ok("/api/v1/timeseries?q=0.95,0.5,0.50").quantiles, (std::vector<double>{0.5, 0.95}));
    for (auto bad : {"0", "1", "-0.5", "1.5", "abc", "nan", "inf", "0.5,0.9", "", ".5x"}) {
        const RequestError e = fails(std::string("/api/v1/heatmap?q=") + bad);
        EXPECT_EQ(e.param, "q") << bad;
        EXPECT_EQ(e.message, fmt::format("q: expected a quantile in (0, 1) such as 0.5 or 0.99, "
                                         "got '{}'",
                                         bad));
    }
    for (auto bad : {"0.5,", "0.5,,0.9", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", "0.5,1"}) {
        const RequestError e = fails(std::string("/api/v1/timeseries?q=") + bad);
        EXPECT_EQ(e.param, "q") << bad;
        EXPECT_THAT(e.message, HasSubstr("q: expected up to 8 quantiles in (0, 1) separated by "
                                         "commas, such as 0.5,0.95, got '"));
    }
}

TEST(QueryParams, QuantileKeys) {
    EXPECT_EQ(quantile_key(0.5), "p50");
    EXPECT_EQ(quantile_key(0.95), "p95");
    EXPECT_EQ(quantile_key(0.99), "p99");
    EXPECT_EQ(quantile_key(0.999), "p99.9");
    EXPECT_EQ(quantile_key(0.05), "p5");
    EXPECT_EQ(quantile_key(0.07), "p7");
}

TEST(QueryParams, TimeZone) {
    const ApiRequest r = ok("/api/v1/heatmap?tz=America/New_York");
    EXPECT_EQ(r.tz, "America/New_York");
    EXPECT_EQ(r.zone.name(), "America/New_York");
    for (auto bad : {"Mars/Olympus", "../../etc/passwd", "/etc/localtime", "localtime", "EST5EDT/",
                     "America//New_York", "posixrules", ""}) {
        const RequestError e = fails(std::string("/api/v1/heatmap?tz=") + bad);
        EXPECT_EQ(e.param, "tz") << bad;
        EXPECT_THAT(e.message,
                    HasSubstr(fmt::format(
                        "tz: expected an IANA time zone such as America/New_York, got '{}'", bad)));
    }
    EXPECT_EQ(
        fails("/api/v1/heatmap?tz=Mars/Olympus").message,
        "tz: expected an IANA time zone such as America/New_York, got 'Mars/Olympus' (no such "
        "zone)");
    EXPECT_EQ(fails("/api/v1/leaderboard?tz=UTC").param, "tz");  // only the heatmap has hours
}

TEST(QueryParams, By) {
    EXPECT_EQ(
        ok("/api/v1/leaderboard?by=task,provider,client_region").by,
        (std::vector<Label>{Label::provider, Label::model, Label::task, Label::client_region}));
    EXPECT_EQ(ok("/api/v1/heatmap?by=model").heatmap_by, HeatmapBy::model);
    const RequestError label = fails("/api/v1/leaderboard?by=provider,region");
    EXPECT_EQ(label.param, "by");
    EXPECT_EQ(label.message,
              "by: expected a comma list of labels from provider, model, task, source, api, "
              "upstream_region, client_region, client_key, stream, got 'provider,region'");
    EXPECT_EQ(fails("/api/v1/leaderboard?by=").param, "by");
    EXPECT_EQ(fails("/api/v1/heatmap?by=hour").message,
              "by: expected weekday or model, got 'hour'");
    EXPECT_EQ(fails("/api/v1/regions?by=provider").param, "by");
}

TEST(QueryParams, Bucket) {
    EXPECT_EQ(ok("/api/v1/timeseries?window=6h").bucket, Resolution::minute);
    EXPECT_EQ(ok("/api/v1/timeseries?window=7h").bucket, Resolution::hour);
    EXPECT_EQ(ok("/api/v1/timeseries?window=15m&bucket=hour").bucket, Resolution::hour);
    EXPECT_EQ(ok("/api/v1/timeseries?bucket=minute&window=1h").bucket, Resolution::minute);
    EXPECT_EQ(fails("/api/v1/timeseries?bucket=day").message,
              "bucket: expected minute or hour, got 'day'");
    const RequestError e = fails("/api/v1/timeseries?bucket=minute&window=24h");
    EXPECT_EQ(e.param, "bucket");
    EXPECT_EQ(e.message,
              "bucket: minute buckets are kept for the last 6h, so window 24h needs bucket=hour "
              "(or a window up to 6h)");
    ParamLimits limits;
    limits.minute_retention = std::chrono::hours(2);
    EXPECT_EQ(ok("/api/v1/timeseries?window=3h", limits).bucket, Resolution::hour);
}

TEST(QueryParams, Points) {
    EXPECT_EQ(ok("/api/v1/distribution?points=2").points, 2u);
    EXPECT_EQ(ok("/api/v1/distribution?points=1000").points, 1000u);
    for (auto bad : {"1", "1001", "abc", "-5", "10.5", ""}) {
        const RequestError e = fails(std::string("/api/v1/distribution?points=") + bad);
        EXPECT_EQ(e.param, "points");
        EXPECT_EQ(e.message,
                  fmt::format("points: expected an integer from 2 to 1000, got '{}'", bad));
    }
}

// 100,000 submitted model names made a 52 MB leaderboard. Every answer that lists
// rows or series takes a `limit` with a maximum.
TEST(QueryParams, LimitHasADefaultAndAMaximumPerEndpoint) {
    EXPECT_EQ(ok("/api/v1/leaderboard").limit, 500u);
    EXPECT_EQ(ok("/api/v1/regions").limit, 500u);
    EXPECT_EQ(ok("/api/v1/heatmap?by=model").limit, 100u);
    EXPECT_EQ(ok("/api/v1/timeseries").limit, 20u);
    EXPECT_EQ(ok("/api/v1/distribution").limit, 20u);
    EXPECT_EQ(ok("/api/v1/leaderboard?limit=1").limit, 1u);
    EXPECT_EQ(ok("/api/v1/timeseries?limit=100").limit, 100u);
    for (auto bad : {"0", "501", "abc", "-1", ""}) {
        const RequestError e = fails(std::string("/api/v1/leaderboard?limit=") + bad);
        EXPECT_EQ(e.param, "limit");
        EXPECT_EQ(e.message,
                  fmt::format("limit: expected an integer from 1 to 500, got '{}'", bad));
    }
    EXPECT_EQ(fails("/api/v1/distribution?limit=101").message,
              "limit: expected an integer from 1 to 100, got '101'");
    EXPECT_EQ(fails("/api/v1/gateway?limit=5").param, "limit");
    EXPECT_EQ(fails("/api/v1/labels?limit=5").param, "limit");
    EXPECT_EQ(fails("/api/v1/leaderboard?limit=5&limit=6").param, "limit");
    EXPECT_NE(ok("/api/v1/leaderboard?limit=5").cache_key(), ok("/api/v1/leaderboard").cache_key());
    EXPECT_EQ(ok("/api/v1/leaderboard?limit=500").cache_key(),
              ok("/api/v1/leaderboard").cache_key());
}

TEST(QueryParams, UnknownOrForeignParametersAreNamed) {
    const RequestError unknown = fails("/api/v1/leaderboard?provder=x");
    EXPECT_EQ(unknown.param, "provder");
    EXPECT_EQ(unknown.message,
              "provder: not a parameter of /api/v1/leaderboard; expected one of window, by, "
              "limit, format, provider, model, task, source, api, upstream_region, client_region, "
              "client_key, stream");
    EXPECT_EQ(fails("/api/v1/leaderboard?metric=ttft").param, "metric");
    EXPECT_EQ(fails("/api/v1/regions?points=5").param, "points");
    EXPECT_EQ(fails("/api/v1/labels?provider=x").param, "provider");
    EXPECT_EQ(fails("/api/v1/labels?=x").message,
              "a parameter without a name: expected name=value");
    EXPECT_EQ(ok("/api/v1/labels?&window=1h&").window_us, kHourUs);  // empty items are skipped
}

TEST(QueryParams, CacheKeyIsTheNormalisedRequest) {
    const auto key = [](std::string_view t) { return ok(t).cache_key(); };
    EXPECT_EQ(key("/api/v1/leaderboard?provider=a&provider=b&window=1440m"),
              key("/api/v1/leaderboard?window=24h&provider=b&provider=a&provider=a"));
    EXPECT_EQ(key("/api/v1/leaderboard"), key("/api/v1/leaderboard?window=24h&by=model"));
    EXPECT_EQ(key("/api/v1/leaderboard?stream=true&stream=false"), key("/api/v1/leaderboard"));
    EXPECT_NE(key("/api/v1/leaderboard"), key("/api/v1/regions"));
    EXPECT_NE(key("/api/v1/leaderboard?provider=a,b"),
              key("/api/v1/leaderboard?provider=a&provider=b"));
    EXPECT_NE(key("/api/v1/leaderboard?provider=a"), key("/api/v1/leaderboard?model=a"));
    EXPECT_NE(key("/api/v1/timeseries?q=0.5"), key("/api/v1/timeseries?q=0.5,0.95"));
    EXPECT_NE(key("/api/v1/heatmap"), key("/api/v1/heatmap?tz=Europe/Paris"));
    EXPECT_NE(key("/api/v1/leaderboard"), key("/api/v1/leaderboard?by=task"));
}

}  // namespace
}  // namespace tokenradar::observatory
