#include <tokenradar/dialect/gemini.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

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

TEST(GeminiResponse, ParsesAndRoundTrips) {
    auto resp = parse_gemini_response(read_fixture("gemini/response_basic.json"));
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_EQ(resp->text, "Hello! How can I help you today?");
    EXPECT_EQ(resp->id, "resp-basic-1");
    EXPECT_EQ(resp->model, "gemini-2.0-flash");
    EXPECT_EQ(resp->usage.prompt_tokens, 5);
    EXPECT_EQ(resp->usage.output_tokens, 9);
    auto again = parse_gemini_response(emit_gemini_response(*resp));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *resp);
}

TEST(GeminiStream, MultiTokenChunksWithCumulativeUsage) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_basic.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.events.size(), 3u);
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "mGRMaOaXHqKwz7IP-ps0");
    EXPECT_EQ(d.text(),
              "The quick brown fox jumps over the lazy dog. It was a bright, cold day in April, "
              "and the clocks were striking thirteen.");
    auto usage = d.of(K::usage);
    ASSERT_EQ(usage.size(), 3u);  // repeated on every chunk, growing
    EXPECT_EQ(usage[0].usage.output_tokens, 4);
    EXPECT_EQ(usage[2].usage.output_tokens, 26);
    EXPECT_EQ(usage[2].usage.prompt_tokens, 1200);
    EXPECT_EQ(usage[2].usage.cached_prompt_tokens, 1024);
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::stop);
    EXPECT_EQ(d.flat().back().kind, K::done);
}

TEST(GeminiStream, ThoughtParts) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_thinking.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.text(K::reasoning), "**Comparing decimals**\n\nI need to compare 9.11 and 9.8.");
    EXPECT_EQ(d.text(), "9.8 is larger than 9.11.");
    auto last = d.of(K::usage).back().usage;
    EXPECT_EQ(last.output_tokens, 9 + 66);  // candidates + thoughts
    EXPECT_EQ(last.reasoning_tokens, 66);
    EXPECT_EQ(d.of(K::usage).front().usage.output_tokens, 66);
}

TEST(GeminiStream, FunctionCall) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_function_call.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].index, 0);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(GeminiStream, ErrorObject) {
    auto d = decode_stream(Api::gemini, read_fixture("gemini/stream_error.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto e = d.of(K::error);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].error_type, "UNAVAILABLE");
    EXPECT_EQ(e[0].error_code, Errc::overloaded);
}

TEST(GeminiStream, EncoderFromOpenAiToolCallDeltas) {
    auto src = decode_stream(Api::openai, read_fixture("openai/stream_tool_calls.sse"));
    ASSERT_TRUE(src.ok);
    std::string bytes = encode_all(Api::gemini, src.flat());
    auto d = decode_stream(Api::gemini, bytes);
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 2u) << bytes;
    EXPECT_EQ(calls[0].name, "list_files");
    EXPECT_EQ(calls[0].id, "call_files");
    EXPECT_EQ(calls[0].arguments, R"({"path":"."})");
    EXPECT_EQ(calls[1].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(GeminiStream, EncoderReencodesItsOwnFixtures) {
    for (const auto& f : stream_fixtures("gemini")) {
        auto src = decode_stream(Api::gemini, read_fixture(f));
        ASSERT_TRUE(src.ok) << f;
        auto d = decode_stream(Api::gemini, encode_all(Api::gemini, src.flat()));
        ASSERT_TRUE(d.ok) << f << d.error;
        EXPECT_EQ(d.text(), src.text()) << f;
        EXPECT_EQ(d.text(K::reasoning), src.text(K::reasoning)) << f;
        EXPECT_EQ(tool_summary(d), tool_summary(src)) << f;
        if (!src.of(K::usage).empty() && src.of(K::error).empty()) {
            EXPECT_EQ(d.of(K::usage).back().usage, src.of(K::usage).back().usage) << f;
        }
    }
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

TEST(GeminiStream, BlockedPromptEndsTheStream) {
    auto d = decode_stream(Api::gemini,
                           "data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},"
                           "\"usageMetadata\":{\"promptTokenCount\":7},\"responseId\":\"x\"}\n\n");
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.of(K::finish).size(), 1u);
    EXPECT_EQ(d.of(K::finish)[0].finish_reason, FinishReason::content_filter);
    EXPECT_EQ(d.of(K::done).size(), 1u);
    auto resp = parse_gemini_response(R"({"promptFeedback":{"blockReason":"SAFETY"}})");
    ASSERT_TRUE(resp);
    EXPECT_EQ(resp->finish_reason, FinishReason::content_filter);
}

// A 200 in another API's shape is not an empty answer with 0 tokens.
TEST(GeminiResponse, ABodyWithoutCandidatesOrBlockReasonIsAProtocolError) {
    for (std::string_view body :
         {R"({})", R"({"object":"chat.completion","choices":[]})", R"({"candidates":[]})"}) {
        auto resp = parse_gemini_response(body);
        ASSERT_FALSE(resp) << body;
        EXPECT_EQ(resp.error().code, make_error_code(Errc::protocol_error));
        EXPECT_NE(resp.error().message.find("candidates"), std::string::npos);
    }
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
