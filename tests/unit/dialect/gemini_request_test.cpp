#include <tokenradar/dialect/gemini.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;

TEST(GeminiRequest, ParsesWithModelAndStreamFromThePath) {
    auto req =
        parse_gemini_request(read_fixture("gemini/request_basic.json"), "gemini-2.0-flash", true);
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->model, "gemini-2.0-flash");
    EXPECT_TRUE(req->stream);
    EXPECT_TRUE(req->include_usage);
    ASSERT_EQ(req->messages.size(), 2u);
    EXPECT_EQ(req->messages[0].role, Role::system);
    EXPECT_EQ(req->max_tokens, 64);
    EXPECT_EQ(req->top_p, 0.9);
    EXPECT_EQ(req->stop, std::vector<std::string>{"END"});
    EXPECT_EQ(gemini_path("gemini-2.0-flash", true),
              "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse");
}

TEST(GeminiRequest, ParsesToolsImagesAndResults) {
    auto req = parse_gemini_request(read_fixture("gemini/request_tools.json"), "m", false);
    ASSERT_TRUE(req) << req.error().message;
    ASSERT_EQ(req->messages.size(), 3u);
    EXPECT_EQ(req->messages[0].content[1].kind, ContentPart::Kind::image_base64);
    EXPECT_EQ(req->messages[0].content[2].kind, ContentPart::Kind::image_url);
    EXPECT_EQ(req->messages[0].content[2].media_type, "image/png");
    EXPECT_EQ(req->messages[1].role, Role::assistant);
    EXPECT_EQ(req->messages[1].tool_calls.at(0).name, "get_weather");
    EXPECT_EQ(req->messages[2].role, Role::tool);
    EXPECT_EQ(req->messages[2].name, "get_weather");
    EXPECT_EQ(req->messages[2].content.at(0).text, "18C, cloudy");
    ASSERT_EQ(req->tools.size(), 1u);
}

TEST(GeminiRequest, RoundTrips) {
    for (const char* f : {"gemini/request_basic.json", "gemini/request_tools.json"}) {
        auto req = parse_gemini_request(read_fixture(f), "gemini-x", false);
        ASSERT_TRUE(req) << f;
        auto body = emit_gemini_request(*req);
        ASSERT_TRUE(body) << body.error().message;
        auto again = parse_gemini_request(*body, "gemini-x", false);
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_EQ(*again, *req) << *body;
    }
}

TEST(GeminiRequest, ErrorsNameTheFieldPath) {
    struct Case {
        const char* body;
        const char* message;
    } cases[] = {
        {R"({})", "contents: required"},
        {R"({"contents":[{"role":"assistant","parts":[]}]})",
         "contents[0].role: expected one of user, model"},
        {R"({"contents":[{"role":"user"}]})", "contents[0].parts: required"},
        {R"({"contents":[{"role":"user","parts":[{"inlineData":{"data":"x"}}]}]})",
         "contents[0].parts[0].inlineData.mimeType: required"},
        {R"({"contents":[{"role":"user","parts":[{"video":1}]}]})",
         "contents[0].parts[0]: expected one of text, inlineData, fileData, functionCall, "
         "functionResponse"},
        {R"({"contents":[],"generationConfig":{"maxOutputTokens":1.5}})",
         "generationConfig.maxOutputTokens: expected an integer"},
        {R"({"contents":[],"generationConfig":{"temperature":1e999}})",
         "generationConfig.temperature: expected a number from 0 to 2"},
        {R"({"contents":[],"generationConfig":{"topP":-1e999}})",
         "generationConfig.topP: expected a number from 0 to 1"},
        {R"({"contents":[],"generationConfig":{"maxOutputTokens":-3}})",
         "generationConfig.maxOutputTokens: expected an integer of at least 0"},
    };
    for (const auto& c : cases) {
        auto r = parse_gemini_request(c.body, "m", false);
        ASSERT_FALSE(r) << c.body;
        EXPECT_EQ(r.error().message, c.message);
    }
}

TEST(GeminiRequest, EmitLooksUpFunctionNameForToolResults) {
    auto oa = parse_request(Api::openai, read_fixture("openai/request_tools.json"));
    ASSERT_TRUE(oa);
    auto body = emit_gemini_request(*oa);
    ASSERT_TRUE(body) << body.error().message;
    EXPECT_NE(
        body->find(
            R"({"functionResponse":{"name":"get_weather","id":"call_1","response":{"result":"18C, cloudy"}}})"),
        std::string::npos)
        << *body;
    EXPECT_NE(body->find(R"("systemInstruction":{"parts":[{"text":"Use tools."}]})"),
              std::string::npos);
    EXPECT_NE(body->find(R"("generationConfig":{"maxOutputTokens":256,"stopSequences":["END"]})"),
              std::string::npos);
    oa->messages[3].tool_call_id = "unknown";
    auto bad = emit_gemini_request(*oa);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message.rfind("messages[3].tool_call_id: ", 0), 0u);
}

TEST(GeminiRequest, EmitGuessesImageMimeTypesAndMergesResultsWithTheNextUserTurn) {
    auto oa = parse_request(Api::openai, R"({"model":"m","messages":[
        {"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.PNG?s=1"}},
            {"type":"image_url","image_url":{"url":"https://x/b.webp"}},
            {"type":"image_url","image_url":{"url":"https://x/c"}}]},
        {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"f","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"c1","content":"ok"},
        {"role":"user","content":"next"}],
        "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",
            "additionalProperties":false}}}]})");
    ASSERT_TRUE(oa) << oa.error().message;
    auto body = emit_gemini_request(*oa);
    ASSERT_TRUE(body) << body.error().message;
    for (const char* part :
         {R"({"mimeType":"image/png","fileUri":"https://x/a.PNG?s=1"})",
          R"({"mimeType":"image/webp","fileUri":"https://x/b.webp"})",
          R"({"mimeType":"image/jpeg","fileUri":"https://x/c"})",
          // content "" beside a call is not sent as an empty text part
          R"({"role":"model","parts":[{"functionCall":)",
          // the result and the next question share one user turn
          R"(,{"text":"next"}]})",
          // JSON Schema goes where Gemini takes JSON Schema
          R"("parametersJsonSchema":{"type":"object","additionalProperties":false})"}) {
        EXPECT_NE(body->find(part), std::string::npos) << part << "\n" << *body;
    }
    EXPECT_EQ(body->find(R"("parameters":)"), std::string::npos);
}

TEST(GeminiRequest, ThoughtSignaturesOfFunctionCallsRoundTrip) {
    auto req = parse_gemini_request(R"({"contents":[{"role":"model","parts":[
        {"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2ln"},
        {"functionCall":{"name":"g","args":{}}}]}]})",
                                    "m", false);
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->messages.at(0).tool_calls.at(0).signature, "c2ln");
    EXPECT_EQ(req->messages.at(0).tool_calls.at(1).signature, "");
    auto body = emit_gemini_request(*req);
    ASSERT_TRUE(body);
    auto again = parse_gemini_request(*body, "m", false);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *req) << *body;
}

}  // namespace
}  // namespace tokenradar::dialect
