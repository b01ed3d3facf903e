#include <tokenradar/dialect/openai.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

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

}  // namespace
}  // namespace tokenradar::dialect
