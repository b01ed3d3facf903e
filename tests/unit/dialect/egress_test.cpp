#include <tokenradar/dialect/egress.hpp>

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::dialect {
namespace {

namespace json = boost::json;

// A Gemini conversation as the Google GenAI SDK sends it: calls and responses without ids.
constexpr std::string_view kToolTurns = R"({"contents":[
  {"role":"user","parts":[{"text":"Weather in Oslo and Rome?"}]},
  {"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}},
                           {"functionCall":{"name":"get_weather","args":{"city":"Rome"}}},
                           {"functionCall":{"name":"get_time","args":{"tz":"CET"}}}]},
  {"role":"user","parts":[{"functionResponse":{"name":"get_time","response":{"result":"9:00"}}},
                          {"functionResponse":{"name":"get_weather","response":{"result":"rain"}}},
                          {"functionResponse":{"name":"get_weather","response":{"result":"sun"}}}]}
]})";

TEST(GeminiDoorRequest, PairsResponsesWithCallsByNameInOrder) {
    auto chat = parse_client_request(Api::gemini, kToolTurns, "fast", true);
    ASSERT_TRUE(chat) << chat.error().message;
    EXPECT_EQ(chat->model, "fast");
    EXPECT_TRUE(chat->stream);
    ASSERT_EQ(chat->messages.size(), 5u);
    const auto& calls = chat->messages[1].tool_calls;
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].id, "call_gemini_0");
    EXPECT_EQ(calls[1].id, "call_gemini_1");
    EXPECT_EQ(calls[2].id, "call_gemini_2");
    EXPECT_EQ(chat->messages[2].tool_call_id, "call_gemini_2");  // get_time
    EXPECT_EQ(chat->messages[3].tool_call_id, "call_gemini_0");  // the first get_weather
    EXPECT_EQ(chat->messages[4].tool_call_id, "call_gemini_1");
    // The OpenAI equivalent pairs them the same way, so any upstream can take it.
    auto openai = parse_request(Api::openai, json::serialize(chat->original));
    ASSERT_TRUE(openai) << openai.error().message;
    EXPECT_EQ(openai->messages[3].tool_call_id, "call_gemini_0");
    EXPECT_EQ(openai->model, "fast");
    EXPECT_TRUE(openai->stream);
    EXPECT_TRUE(openai->include_usage);
}

TEST(GeminiDoorRequest, KeepsTheIdsTheClientSent) {
    auto chat = parse_client_request(Api::gemini, R"({"contents":[
      {"role":"user","parts":[{"text":"Weather?"}]},
      {"role":"model","parts":[{"functionCall":{"id":"c7","name":"get_weather","args":{}}}]},
      {"role":"user","parts":[{"functionResponse":{"id":"c7","name":"get_weather","response":{}}}]}
    ]})",
                                     "fast");
    ASSERT_TRUE(chat) << chat.error().message;
    EXPECT_EQ(chat->messages[1].tool_calls[0].id, "c7");
    EXPECT_EQ(chat->messages[2].tool_call_id, "c7");
}

TEST(GeminiDoorRequest, AResponseToNoCallIsABadRequestNamingTheFunction) {
    auto chat = parse_client_request(Api::gemini, R"({"contents":[
      {"role":"user","parts":[{"text":"Weather?"}]},
      {"role":"model","parts":[{"functionCall":{"name":"get_time","args":{}}}]},
      {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{}}},
                              {"functionResponse":{"name":"get_time","response":{}}}]}
    ]})",
                                     "fast");
    ASSERT_FALSE(chat);
    EXPECT_EQ(chat.error().code, make_error_code(Errc::bad_request));
    EXPECT_NE(chat.error().message.find("'get_weather'"), std::string::npos)
        << chat.error().message;
    // A second response to the one call has nothing left to answer either.
    auto twice = parse_client_request(Api::gemini, R"({"contents":[
      {"role":"model","parts":[{"functionCall":{"name":"get_time","args":{}}}]},
      {"role":"user","parts":[{"functionResponse":{"name":"get_time","response":{}}},
                              {"functionResponse":{"name":"get_time","response":{}}}]}
    ]})",
                                      "fast");
    EXPECT_FALSE(twice);
}

TEST(GeminiDoorRequest, BadFieldsAreNamed) {
    auto chat =
        parse_client_request(Api::gemini, R"({"contents":[{"role":"robot","parts":[]}]})", "fast");
    ASSERT_FALSE(chat);
    EXPECT_NE(chat.error().message.find("contents[0].role"), std::string::npos)
        << chat.error().message;
}

TEST(GeminiDoorRequest, FieldsThatWouldBeDroppedAreRefusedByName) {
    const auto refused = [](std::string_view body) {
        auto chat = parse_client_request(Api::gemini, body, "fast");
        return chat ? std::string("(accepted)") : chat.error().message;
    };
    const std::string contents = R"("contents":[{"parts":[{"text":"x"}]}])";
    EXPECT_NE(refused("{" + contents + R"(,"generationConfig":{"topK":3}})")
                  .find("generationConfig.topK"),
              std::string::npos);
    EXPECT_NE(refused("{" + contents + R"(,"generationConfig":{"candidate_count":2}})")
                  .find("generationConfig.candidate_count"),
              std::string::npos);
    EXPECT_NE(refused("{" + contents + R"(,"tools":[{"googleSearch":{}}]})").find("tools[0]"),
              std::string::npos);
    EXPECT_NE(
        refused("{" + contents + R"(,"cachedContent":"cachedContents/1"})").find("cachedContent"),
        std::string::npos);
    EXPECT_NE(
        refused("{" + contents + R"(,"toolConfig":{"functionCallingConfig":{"mode":"VALIDATED"}}})")
            .find("mode"),
        std::string::npos);
    // Defaults that change nothing pass.
    EXPECT_EQ(refused("{" + contents +
                      R"(,"safetySettings":[],"generationConfig":{"candidateCount":1,)"
                      R"("responseModalities":["TEXT"],"maxOutputTokens":5}})"),
              "(accepted)");
}

TEST(GeminiEgress, AWholeAnswerAndAnErrorInGeminiShape) {
    const Egress egress(Api::gemini);
    int status = 200;
    std::string type = "application/json";
    std::string body = R"({"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o",
      "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
        "finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}})";
    egress.whole(status, type, body);
    EXPECT_EQ(status, 200);
    auto response = parse_gemini_response(body);
    ASSERT_TRUE(response) << body;
    ASSERT_EQ(response->tool_calls.size(), 1u);
    EXPECT_EQ(response->tool_calls[0].name, "get_weather");
    EXPECT_EQ(response->tool_calls[0].arguments, R"({"city":"Oslo"})");
    EXPECT_EQ(response->usage.output_tokens, 7);
    EXPECT_EQ(json::parse(body).at("candidates").at(0).at("finishReason"), "STOP");

    status = 404;
    body = R"({"error":{"message":"model 'x' is not served here","type":"invalid_request_error",
      "param":null,"code":"model_not_found"}})";
    egress.whole(status, type, body);
    EXPECT_EQ(status, 404);
    const auto error = json::parse(body).at("error");
    EXPECT_EQ(error.at("code"), 404);
    EXPECT_EQ(error.at("status"), "NOT_FOUND");
    EXPECT_EQ(error.at("message"), "model 'x' is not served here");
}

TEST(GeminiEgress, AStreamBecomesGeminiChunksAndHeartbeatsStayComments) {
    Egress egress(Api::gemini);
    std::string out;
    egress.stream(
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
        "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n"
        ": keep-alive\n\n"
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
        "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}"
        "\n\n",
        out);
    egress.stream(
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\","
        "\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,"
        "\"total_tokens\":6}}\n\ndata: [DONE]\n\n",
        out);
    egress.end(out);
    std::vector<json::value> chunks;
    int comments = 0;
    sse::SseParser::Options options;
    options.expose_comments = true;
    sse::SseParser parser(options);
    ASSERT_TRUE(parser.feed(out, [&](const sse::SseEvent& e) {
        if (e.is_comment) {
            ++comments;
        } else {
            chunks.push_back(json::parse(e.data));
        }
    }));
    EXPECT_EQ(comments, 1);
    ASSERT_EQ(chunks.size(), 3u) << out;
    std::string text;
    for (const auto& c : chunks) {
        text += c.at("candidates").at(0).at("content").at("parts").at(0).at("text").as_string();
    }
    EXPECT_EQ(text, "Hello");
    const auto& last = chunks.back();
    EXPECT_EQ(last.at("candidates").at(0).at("finishReason"), "MAX_TOKENS");
    EXPECT_EQ(last.at("usageMetadata").at("candidatesTokenCount"), 2);
    EXPECT_EQ(last.at("usageMetadata").at("promptTokenCount"), 4);
}

TEST(GeminiEgress, AnUndecodableEventEndsTheStreamWithAGeminiError) {
    Egress egress(Api::gemini);
    std::string out;
    egress.stream("data: {not json\n\n", out);
    egress.stream("data: {\"choices\":[]}\n\n", out);  // nothing after the error
    egress.end(out);
    sse::SseParser parser;
    std::vector<json::value> events;
    ASSERT_TRUE(
        parser.feed(out, [&](const sse::SseEvent& e) { events.push_back(json::parse(e.data)); }));
    ASSERT_EQ(events.size(), 1u) << out;
    EXPECT_EQ(events[0].at("error").at("status"), "INTERNAL") << out;
}

}  // namespace
}  // namespace tokenradar::dialect
