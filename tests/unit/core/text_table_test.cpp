#include <tokenradar/core/text_table.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TextTable sample() {
    TextTable t({{"name", TextTable::Align::left}, {"p50 (ms)"}, {"n"}});
    t.add_row({"gpt-4o", "280.5", "40"});
    t.add_row({"a,b \"quoted\"", "-"});  // short row: padded with an empty cell
    return t;
}

TEST(TextTable, AlignedPadsColumnsAndTrimsLineEnds) {
    EXPECT_EQ(sample().render_aligned(),
              "name          p50 (ms)   n\n"
              "gpt-4o           280.5  40\n"
              "a,b \"quoted\"         -\n");
}

TEST(TextTable, MarkdownMarksRightAlignedColumnsAndEscapesPipes) {
    TextTable t({{"provider", TextTable::Align::left}, {"TTFT"}});
    t.add_row({"a|b", "1.0"});
    EXPECT_EQ(t.render_markdown(),
              "| provider | TTFT |\n"
              "| --- | ---: |\n"
              "| a\\|b | 1.0 |\n");
}

TEST(TextTable, CsvQuotesOnlyWhatNeedsIt) {
    EXPECT_EQ(sample().render_csv(),
              "name,p50 (ms),n\n"
              "gpt-4o,280.5,40\n"
              "\"a,b \"\"quoted\"\"\",-,\n");
}

TEST(TextTable, NoRowsIsJustTheHeader) {
    TextTable t({{"a"}, {"b"}});
    EXPECT_EQ(t.rows(), 0u);
    EXPECT_EQ(t.render_csv(), "a,b\n");
    EXPECT_EQ(t.render_aligned(), "a  b\n");
}

}  // namespace
}  // namespace tokenradar
