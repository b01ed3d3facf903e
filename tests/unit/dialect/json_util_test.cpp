#include "../../../src/dialect/json_util.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::dialect {
namespace {

// Each member as key -> its value's text, and the closing brace's offset.
std::pair<std::vector<std::pair<std::string, std::string>>, std::optional<std::size_t>> scan(
    std::string_view text) {
    std::vector<std::pair<std::string, std::string>> members;
    MemberScanner scanner(text);
    while (const auto m = scanner.next()) {
        members.emplace_back(
            std::string(m->key),
            std::string(text.substr(m->value_begin, m->value_end - m->value_begin)));
    }
    return {members, scanner.closing_brace()};
}

// Brackets, braces, colons, commas and quotes inside strings are text, and an escaped
// backslash before a quote ends the string.
TEST(MemberScanner, FindsEachTopLevelMemberWhateverItsValueHolds) {
    const std::string text =
        R"(  { "a" : 1.5e3 , "b":[1,{"c":"]},\"}"}], "d":"x\\", "e":{} ,"f":null,"g":true}  )";
    const auto [members, close] = scan(text);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"a", "1.5e3"},    {"b", R"([1,{"c":"]},\"}"}])"},
        {"d", R"("x\\")"}, {"e", "{}"},
        {"f", "null"},     {"g", "true"}};
    EXPECT_EQ(members, expected);
    EXPECT_EQ(close, text.rfind('}'));

    const auto [none, empty_close] = scan(" {\n} ");
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(empty_close, 3u);

    const auto [escaped, escaped_close] = scan(R"({"mod\u0065l":"m"})");
    ASSERT_EQ(escaped.size(), 1u);
    EXPECT_EQ(escaped[0].first, R"(mod\u0065l)");  // as written: the caller decides
    EXPECT_TRUE(escaped_close);
}

TEST(MemberScanner, TextThatIsNotAnObjectHasNoClosingBrace) {
    for (std::string_view text : {R"([1])", R"({"a":1,})", R"({"a" 1})", R"({"a":"open)",
                                  R"({"a":1 "b":2})", R"({"a":})", "", "   "}) {
        EXPECT_FALSE(scan(text).second) << text;
    }
}

}  // namespace
}  // namespace tokenradar::dialect
