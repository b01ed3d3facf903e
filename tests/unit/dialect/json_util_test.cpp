#include "../../../src/dialect/json_util.hpp"

#include <gtest/gtest.h>

#include <cstdint>
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

TEST(ForEachObject, StopsAtTheFirstElementThatIsNotAnObjectOrAtAFailure) {
    const json::array a = json::parse(R"([{"n":1},{"n":"x"},{"n":3}])").as_array();
    Reader r(Errc::bad_request);
    Path root;
    Path items = root.key("items");
    std::vector<std::int64_t> seen;
    for_each_object(r, a, items, [&](const json::object& item, const Path& path) {
        if (auto n = r.integer(item, "n", path)) seen.push_back(*n);
    });
    EXPECT_EQ(seen, std::vector<std::int64_t>{1});
    ASSERT_TRUE(r.failed());
    EXPECT_EQ(r.take_error().message, "items[1].n: expected an integer");

    Reader not_objects(Errc::bad_request);
    for_each_object(not_objects, json::parse("[{}, 2]").as_array(), items,
                    [&](const json::object&, const Path&) {});
    EXPECT_EQ(not_objects.take_error().message, "items[1]: expected an object");
}

TEST(ReadStrings, AppendsUntilAnElementIsNotAString) {
    Reader r(Errc::bad_request);
    Path root;
    Path stop = root.key("stop");
    std::vector<std::string> out;
    read_strings(r, json::parse(R"(["a","b"])").as_array(), stop, out);
    EXPECT_FALSE(r.failed());
    EXPECT_EQ(out, (std::vector<std::string>{"a", "b"}));
    read_strings(r, json::parse(R"(["c",1,"d"])").as_array(), stop, out);
    EXPECT_EQ(out.back(), "c");
    EXPECT_EQ(r.take_error().message, "stop[1]: expected a string");
}

}  // namespace
}  // namespace tokenradar::dialect
