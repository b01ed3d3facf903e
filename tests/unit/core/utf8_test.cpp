#include <tokenradar/core/utf8.hpp>

#include <gtest/gtest.h>

namespace tokenradar {
namespace {

TEST(Utf8, DecodesValidSequences) {
    EXPECT_EQ(decode_utf8("a").size, 1u);
    EXPECT_EQ(decode_utf8("a").code_point, U'a');
    EXPECT_EQ(decode_utf8("\xc3\xa9").code_point, U'\u00e9');
    EXPECT_EQ(decode_utf8("\xe6\xa8\xa1").size, 3u);
    EXPECT_EQ(decode_utf8("\xf0\x9f\x98\x80").code_point, U'\U0001F600');
    EXPECT_EQ(decode_utf8("\xf4\x8f\xbf\xbf").code_point, char32_t{0x10FFFF});
}

TEST(Utf8, RefusesMalformedSequences) {
    for (std::string_view bad : {std::string_view(""), std::string_view("\x80"),
                                 std::string_view("\xc0\xaf"),          // overlong
                                 std::string_view("\xe0\x80\xaf"),      // overlong
                                 std::string_view("\xed\xa0\x80"),      // surrogate
                                 std::string_view("\xf4\x90\x80\x80"),  // past U+10FFFF
                                 std::string_view("\xe6\xa8"),          // truncated
                                 std::string_view("\xff")}) {
        EXPECT_EQ(decode_utf8(bad).size, 0u) << bad.size();
    }
}

TEST(Utf8, ValidUtf8ReplacesBadBytes) {
    EXPECT_EQ(valid_utf8("ok \xc3\xa9"), "ok \xc3\xa9");
    EXPECT_EQ(valid_utf8("a\xff"
                         "b"),
              "a\xEF\xBF\xBD"
              "b");
    EXPECT_EQ(valid_utf8("\xe6\xa8"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tokenradar
