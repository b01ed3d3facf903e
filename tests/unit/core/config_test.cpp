#include <tokenradar/core/config.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar {
namespace {

using ::testing::HasSubstr;

std::string error_of(auto&& fn) {
    try {
        fn();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

TEST(Config, ReadsTypedValuesAndDefaults) {
    auto cfg = ConfigTable::parse(
        "name = \"x\"\nrate = 42\nratio = 0.5\non = true\n"
        "curve = [1, 1.5]\n[sub]\nk = \"v\"\n",
        "p.toml");
    EXPECT_EQ(cfg.require_string("name"), "x");
    EXPECT_EQ(cfg.get_number("rate", 0, 0, 100), 42);
    EXPECT_EQ(cfg.get_number("ratio", 0, 0, 1), 0.5);
    EXPECT_EQ(cfg.get_number("missing", 7, 0, 10), 7);
    EXPECT_TRUE(cfg.get_bool("on", false));
    EXPECT_EQ(cfg.get_numbers("curve"), (std::vector<double>{1, 1.5}));
    EXPECT_EQ(cfg.table("sub")->require_string("k"), "v");
}

TEST(Config, ErrorsNameFileLineKeyAndExpectation) {
    auto cfg = ConfigTable::parse("a = 1\n[decode]\ntokens_per_s = \"fast\"\n", "gpt.toml");
    auto msg = error_of([&] { cfg.table("decode")->get_number("tokens_per_s", 1, 0, 1e6); });
    EXPECT_THAT(msg, HasSubstr("gpt.toml:3"));
    EXPECT_THAT(msg, HasSubstr("decode.tokens_per_s"));
    EXPECT_THAT(msg, HasSubstr("expected a number"));
    EXPECT_THAT(msg, HasSubstr("\"fast\""));
}

TEST(Config, RangeAndUnknownKeysAreErrors) {
    auto cfg = ConfigTable::parse("rate = 500\ntypo = 1\n", "w.toml");
    EXPECT_THAT(error_of([&] { cfg.get_number("rate", 0, 0, 100); }),
                HasSubstr("w.toml:1: rate: expected a number from 0 to 100"));
    EXPECT_THAT(error_of([&] { cfg.reject_unknown_keys({"rate"}); }),
                HasSubstr("w.toml:2: unknown key 'typo'"));
}

TEST(Config, TableAsJsonObjectKeepsEachKind) {
    auto cfg = ConfigTable::parse(
        "[extra]\nignore_eos = true\nmin_tokens = 100\ntop_k = 0.5\n"
        "stop = [\"a\", 1]\nname = \"x\"\n[extra.nested]\nk = 2\n"
        "[dated]\nwhen = 2026-01-01\n",
        "w.toml");
    auto extra = cfg.json_object("extra");
    ASSERT_TRUE(extra);
    EXPECT_EQ(
        boost::json::value(*extra),
        boost::json::parse(
            R"({"ignore_eos":true,"min_tokens":100,"top_k":0.5,"stop":["a",1],"name":"x","nested":{"k":2}})"))
        << boost::json::serialize(*extra);
    EXPECT_TRUE(extra->at("min_tokens").is_int64());
    EXPECT_FALSE(cfg.json_object("missing"));
    EXPECT_THAT(error_of([&] { cfg.json_object("dated"); }),
                HasSubstr("w.toml:9: dated: expected a table of"));
}

TEST(Config, SyntaxErrorHasLineAndColumn) {
    EXPECT_THAT(error_of([] { ConfigTable::parse("a = 1\nb = [\n", "bad.toml"); }),
                HasSubstr("bad.toml:"));
    EXPECT_THAT(error_of([] { ConfigTable::load_file("/nonexistent/x.toml"); }),
                HasSubstr("/nonexistent/x.toml: no such file"));
}

}  // namespace
}  // namespace tokenradar
