// Tests of src/observatory/json_out.cpp (private).
#include "../../../src/observatory/json_out.hpp"

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <limits>

namespace tokenradar::observatory {
namespace {

TEST(JsonOut, WritesNestedContainersWithCommas) {
    JsonOut out;
    out.begin_object();
    out.key("a").integer(-1);
    out.key("b").begin_array().unsigned_integer(2).boolean(true).null().begin_object().end_object();
    out.end_array();
    out.key("c").begin_array().end_array();
    out.end_object();
    EXPECT_EQ(out.text(), R"({"a":-1,"b":[2,true,null,{}],"c":[]})");
}

TEST(JsonOut, NumbersReadAsPeopleWriteThem) {
    JsonOut out;
    out.begin_array().number(281.2).number(12100.0).number(0.04123).number(0.5).number(-0.0);
    out.number(std::numeric_limits<double>::quiet_NaN())
        .number(std::numeric_limits<double>::infinity());
    out.end_array();
    EXPECT_EQ(out.text(), "[281.2,12100,0.04123,0.5,0,null,null]");
}

TEST(JsonOut, EscapesStrings) {
    JsonOut out;
    out.begin_object();
    out.key("k\"").string(std::string("a\"b\\c\n\t\r\x01\x1f d\0e", 14));
    out.key("html").string("<img src=x onerror=alert(1)>");
    out.key("utf8").string("\xC3\xA9");
    out.end_object();
    EXPECT_EQ(
        out.text(),
        R"({"k\"":"a\"b\\c\n\t\r\u0001\u001f d\u0000e","html":"<img src=x onerror=alert(1)>","utf8":"é"})");
    const auto parsed = boost::json::parse(out.text()).as_object();
    EXPECT_EQ(parsed.at("k\"").as_string(), std::string_view("a\"b\\c\n\t\r\x01\x1f d\0e", 14));
}

}  // namespace
}  // namespace tokenradar::observatory
