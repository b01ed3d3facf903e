#include <tokenradar/dialect/openai.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

TEST(OpenAiRequest, ParsesBasic) {
    auto req = parse_openai_request(read_fixture("openai/request_basic.json"));
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->model, "gpt-4o");
    ASSERT_EQ(req->messages.size(), 2u);
    EXPECT_EQ(req->messages[0].role, Role::system);
    EXPECT_EQ(req->messages[1].content[0].text, "Say hello.");
    EXPECT_EQ(req->max_tokens, 64);
    EXPECT_EQ(req->temperature, 0.2);
    EXPECT_EQ(req->top_p, 0.9);
    EXPECT_EQ(req->stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(req->stream);
    EXPECT_TRUE(req->include_usage);
    EXPECT_EQ(req->original.at("user").as_string(), "u-123");  // passthrough keeps extras
}

TEST(OpenAiRequest, OriginalKeepsTheParseArenaThroughCopies) {
    auto req = parse_openai_request(read_fixture("openai/request_basic.json"));
    ASSERT_TRUE(req) << req.error().message;
    // One shared arena, not the default heap: an assignment into the default-heap member
    // would have deep-copied the DOM key by key.
    EXPECT_TRUE(req->original.storage().is_shared());
    const ChatRequest moved = std::move(*req);
    const ChatRequest copy = moved;
    EXPECT_EQ(copy.original.storage().get(), moved.original.storage().get());
    EXPECT_EQ(copy.original.at("user").as_string(), "u-123");
    EXPECT_EQ(moved.original.at("model").as_string(), "gpt-4o");
}

TEST(OpenAiRequest, ParsesToolsImagesAndResults) {
    auto req = parse_openai_request(read_fixture("openai/request_tools.json"));
    ASSERT_TRUE(req) << req.error().message;
    ASSERT_EQ(req->messages.size(), 4u);
    const auto& user = req->messages[1].content;
    ASSERT_EQ(user.size(), 3u);
    EXPECT_EQ(user[1].kind, ContentPart::Kind::image_url);
    EXPECT_EQ(user[1].url, "https://example.com/cat.png");
    EXPECT_EQ(user[2].kind, ContentPart::Kind::image_base64);
    EXPECT_EQ(user[2].media_type, "image/png");
    EXPECT_EQ(user[2].data, "iVBORw0KGgo=");
    const auto& asst = req->messages[2];
    EXPECT_TRUE(asst.content.empty());
    ASSERT_EQ(asst.tool_calls.size(), 1u);
    EXPECT_EQ(asst.tool_calls[0].id, "call_1");
    EXPECT_EQ(asst.tool_calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(req->messages[3].role, Role::tool);
    EXPECT_EQ(req->messages[3].tool_call_id, "call_1");
    ASSERT_EQ(req->tools.size(), 1u);
    EXPECT_EQ(req->tools[0].name, "get_weather");
    EXPECT_NE(req->tools[0].parameters.find("\"location\""), std::string::npos);
    EXPECT_EQ(req->max_tokens, 256);  // max_completion_tokens
    EXPECT_EQ(req->stop, std::vector<std::string>{"END"});
    EXPECT_FALSE(req->stream);
}

TEST(OpenAiRequest, RoundTrips) {
    for (const char* f : {"openai/request_basic.json", "openai/request_tools.json"}) {
        auto req = parse_openai_request(read_fixture(f));
        ASSERT_TRUE(req) << f;
        auto body = emit_openai_request(*req);
        ASSERT_TRUE(body);
        auto again = parse_openai_request(*body);
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_EQ(*again, *req) << f << "\n" << *body;
    }
}

TEST(OpenAiRequest, ErrorsNameTheFieldPath) {
    struct Case {
        const char* body;
        const char* message;
    } cases[] = {
        {R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"robot","content":"c"}]})",
         "messages[2].role: expected one of system, user, assistant, tool"},
        {R"({"messages":[]})", "model: required"},
        {R"({"model":"m"})", "messages: required"},
        {R"({"model":"m","messages":{}})", "messages: expected an array"},
        {R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
         "messages[0].content[0].text: required"},
        {R"({"model":"m","messages":[{"role":"user","content":[{"type":"audio"}]}]})",
         "messages[0].content[0].type: expected one of text, image_url"},
        {R"({"model":"m","messages":[{"role":"user","content":5}]})",
         "messages[0].content: expected a string or an array of content parts"},
        {R"({"model":"m","messages":[{"role":"tool","content":"x"}]})",
         "messages[0].tool_call_id: required"},
        {R"({"model":"m","messages":[],"max_tokens":"many"})", "max_tokens: expected an integer"},
        {R"({"model":"m","messages":[],"stop":[1]})", "stop[0]: expected a string"},
        {R"({"model":"m","messages":[],"tools":[{"type":"function"}]})",
         "tools[0].function: required"},
        {R"({"model":"m","messages":[],"stream_options":{"include_usage":"yes"}})",
         "stream_options.include_usage: expected true or false"},
        {R"([1])", "body: expected a JSON object"},
    };
    for (const auto& c : cases) {
        auto r = parse_openai_request(c.body);
        ASSERT_FALSE(r) << c.body;
        EXPECT_EQ(r.error().message, c.message);
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request));
    }
    auto bad = parse_openai_request("{not json");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message.rfind("body: invalid JSON", 0), 0u);
}

TEST(OpenAiResponse, ParsesAndRoundTrips) {
    auto resp = parse_openai_response(read_fixture("openai/response_basic.json"));
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_EQ(resp->id, "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT");
    EXPECT_EQ(resp->text, "Hello! How can I assist you today?");
    EXPECT_EQ(resp->finish_reason, FinishReason::stop);
    EXPECT_EQ(resp->usage.prompt_tokens, 19);
    EXPECT_EQ(resp->usage.output_tokens, 10);
    EXPECT_EQ(resp->usage.cached_prompt_tokens, 0);
    EXPECT_EQ(resp->usage.reasoning_tokens, 0);
    EXPECT_EQ(resp->created, 1741569952);
    auto again = parse_openai_response(emit_openai_response(*resp));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *resp);

    auto tools = parse_openai_response(read_fixture("openai/response_tool_calls.json"));
    ASSERT_TRUE(tools);
    EXPECT_EQ(tools->finish_reason, FinishReason::tool_calls);
    ASSERT_EQ(tools->tool_calls.size(), 1u);
    EXPECT_EQ(tools->tool_calls[0].name, "get_weather");
    auto again2 = parse_openai_response(emit_openai_response(*tools));
    ASSERT_TRUE(again2);
    EXPECT_EQ(*again2, *tools);
}

TEST(OpenAiStream, BasicWithUsageChunkAndDone) {
    auto d = decode_stream(Api::openai, read_fixture("openai/stream_basic.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.events.size(), 7u);
    // Role-only first chunk (content "") carries no text.
    ASSERT_EQ(d.events[0].size(), 1u);
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "chatcmpl-9bY2vLxQ3");
    EXPECT_EQ(d.events[0][0].name, "gpt-4o-2024-05-13");
    EXPECT_EQ(d.text(), "Hello! How can I help you today?\nAsk away.");
    ASSERT_EQ(d.of(K::finish).size(), 1u);
    EXPECT_EQ(d.of(K::finish)[0].finish_reason, FinishReason::stop);
    // The usage chunk has choices: [] and is the only one with usage.
    auto usage = d.of(K::usage);
    ASSERT_EQ(usage.size(), 1u);
    EXPECT_EQ(usage[0].usage.prompt_tokens, 1220);
    EXPECT_EQ(usage[0].usage.cached_prompt_tokens, 1024);
    EXPECT_EQ(usage[0].usage.output_tokens, 12);
    EXPECT_EQ(d.events[6][0].kind, K::done);
}

TEST(OpenAiStream, ReasoningBeforeAnswer) {
    auto d = decode_stream(Api::openai, read_fixture("openai/stream_reasoning.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.text(K::reasoning),
              "The user asks 9.11 vs 9.8. Compare decimals: 0.80 > 0.11. So 9.8 is larger.");
    EXPECT_EQ(d.text(), "9.8 is larger.");
    auto usage = d.of(K::usage);
    ASSERT_EQ(usage.size(), 1u);
    EXPECT_EQ(usage[0].usage.reasoning_tokens, 37);
}

TEST(OpenAiStream, ToolCallArgumentDeltas) {
    auto d = decode_stream(Api::openai, read_fixture("openai/stream_tool_calls.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 5u);
    EXPECT_EQ(calls[0].id, "call_files");
    EXPECT_EQ(calls[0].name, "list_files");
    std::string args0, args1;
    for (const auto& c : calls) (c.index == 0 ? args0 : args1) += c.arguments;
    EXPECT_EQ(args0, R"({"path": "."})");
    EXPECT_EQ(args1, R"({"location": "Paris"})");
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
}

TEST(OpenAiStream, InStreamError) {
    auto d = decode_stream(Api::openai, read_fixture("openai/stream_error.sse"));
    ASSERT_TRUE(d.ok) << d.error;
    auto errors = d.of(K::error);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].error_type, "server_error");
    EXPECT_EQ(errors[0].error_code, Errc::upstream_http_error);
    EXPECT_TRUE(d.of(K::done).empty());
}

TEST(OpenAiStream, MalformedDataIsProtocolError) {
    OpenAiStreamDecoder dec;
    std::vector<StreamDelta> out;
    auto r = dec.decode("message", "{\"choices\":[{\"delta\":{\"content\":5}}]}", out);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::protocol_error));
    EXPECT_EQ(r.error().message, "choices[0].delta.content: expected a string");
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(dec.decode("message", "nope", out));
}

TEST(OpenAiStream, TextChunksHaveTheExactShapeOfAChunkObject) {
    OpenAiStreamEncoder encoder(StreamMeta{"chatcmpl-\"q", "gpt-x", 7, true});
    std::string out;
    encoder.encode(StreamDelta::make_text("h\u00e9 \"q\"\n"), out);
    const auto second_event = out.find("data: ", 1);
    ASSERT_NE(second_event, std::string::npos) << out;  // role chunk, then the text chunk
    const std::string text_event = out.substr(second_event);
    EXPECT_EQ(text_event,
              "data: {\"id\":\"chatcmpl-\\\"q\",\"object\":\"chat.completion.chunk\",\"created\":7,"
              "\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u00e9 "
              "\\\"q\\\"\\n\"},"
              "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n");
    OpenAiStreamEncoder no_usage(StreamMeta{"id", "m", 1, false});
    std::string bytes;
    no_usage.encode(StreamDelta::make_text("x"), bytes);
    EXPECT_NE(bytes.find("\"finish_reason\":null}]}\n\n"), std::string::npos) << bytes;
}

TEST(OpenAiStream, EncoderProducesWhatTheDecoderReads) {
    std::vector<StreamDelta> in;
    in.push_back(StreamDelta::make(K::role));
    StreamDelta r = StreamDelta::make(K::reasoning);
    r.text = "think";
    in.push_back(r);
    in.push_back(StreamDelta::make_text("Hel"));
    in.push_back(StreamDelta::make_text("lo\nworld"));
    StreamDelta tc = StreamDelta::make(K::tool_call);
    tc.id = "call_1";
    tc.name = "f";
    tc.arguments = "{\"a\":";
    in.push_back(tc);
    StreamDelta tc2 = StreamDelta::make(K::tool_call);
    tc2.arguments = "1}";
    in.push_back(tc2);
    StreamDelta fin = StreamDelta::make(K::finish);
    fin.finish_reason = FinishReason::tool_calls;
    in.push_back(fin);
    StreamDelta u = StreamDelta::make(K::usage);
    u.usage.prompt_tokens = 10;
    u.usage.output_tokens = 5;
    u.usage.cached_prompt_tokens = 2;
    in.push_back(u);
    in.push_back(StreamDelta::make(K::done));
    std::string bytes = encode_all(Api::openai, in, StreamMeta{"chatcmpl-1", "gpt-x", 7, true});
    // OpenAI order: role chunk first, usage chunk with empty choices, then [DONE] last.
    EXPECT_EQ(bytes.rfind("data: [DONE]\n\n"), bytes.size() - 14);
    EXPECT_NE(bytes.find(R"("choices":[],"usage":{"prompt_tokens":10)"), std::string::npos)
        << bytes;
    auto d = decode_stream(Api::openai, bytes);
    ASSERT_TRUE(d.ok) << d.error;
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "chatcmpl-1");
    EXPECT_EQ(d.text(), "Hello\nworld");
    EXPECT_EQ(d.text(K::reasoning), "think");
    auto calls = d.of(K::tool_call);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].id, "call_1");
    EXPECT_EQ(calls[0].name, "f");
    EXPECT_EQ(calls[0].arguments + calls[1].arguments, "{\"a\":1}");
    EXPECT_EQ(d.of(K::usage).at(0).usage, u.usage);
    EXPECT_EQ(d.of(K::finish).at(0).finish_reason, FinishReason::tool_calls);
    EXPECT_EQ(d.flat().back().kind, K::done);
}

TEST(OpenAiRequest, GeminiThoughtSignatureInExtraContentRoundTrips) {
    const char* body = R"({"model":"m","messages":[{"role":"assistant","content":null,
        "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},
        "extra_content":{"google":{"thought_signature":"c2ln"}}}]}]})";
    auto req = parse_openai_request(body);
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->messages.at(0).tool_calls.at(0).signature, "c2ln");
    auto out = emit_openai_request(*req);
    ASSERT_TRUE(out);
    auto again = parse_openai_request(*out);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *req) << *out;
    auto bad = parse_openai_request(R"({"model":"m","messages":[{"role":"assistant",
        "tool_calls":[{"id":"c","function":{"name":"f"},"extra_content":{"google":[]}}]}]})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message,
              "messages[0].tool_calls[0].extra_content.google: expected an "
              "object");
}

}  // namespace
}  // namespace tokenradar::dialect
