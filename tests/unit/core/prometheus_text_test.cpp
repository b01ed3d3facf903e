#include <tokenradar/core/prometheus_text.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>

namespace tokenradar {
namespace {

TEST(PrometheusText, LabelValuesAreEscapedAsTheExpositionFormatSays) {
    std::string out;
    PrometheusText::append_labels(out, {{"model", "a\"b\\c\nd"}, {"status", "ok"}});
    EXPECT_EQ(out, R"(model="a\"b\\c\nd",status="ok")");
    out.clear();
    PrometheusText::append_labels(out, {{"model", "\"\"\\"}});
    EXPECT_EQ(out, R"(model="\"\"\\")");
    out.clear();
    PrometheusText::append_labels(out, {{"model", ""}});
    EXPECT_EQ(out, R"(model="")");
    out.clear();
    PrometheusText::append_labels(out, {});
    EXPECT_EQ(out, "");
}

TEST(PrometheusText, WritesFamiliesAndSamplesLineByLine) {
    std::string out;
    PrometheusText text(out);
    text.family("x_total", MetricType::counter, "Things by outcome.");
    text.sample("x_total", {{"outcome", "ok"}}, std::uint64_t{3});
    text.sample("x_total", {{"outcome", "a\"b"}}, 4u);
    text.family("depth", MetricType::gauge, "Help with a \\ and a\nline break.");
    text.sample("depth", std::int64_t{-2});
    text.series("depth", R"(queue="q")", 0.25);
    EXPECT_EQ(out,
              "# HELP x_total Things by outcome.\n"
              "# TYPE x_total counter\n"
              "x_total{outcome=\"ok\"} 3\n"
              "x_total{outcome=\"a\\\"b\"} 4\n"
              "# HELP depth Help with a \\\\ and a\\nline break.\n"
              "# TYPE depth gauge\n"
              "depth -2\n"
              "depth{queue=\"q\"} 0.25\n");
}

TEST(PrometheusText, AHistogramHasCumulativeBucketsThenSumAndCount) {
    constexpr std::array<double, 2> kBounds{0.001, 10.0};
    constexpr std::array<std::uint64_t, 3> kCumulative{1, 3, 4};
    std::string out;
    PrometheusText text(out);
    text.family("d_seconds", MetricType::histogram, "Durations.");
    text.histogram("d_seconds", R"(model="m")", kBounds, kCumulative, 12.5, 4);
    text.histogram("d_seconds", "", kBounds, kCumulative, 0.000001, 4);
    EXPECT_EQ(out,
              "# HELP d_seconds Durations.\n"
              "# TYPE d_seconds histogram\n"
              "d_seconds_bucket{model=\"m\",le=\"0.001\"} 1\n"
              "d_seconds_bucket{model=\"m\",le=\"10\"} 3\n"
              "d_seconds_bucket{model=\"m\",le=\"+Inf\"} 4\n"
              "d_seconds_sum{model=\"m\"} 12.5\n"
              "d_seconds_count{model=\"m\"} 4\n"
              "d_seconds_bucket{le=\"0.001\"} 1\n"
              "d_seconds_bucket{le=\"10\"} 3\n"
              "d_seconds_bucket{le=\"+Inf\"} 4\n"
              "d_seconds_sum{} 1e-06\n"
              "d_seconds_count{} 4\n");
}

}  // namespace
}  // namespace tokenradar
