#include <tokenradar/observatory/badge.hpp>

#include "observatory_records.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

namespace tokenradar::observatory {
namespace {

using test::kDay0;
using test::record;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kNow = kDay0 + 12 * kHourUs + 30 * kMinuteUs;

// The attribute `name` of the badge's root <svg>.
std::string svg_attribute(const std::string& svg, const std::string& name) {
    std::smatch m;
    const std::regex re("<svg[^>]* " + name + "=\"([^\"]*)\"");
    return std::regex_search(svg, m, re) ? m[1].str() : std::string();
}

// The fill of the value's rect (the second rect in the clip group).
std::string value_colour(const std::string& svg) {
    std::smatch m;
    const std::regex re(R"re(<rect x="\d+" width="\d+" height="20" fill="([^"]+)"/>)re");
    return std::regex_search(svg, m, re) ? m[1].str() : std::string();
}

TEST(BadgeSvg, TextWidthsComeFromVerdanasAdvanceTable) {
    // T 1243, T 1243, F 1178 and T 1243 units of 2048 per 11 px em.
    EXPECT_DOUBLE_EQ(verdana11_width("TTFT"), (1243 * 3 + 1178) * 11.0 / 2048);
    EXPECT_DOUBLE_EQ(verdana11_width("ms"), (1992 + 1067) * 11.0 / 2048);
    EXPECT_DOUBLE_EQ(verdana11_width("é"), 1303 * 11.0 / 2048);  // one code point, two bytes
    EXPECT_DOUBLE_EQ(verdana11_width(""), 0);
}

TEST(BadgeSvg, IsAFlatTwoPartBadgeSizedToItsText) {
    const std::string svg = badge_svg("gpt-4o TTFT p50", "281 ms", "#4c1");
    const int label_w =
        static_cast<int>(std::lround(verdana11_width("gpt-4o TTFT p50") * 10) + 5) / 10 + 10;
    const int value_w = static_cast<int>(std::lround(verdana11_width("281 ms") * 10) + 5) / 10 + 10;
    EXPECT_EQ(svg_attribute(svg, "width"), std::to_string(label_w + value_w));
    EXPECT_EQ(svg_attribute(svg, "height"), "20");
    EXPECT_THAT(svg,
                HasSubstr(fmt::format(R"(<rect width="{}" height="20" fill="#555"/>)", label_w)));
    EXPECT_EQ(value_colour(svg), "#4c1");
    EXPECT_THAT(svg, HasSubstr("<title>gpt-4o TTFT p50: 281 ms</title>"));
}

TEST(BadgeSvg, EveryTextIsXmlEscaped) {
    const std::string svg = badge_svg("<script>&\"'", "v<>", "#4c1");
    EXPECT_THAT(svg, Not(HasSubstr("<script>")));
    EXPECT_THAT(svg, HasSubstr(">&lt;script&gt;&amp;&quot;&apos;</text>"));
    EXPECT_THAT(svg, HasSubstr(R"(aria-label="&lt;script&gt;&amp;&quot;&apos;: v&lt;&gt;")"));
    EXPECT_EQ(xml_escape(R"(a&b<c>d"e'f)"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
}

class BadgeApiTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::vector<Measurement> records;
        // "fast": TTFT 200-239 ms, no errors; "slow": 700-739 ms, 4 of 40 failed.
        for (int i = 0; i < 40; ++i) {
            Measurement fast = record("fast", kNow - (i + 1) * kMinuteUs, 200 + i);
            fast.request_id = fmt::format("f{}", i);
            records.push_back(std::move(fast));
            Measurement slow = record("slow", kNow - (i + 1) * kMinuteUs, 700 + i);
            slow.request_id = fmt::format("s{}", i);
            if (i < 4) slow.status = RequestStatus::http(500);
            records.push_back(std::move(slow));
        }
        index_.add(records);
    }

    ApiResponse get(std::string_view target, std::string_view inm = "") {
        return badges_.get(target, inm, kNow);
    }

    RollupIndex index_;
    QueryApi queries_{index_};
    BadgeApi badges_{queries_};
};

TEST_F(BadgeApiTest, ValuesAndColoursFollowTheLeaderboard) {
    const ApiResponse fast = get("/badge/fast/m/ttft_p50.svg");
    ASSERT_EQ(fast.status, 200) << fast.body;
    EXPECT_EQ(fast.content_type, "image/svg+xml; charset=utf-8");
    EXPECT_EQ(fast.cache_control, "public, max-age=60");
    EXPECT_THAT(fast.etag, ::testing::StartsWith("\"b"));
    const std::string leaderboard =
        queries_.get("/api/v1/leaderboard?provider=fast", "", kNow).body;
    EXPECT_THAT(leaderboard, HasSubstr(R"("ttft_ms":{"p50":218.1,)"));
    EXPECT_THAT(fast.body, HasSubstr("<title>m TTFT p50: 218 ms</title>"));
    EXPECT_EQ(value_colour(fast.body), "#4c1");

    const ApiResponse slow = get("/badge/slow/m/ttft_p50.svg");
    EXPECT_THAT(slow.body, HasSubstr(": 717 ms</title>"));
    EXPECT_EQ(value_colour(slow.body), "#dfb317");  // over 500 ms, up to 1000

    const ApiResponse errors = get("/badge/slow/m/error_rate.svg");
    EXPECT_THAT(errors.body, HasSubstr("<title>m errors: 10.0%</title>"));
    EXPECT_EQ(value_colour(errors.body), "#e05d44");  // over 5%
    EXPECT_THAT(get("/badge/fast/m/error_rate.svg").body, HasSubstr(": 0.0%</title>"));

    EXPECT_THAT(get("/badge/fast/m/tpot_p50.svg").body, HasSubstr("TPOT p50: 20 ms</title>"));
    EXPECT_THAT(get("/badge/fast/m/tps_p50.svg").body, HasSubstr("tok/s p50: 50 tok/s</title>"));
    EXPECT_THAT(get("/badge/fast/m/e2e_p50.svg").body, HasSubstr("E2E p50: 417 ms</title>"));
}

TEST_F(BadgeApiTest, UnknownOrThinDataIsGreyNotApplicable) {
    const ApiResponse nobody = get("/badge/nobody/m/ttft_p95.svg");
    EXPECT_EQ(nobody.status, 200);
    EXPECT_THAT(nobody.body, HasSubstr("<title>m TTFT p95: n/a</title>"));
    EXPECT_EQ(value_colour(nobody.body), "#9f9f9f");
    // A 15-minute window holds 15 records: under min_samples.
    EXPECT_THAT(get("/badge/fast/m/ttft_p50.svg?window=15m").body, HasSubstr(": n/a</title>"));
}

TEST_F(BadgeApiTest, StatusIsTheStatusPagesWordInItsColour) {
    const ApiResponse s = get("/badge/fast/m/status.svg");
    ASSERT_EQ(s.status, 200) << s.body;
    EXPECT_THAT(s.body, HasSubstr("<title>m status: green</title>"));
    EXPECT_EQ(value_colour(s.body), "#4c1");
    EXPECT_EQ(get("/badge/fast/m/status.svg?window=1h").status, 400);
}

TEST_F(BadgeApiTest, LabelsAndPathSegmentsAreDecodedBoundedAndEscaped) {
    const ApiResponse custom = get("/badge/fast/m/ttft_p50.svg?label=%3Cscript%3E%26%22%27");
    ASSERT_EQ(custom.status, 200) << custom.body;
    EXPECT_THAT(custom.body, Not(HasSubstr("<script>")));
    EXPECT_THAT(custom.body, HasSubstr(">&lt;script&gt;&amp;&quot;&apos;</text>"));

    // Segments are percent-decoded: fa%73t is fast.
    EXPECT_THAT(get("/badge/fa%73t/m/ttft_p50.svg").body, HasSubstr("<title>m TTFT p50: 218 ms"));
    EXPECT_EQ(get(fmt::format("/badge/fast/m/ttft_p50.svg?label={}", std::string(64, 'x'))).status,
              200);
    EXPECT_EQ(get(fmt::format("/badge/fast/m/ttft_p50.svg?label={}", std::string(65, 'x'))).status,
              400);
    EXPECT_EQ(get(fmt::format("/badge/{}/m/ttft_p50.svg", std::string(129, 'p'))).status, 400);
    EXPECT_EQ(get("/badge/fast/m%0A/ttft_p50.svg").status, 400);  // a control character
    EXPECT_EQ(get("/badge/fast/m/ttft_p50.svg?color=red").status, 400);

    const ApiResponse unknown = get("/badge/fast/m/p99.svg");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_EQ(unknown.cache_control, "no-store");
    EXPECT_EQ(unknown.content_type, "image/svg+xml; charset=utf-8");
    EXPECT_THAT(unknown.body, HasSubstr("metric: expected ttft_p50, ttft_p95, tpot_p50, e2e_p50, "
                                        "tps_p50, error_rate or status, got &apos;p99&apos;"));
    EXPECT_EQ(get("/badge/fast/m/ttft_p50.png").status, 404);
    EXPECT_EQ(get("/badge/fast/ttft_p50.svg").status, 404);
}

TEST_F(BadgeApiTest, RepeatedFetchesAreCachedUntilTheDataOrTheMinuteChange) {
    const std::string target = "/badge/fast/m/ttft_p50.svg";
    EXPECT_FALSE(badges_.cached(target, "", kNow).has_value());
    const ApiResponse first = get(target);
    const auto hit = badges_.cached(target, "", kNow + 1'000'000);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->body, first.body);
    EXPECT_EQ(get(target, first.etag).status, 304);
    EXPECT_TRUE(get(target, first.etag).body.empty());

    EXPECT_FALSE(badges_.cached(target, "", kNow + kMinuteUs).has_value());  // the next minute
    Measurement late = record("fast", kNow - 1'000'000, 5000);
    late.request_id = "late";
    index_.add(std::vector<Measurement>{late});
    EXPECT_FALSE(badges_.cached(target, "", kNow).has_value());  // new data
}

TEST_F(BadgeApiTest, TheCacheKeepsAtMostItsEntriesDroppingTheOldest) {
    BadgeApi small(queries_, BadgeOptions{2});
    EXPECT_EQ(small.get("/badge/fast/m/ttft_p50.svg", "", kNow).status, 200);
    EXPECT_EQ(small.get("/badge/fast/m/ttft_p95.svg", "", kNow).status, 200);
    EXPECT_EQ(small.get("/badge/fast/m/tpot_p50.svg", "", kNow).status, 200);
    EXPECT_FALSE(small.cached("/badge/fast/m/ttft_p50.svg", "", kNow).has_value());
    EXPECT_TRUE(small.cached("/badge/fast/m/ttft_p95.svg", "", kNow).has_value());
    EXPECT_TRUE(small.cached("/badge/fast/m/tpot_p50.svg", "", kNow).has_value());
}

}  // namespace
}  // namespace tokenradar::observatory
