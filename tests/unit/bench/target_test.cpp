#include <tokenradar/bench/target.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tokenradar::bench {
namespace {

using ::testing::HasSubstr;

const EnvLookup kEnv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "OPENAI_API_KEY") return "sk-openai";
    if (name == "MY_KEY") return "sk-mine";
    return std::nullopt;
};

TEST(Target, ParsesNameApiBaseAndModel) {
    auto t = parse_target("gpt4o=openai:https://api.openai.com/v1#gpt-4o", {}, kEnv).value();
    EXPECT_EQ(t.name, "gpt4o");
    EXPECT_EQ(t.api, dialect::Api::openai);
    EXPECT_EQ(t.base.host, "api.openai.com");
    EXPECT_EQ(t.base.port, 443);
    EXPECT_EQ(t.base.target, "/v1");
    EXPECT_EQ(t.model, "gpt-4o");
    EXPECT_EQ(t.key.reveal(), "sk-openai");
}

TEST(Target, DefaultKeysGoOnlyToTheOfficialHostOrThisMachine) {
    EXPECT_EQ(parse_target("a=openai:http://127.0.0.1:8101/v1#m", {}, kEnv)->key.reveal(),
              "sk-openai");
    EXPECT_TRUE(parse_target("a=openai:https://llm.example.com/v1#m", {}, kEnv)->key.empty());
    const std::map<std::string, std::string> named{{"a", "MY_KEY"}};
    EXPECT_EQ(parse_target("a=openai:https://llm.example.com/v1#m", named, kEnv)->key.reveal(),
              "sk-mine");
    const std::map<std::string, std::string> all{{"*", "MY_KEY"}};
    EXPECT_EQ(parse_target("b=anthropic:https://proxy.example.com#m", all, kEnv)->key.reveal(),
              "sk-mine");
}

TEST(Target, MalformedSpecsSayWhatIsExpected) {
    const auto error_of = [](std::string_view spec) {
        return parse_target(spec, {}, kEnv).error().message;
    };
    EXPECT_THAT(error_of("openai:https://x/v1#m"), HasSubstr("missing NAME="));
    EXPECT_THAT(error_of("a=bard:https://x/v1#m"), HasSubstr("unknown API 'bard'"));
    EXPECT_THAT(error_of("a=openai:https://x/v1"), HasSubstr("missing #MODEL"));
    EXPECT_THAT(error_of("a=openai:gopher://x/v1#m"), HasSubstr("scheme"));
    EXPECT_THAT(error_of("a=openai:https://x/v1"), HasSubstr("expected NAME=API:BASE_URL#MODEL"));
}

}  // namespace
}  // namespace tokenradar::bench
