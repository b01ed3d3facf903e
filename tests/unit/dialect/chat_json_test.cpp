#include "../../../src/dialect/chat_json.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::dialect {
namespace {

Message tool_result(std::string id) {
    Message m;
    m.role = Role::tool;
    m.tool_call_id = std::move(id);
    return m;
}

TEST(AppendTurn, ToolResultsComeBeforeTheTurnsOwnMessage) {
    Message turn;
    turn.content.push_back(ContentPart::make_text("and now?"));
    std::vector<Message> messages;
    append_turn(messages, turn, {tool_result("a"), tool_result("b")});
    ASSERT_EQ(messages.size(), 3u);
    EXPECT_EQ(messages[0].tool_call_id, "a");
    EXPECT_EQ(messages[1].tool_call_id, "b");
    EXPECT_EQ(messages[2], turn);
}

TEST(AppendTurn, ATurnOfResultsOnlyAddsNoMessageOfItsOwn) {
    std::vector<Message> messages;
    append_turn(messages, Message{}, {tool_result("a")});
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0].role, Role::tool);

    append_turn(messages, Message{}, {});  // an empty turn without results is kept
    EXPECT_EQ(messages.size(), 2u);
}

TEST(CallArguments, EmptyIsAnEmptyObjectAndOtherTextMustBeAnObject) {
    Path root;
    Path calls = root.key("tool_calls");
    Path call = calls.at(1);
    ToolCall tc;
    auto empty = call_arguments(tc, call);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());

    tc.arguments = R"({"city":"Paris"})";
    auto parsed = call_arguments(tc, call);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->at("city"), "Paris");

    tc.arguments = "[1]";
    auto refused = call_arguments(tc, call);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "tool_calls[1].arguments: expected a JSON object");
}

TEST(ToolParameters, NamesTheToolWhoseSchemaIsNotAnObject) {
    ToolDefinition tool;
    tool.name = "weather";
    tool.parameters = R"({"type":"object"})";
    ASSERT_TRUE(tool_parameters(tool));

    tool.parameters = "true";
    auto refused = tool_parameters(tool);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "tools: parameters of weather: expected a JSON object");
}

}  // namespace
}  // namespace tokenradar::dialect
