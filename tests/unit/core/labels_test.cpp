#include <tokenradar/core/labels.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

TEST(Labels, TableFollowsMetricsSpecOrder) {
    EXPECT_EQ(label_names(),
              "provider, model, endpoint, upstream_region, client_region, task, source, cache, "
              "route, api, stream, client_key");
    std::set<std::string_view> names;
    for (const LabelInfo& info : kLabelTable) EXPECT_TRUE(names.insert(info.name).second);
}

TEST(Labels, EveryLabelRoundTripsNameAndMember) {
    for (const LabelInfo& info : kLabelTable) {
        SCOPED_TRACE(info.name);
        EXPECT_EQ(parse_label(info.name), info.label);
        EXPECT_EQ(label_name(info.label), info.name);
        EXPECT_EQ(&label_info(info.label), &info);
        // A value it may take, other than the default, goes into its member and comes back out.
        std::string_view value = "some-value";
        for (std::string_view v : info.values) {
            if (v != label_value(Labels{}, info.label)) value = v;
        }
        Labels labels;
        ASSERT_TRUE(set_label(labels, info.label, value));
        EXPECT_EQ(label_value(labels, info.label), value);
        EXPECT_NE(labels, Labels{}) << "the value landed in no member (or in the default)";
        // Only its own member changed.
        for (const LabelInfo& other : kLabelTable) {
            if (other.label == info.label) continue;
            EXPECT_EQ(label_value(labels, other.label), label_value(Labels{}, other.label))
                << other.name;
        }
    }
    EXPECT_EQ(parse_label("region"), std::nullopt);
    EXPECT_EQ(parse_label(""), std::nullopt);
}

TEST(Labels, MembersAreReadThroughTheTable) {
    Labels l;
    l.provider = "openai";
    l.upstream_region = "us-east";
    l.cache = Cache::exact;
    l.route = Route::fallback;
    l.stream = false;
    EXPECT_EQ(label_value(l, Label::provider), "openai");
    EXPECT_EQ(label_value(l, Label::upstream_region), "us-east");
    EXPECT_EQ(label_value(l, Label::cache), "exact");
    EXPECT_EQ(label_value(l, Label::route), "fallback");
    EXPECT_EQ(label_value(l, Label::stream), "false");
    EXPECT_EQ(label_value(Labels{}, Label::cache), "bypass");
    EXPECT_EQ(label_value(Labels{}, Label::route), "primary");
}

TEST(Labels, ClosedLabelsRefuseOtherValuesNamingTheLabel) {
    Labels l;
    const auto error = [&](Label label, std::string_view text) {
        auto r = set_label(l, label, text);
        return r ? std::string("no error") : r.error().message;
    };
    EXPECT_EQ(error(Label::cache, "maybe"), "cache: expected one of miss, exact, semantic, bypass");
    EXPECT_EQ(error(Label::route, ""),
              "route: expected one of primary, fallback, hedge, latency, affinity, local, region");
    EXPECT_EQ(error(Label::source, "mine"),
              "source: expected one of bench, gateway, submitted, sim, probe");
    EXPECT_EQ(error(Label::api, "cohere"), "api: expected one of openai, anthropic, gemini");
    EXPECT_EQ(error(Label::stream, "yes"), "stream: expected one of false, true");
    EXPECT_EQ(l, Labels{});  // nothing changed
    // An empty text label is unset, and allowed.
    EXPECT_EQ(error(Label::source, ""), "no error");
    EXPECT_EQ(error(Label::api, ""), "no error");
    EXPECT_EQ(error(Label::task, "anything at all"), "no error");
}

TEST(Labels, RouteAndCacheRoundTripTheirText) {
    for (std::size_t i = 0; i < kRouteNames.size(); ++i) {
        const auto r = static_cast<Route>(i);
        EXPECT_EQ(parse_route(to_string(r)).value(), r);
    }
    for (std::size_t i = 0; i < kCacheNames.size(); ++i) {
        const auto c = static_cast<Cache>(i);
        EXPECT_EQ(parse_cache(to_string(c)).value(), c);
    }
    EXPECT_EQ(to_string(Route::hedge), "hedge");
    EXPECT_EQ(to_string(Cache::semantic), "semantic");
    auto route = parse_route("sideways");
    ASSERT_FALSE(route);
    EXPECT_EQ(route.error().code, make_error_code(Errc::bad_request));
    EXPECT_EQ(route.error().message,
              "route: expected one of primary, fallback, hedge, latency, affinity, local, region");
    auto cache = parse_cache("Exact");
    ASSERT_FALSE(cache);
    EXPECT_THAT(cache.error().message, HasSubstr("cache: expected one of miss"));
}

TEST(Labels, CellPartsKeyNineLabelsCountTwoAndLeaveOutEndpoint) {
    std::set<int> slots;
    std::size_t keys = 0;
    for (const LabelInfo& info : kLabelTable) {
        if (info.cell.role == CellRole::key) {
            ++keys;
            EXPECT_TRUE(slots.insert(info.cell.slot).second) << info.name;
        }
    }
    EXPECT_EQ(keys, 9u);
    EXPECT_EQ(*slots.rbegin(), 8);
    // The store's rollup rows keep stream (an integer column) after the text labels.
    EXPECT_EQ(label_info(Label::stream).cell.slot, 8);
    EXPECT_EQ(label_info(Label::cache).cell.role, CellRole::counted);
    EXPECT_EQ(label_info(Label::route).cell.role, CellRole::counted);
    EXPECT_EQ(label_info(Label::endpoint).cell.role, CellRole::left_out);
}

TEST(Labels, SimpleNames) {
    EXPECT_TRUE(is_simple_name("gen-500"));
    EXPECT_TRUE(is_simple_name("us_east.1"));
    EXPECT_TRUE(is_simple_name(std::string(64, 'a')));
    EXPECT_FALSE(is_simple_name(std::string(65, 'a')));
    EXPECT_FALSE(is_simple_name(""));
    EXPECT_FALSE(is_simple_name("a b"));
    EXPECT_FALSE(is_simple_name("a/b"));
    EXPECT_FALSE(is_simple_name("é"));
}

}  // namespace
}  // namespace tokenradar
