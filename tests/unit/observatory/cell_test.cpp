#include <tokenradar/observatory/cell.hpp>

#include <gtest/gtest.h>

namespace tokenradar::observatory {
namespace {

TEST(Cell, LabelNamesRoundTrip) {
    for (Label label : kCellLabels) EXPECT_EQ(parse_cell_label(label_name(label)), label);
    EXPECT_EQ(parse_cell_label("endpoint"), std::nullopt);
    EXPECT_EQ(parse_cell_label(""), std::nullopt);
}

TEST(Cell, KeyTakesTheCellLabelsOfARecord) {
    Labels l;
    l.provider = "openai";
    l.model = "gpt-4o";
    l.task = "chat";
    l.source = "gateway";
    l.api = "openai";
    l.upstream_region = "us-east";
    l.client_region = "eu-west";
    l.endpoint = "api.openai.com";
    l.stream = false;
    const CellKey key = CellKey::of(l);
    EXPECT_EQ(key.value(Label::provider), "openai");
    EXPECT_EQ(key.value(Label::client_region), "eu-west");
    EXPECT_EQ(key.value(Label::stream), "false");
    EXPECT_TRUE(key.matches(l));
    l.cache = Cache::exact;  // counted inside a cell, not part of its key
    l.endpoint = "other";
    EXPECT_EQ(CellKey::of(l), key);
    EXPECT_TRUE(key.matches(l));
    l.stream = true;
    EXPECT_FALSE(key.matches(l));
    EXPECT_LT(key, CellKey::of(l));  // cells sort as before: stream false before true
    l.stream = false;
    l.client_key = "team-a";  // a gateway's client key splits cells
    EXPECT_FALSE(key.matches(l));
    EXPECT_EQ(CellKey::of(l).value(Label::client_key), "team-a");
}

TEST(Cell, CellLabelsComeFromTheLabelTableInSlotOrder) {
    EXPECT_EQ(kCellLabels, (std::array{Label::provider, Label::model, Label::task, Label::source,
                                       Label::api, Label::upstream_region, Label::client_region,
                                       Label::client_key, Label::stream}));
    for (std::size_t i = 0; i < kCellLabelCount; ++i) EXPECT_EQ(cell_slot(kCellLabels[i]), i);
    EXPECT_FALSE(is_cell_label(Label::cache));
    EXPECT_EQ(parse_cell_label("route"), std::nullopt);
}

TEST(Cell, LabelValuesAllowPrintableTextAndMarkup) {
    EXPECT_TRUE(check_label_value("model", "gpt-4o"));
    EXPECT_TRUE(check_label_value("model", "<img src=x onerror=alert(1)>"));
    EXPECT_TRUE(check_label_value("model", "模型 é"));
    EXPECT_TRUE(check_label_value("model", ""));
    EXPECT_TRUE(check_label_value("model", std::string(kMaxLabelBytes, 'a')));
}

TEST(Cell, LabelValuesRejectControlsBadUtf8LengthAndBlank) {
    const auto message = [](std::string_view v) {
        auto r = check_label_value("model", v);
        return r ? std::string{} : r.error().message;
    };
    EXPECT_EQ(message(std::string(kMaxLabelBytes + 1, 'a')),
              "model: expected at most 128 bytes, got 129");
    EXPECT_EQ(message("a\nb"), "model: expected no control characters, got U+000A at offset 1");
    EXPECT_EQ(message("a\x7f"), "model: expected no control characters, got U+007F at offset 1");
    EXPECT_EQ(message("\xc2\x85"), "model: expected no control characters, got U+0085 at offset 0");
    EXPECT_EQ(message("ok\xff"), "model: expected UTF-8 text, got a malformed byte at offset 2");
    EXPECT_EQ(message("\xc0\xaf"),
              "model: expected UTF-8 text, got a malformed byte at offset 0");  // overlong
    EXPECT_EQ(message("\xed\xa0\x80"),
              "model: expected UTF-8 text, got a malformed byte at offset 0");  // surrogate
    EXPECT_EQ(message("\xe6\xa8"),
              "model: expected UTF-8 text, got a malformed byte at offset 0");  // truncated
    EXPECT_EQ(message("   "), "model: expected text, got only spaces");
}

}  // namespace
}  // namespace tokenradar::observatory
