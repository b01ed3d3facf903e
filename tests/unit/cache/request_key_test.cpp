#include <tokenradar/cache/request_key.hpp>

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

namespace tokenradar::cache {
namespace {

namespace json = boost::json;

json::object req(std::string_view text) { return json::parse(text).as_object(); }

std::string key(std::string_view text, std::string_view tenant = "team-a") {
    return exact_key(tenant, "fast", req(text));
}

TEST(RequestKey, FieldOrderWhitespaceAndTransportFieldsDoNotMatter) {
    const std::string a =
        key(R"({"model":"fast","messages":[{"role":"user","content":"hi"}],"temperature":0})");
    EXPECT_EQ(a.size(), kDigestSize);
    EXPECT_EQ(a, key(R"({ "temperature" : 0, "messages" : [ {"content":"hi", "role":"user"} ],
                         "model":"other", "stream":true, "stream_options":{"include_usage":true},
                         "user":"u-17", "metadata":{"trace":"x"} })"));
}

TEST(RequestKey, EveryValueMatters) {
    const std::string base =
        key(R"({"messages":[{"role":"user","content":"hi"}],"temperature":0})");
    for (
        const char* other : {
            R"({"messages":[{"role":"user","content":"hi!"}],"temperature":0})",
            R"({"messages":[{"role":"user","content":"hi"}],"temperature":0.1})",
            R"({"messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":5})",
            R"({"messages":[{"role":"system","content":"hi"}],"temperature":0})",
            R"({"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"temperature":0})",
            R"({"messages":[{"role":"user","content":"hi"}],"temperature":0,"tools":[{"type":"function","function":{"name":"f"}}]})",
            R"({"messages":[{"role":"user","content":"hi"}],"temperature":0,"response_format":{"type":"json_object"}})",
            R"({"messages":[{"role":"user","content":"hi"}],"temperature":0,"tool_choice":"none"})",
        }) {
        EXPECT_NE(base, key(other)) << other;
    }
}

TEST(RequestKey, TenantsAndVirtualModelsNeverShareAKey) {
    const auto body = R"({"messages":[{"role":"user","content":"hi"}]})";
    EXPECT_NE(key(body, "team-a"), key(body, "team-b"));
    EXPECT_NE(exact_key("", "fast", req(body)), exact_key("", "slow", req(body)));
    // The length prefix keeps "ab" + "c" apart from "a" + "bc".
    EXPECT_NE(exact_key("ab", "c", req(body)), exact_key("a", "bc", req(body)));
}

TEST(RequestKey, WhatACachedAnswerCannotServe) {
    EXPECT_FALSE(not_cacheable(req(R"({"temperature":0})"), false));
    EXPECT_FALSE(not_cacheable(req(R"({"temperature":0.7,"seed":4})"), false));
    EXPECT_TRUE(not_cacheable(req(R"({"temperature":0.7})"), false));
    EXPECT_TRUE(not_cacheable(req(R"({})"), false)) << "no temperature: the provider samples";
    EXPECT_FALSE(not_cacheable(req(R"({"temperature":0.7})"), true));
    EXPECT_TRUE(not_cacheable(req(R"({"temperature":0,"n":2})"), true));
    EXPECT_FALSE(not_cacheable(req(R"({"temperature":0,"n":1})"), true));
    EXPECT_TRUE(not_cacheable(req(R"({"logprobs":true})"), true));
    EXPECT_FALSE(not_cacheable(req(R"({"logprobs":false})"), true));
    EXPECT_TRUE(not_cacheable(req(R"({"modalities":["text","audio"]})"), true));
}

TEST(RequestKey, SemanticScopeHoldsEverythingButTheLastUserTurn) {
    const auto q1 = semantic_query(
        "t", "m",
        req(R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"What is the capital of France?"}],"temperature":0})"),
        1, 4096);
    const auto q2 = semantic_query(
        "t", "m",
        req(R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"capital of france"}],"temperature":0})"),
        1, 4096);
    const auto q3 = semantic_query(
        "t", "m",
        req(R"({"messages":[{"role":"system","content":"be long"},{"role":"user","content":"capital of france"}],"temperature":0})"),
        1, 4096);
    ASSERT_TRUE(q1 && q2 && q3);
    EXPECT_EQ(q1->question, "What is the capital of France?");
    EXPECT_EQ(q1->scope, q2->scope);
    EXPECT_NE(q1->scope, q3->scope) << "another system prompt is another scope";
    const auto other_tenant = semantic_query(
        "u", "m",
        req(R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"capital of france"}],"temperature":0})"),
        1, 4096);
    ASSERT_TRUE(other_tenant);
    EXPECT_NE(other_tenant->scope, q2->scope);
}

TEST(RequestKey, LongConversationsAndNonTextTurnsBypassTheSemanticCache) {
    EXPECT_FALSE(semantic_query(
        "t", "m",
        req(R"({"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]})"),
        1, 4096));
    EXPECT_FALSE(semantic_query(
        "t", "m",
        req(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})"),
        1, 4096));
    EXPECT_FALSE(semantic_query("t", "m",
                                req(R"({"messages":[{"role":"user","content":"abcdef"}]})"), 1, 5));
    EXPECT_FALSE(semantic_query("t", "m", req(R"({"messages":[]})"), 1, 4096));
}

}  // namespace
}  // namespace tokenradar::cache
