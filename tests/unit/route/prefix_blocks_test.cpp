#include <tokenradar/route/prefix_blocks.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::route {
namespace {

using dialect::ChatRequest;
using dialect::ContentPart;
using dialect::Message;
using dialect::Role;

Message message(Role role, std::string text) {
    Message m;
    m.role = role;
    m.content.push_back(ContentPart::make_text(std::move(text)));
    return m;
}

ChatRequest conversation(const std::string& system, std::initializer_list<std::string> turns) {
    ChatRequest chat;
    chat.model = "m";
    chat.messages.push_back(message(Role::system, system));
    bool user = true;
    for (const auto& t : turns) {
        chat.messages.push_back(message(user ? Role::user : Role::assistant, t));
        user = !user;
    }
    return chat;
}

TEST(PrefixBlocks, SharedPrefixesShareTheirChainedHashesAndNothingAfter) {
    const std::string system(1000, 's');
    const auto a = prefix_blocks(conversation(system, {"what is the capital of France?"}), 256, 64);
    const auto b = prefix_blocks(conversation(system, {"and of Spain, please tell me?"}), 256, 64);
    ASSERT_EQ(a.size(), 4u);  // (1000 + role and separator bytes + the question) / 256
    ASSERT_EQ(b.size(), 4u);
    EXPECT_EQ(a[0], b[0]);
    EXPECT_EQ(a[2], b[2]);
    EXPECT_NE(a[3], b[3]);  // the block holding the question
    // A later turn of the same conversation starts with all of the first turn's blocks.
    const auto turn2 = prefix_blocks(
        conversation(system, {"what is the capital of France?", std::string(300, 'p'), "why?"}),
        256, 64);
    ASSERT_GT(turn2.size(), a.size());
    EXPECT_TRUE(std::equal(a.begin(), a.end(), turn2.begin()));
}

TEST(PrefixBlocks, ChainingMakesABlockDependOnEverythingBeforeIt) {
    const auto a = prefix_blocks(conversation(std::string(600, 'x'), {"q"}), 256, 64);
    auto other = std::string(600, 'x');
    other[10] = 'y';
    const auto b = prefix_blocks(conversation(other, {"q"}), 256, 64);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]) << i;
}

TEST(PrefixBlocks, BoundedByMaxBlocksAndEmptyWhenShorterThanABlock) {
    EXPECT_EQ(prefix_blocks(conversation(std::string(10'000, 'x'), {"q"}), 256, 8).size(), 8u);
    EXPECT_TRUE(prefix_blocks(conversation("short", {"q"}), 256, 8).empty());
    EXPECT_TRUE(prefix_blocks(conversation(std::string(1000, 'x'), {"q"}), 0, 8).empty());
}

TEST(PrefixBlocks, ToolsComeFirstAndCount) {
    auto plain = conversation(std::string(600, 'x'), {"q"});
    auto with_tools = plain;
    dialect::ToolDefinition tool;
    tool.name = "get_weather";
    tool.parameters = "{}";
    with_tools.tools.push_back(tool);
    EXPECT_NE(prefix_blocks(plain, 256, 8)[0], prefix_blocks(with_tools, 256, 8)[0]);
}

TEST(AffinityTable, LongestKnownPrefixAndBoundedMemory) {
    AffinityTable table(8);
    const std::vector<std::uint64_t> first{1, 2, 3};
    table.remember(first, 0);
    const std::vector<std::uint64_t> longer{1, 2, 3, 4, 5};
    auto match = table.longest(longer);
    ASSERT_TRUE(match);
    EXPECT_EQ(match->upstream, 0u);
    EXPECT_EQ(match->blocks, 3u);
    table.remember(longer, 2);  // the latest server holds the shared blocks too
    match = table.longest(longer);
    ASSERT_TRUE(match);
    EXPECT_EQ(match->upstream, 2u);
    EXPECT_EQ(match->blocks, 5u);
    EXPECT_FALSE(table.longest(std::vector<std::uint64_t>{9, 10}));
    const std::vector<std::uint64_t> many{11, 12, 13, 14, 15, 16};
    table.remember(many, 1);
    EXPECT_EQ(table.size(), 8u);  // the oldest three forgotten
    EXPECT_FALSE(table.longest(std::vector<std::uint64_t>{1}));
    EXPECT_TRUE(table.longest(std::vector<std::uint64_t>{4}));
}

}  // namespace
}  // namespace tokenradar::route
