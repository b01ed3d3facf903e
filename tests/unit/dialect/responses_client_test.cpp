#include <tokenradar/dialect/responses.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::dialect {
namespace {

namespace json = boost::json;
using namespace testing_util;
using K = StreamDelta::Kind;

TEST(ResponsesRequestEmit, WhatTheDoorReadsComesBackUnchanged) {
    auto read = parse_responses_request(read_fixture("responses/request_full.json"));
    ASSERT_TRUE(read) << read.error().message;
    auto body = emit_responses_request(*read);
    ASSERT_TRUE(body) << body.error().message;
    auto again = parse_responses_request(*body);
    ASSERT_TRUE(again) << again.error().message << "\n" << *body;
    EXPECT_EQ(*again, *read);
    const auto v = json::parse(*body).as_object();
    EXPECT_EQ(v.at("store"), false) << "a measuring client keeps nothing on the provider";
    EXPECT_EQ(v.at("reasoning").at("effort"), "low");
    EXPECT_EQ(v.at("input").at(0).at("role"), "system") << "instructions stay in their place";
}

TEST(ResponsesRequestEmit, BenchsRequestIsMinimal) {
    ChatRequest r;
    r.model = "gpt-4.1";
    r.messages.push_back({Role::system, {ContentPart::make_text("Be brief.")}, {}, {}, {}});
    r.messages.push_back({Role::user, {ContentPart::make_text("Hi")}, {}, {}, {}});
    r.max_tokens = 64;
    r.temperature = 0.0;
    r.stream = true;
    r.include_usage = true;  // Responses always report usage: nothing to ask for
    auto body = emit_responses_request(r);
    ASSERT_TRUE(body) << body.error().message;
    EXPECT_EQ(json::parse(*body), json::parse(R"({"model":"gpt-4.1","input":[
                {"type":"message","role":"system","content":[{"type":"input_text","text":"Be brief."}]},
                {"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]}],
                "max_output_tokens":64,"temperature":0.0,"stream":true,"store":false})"));
}

TEST(ResponsesRequestEmit, FieldsWithoutAPlaceAreRefusedByName) {
    ChatRequest r;
    r.model = "m";
    r.messages.push_back({Role::user, {ContentPart::make_text("Hi")}, {}, {}, {}});
    ChatRequest with_stop = r;
    with_stop.stop = {"END"};
    auto refused = emit_responses_request(with_stop);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Errc::unsupported);
    EXPECT_TRUE(refused.error().message.starts_with("stop:")) << refused.error().message;

    ChatRequest with_image = r;
    ContentPart image;
    image.kind = ContentPart::Kind::image_url;
    image.url = "https://example.com/a.png";
    with_image.messages[0].content.push_back(image);
    refused = emit_responses_request(with_image);
    ASSERT_FALSE(refused);
    EXPECT_TRUE(refused.error().message.starts_with("messages[0].content[1]:"))
        << refused.error().message;

    ChatRequest with_seed = r;
    with_seed.seed = 3;
    EXPECT_FALSE(emit_responses_request(with_seed));
    ChatRequest zero_penalty = r;
    zero_penalty.presence_penalty = 0.0;
    EXPECT_TRUE(emit_responses_request(zero_penalty)) << "the default value is harmless";
}

TEST(ResponsesResponseParse, ReadsTextReasoningCallsUsageAndStatus) {
    auto text = parse_responses_response(R"({"id":"resp_1","object":"response","created_at":7,
        "status":"completed","model":"gpt-4.1","output":[{"type":"message","id":"msg_1",
        "role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]},
        {"type":"refusal","refusal":"no"},{"type":"output_text","text":" there"}]}],
        "usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":32},
        "output_tokens":87,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":123}})");
    ASSERT_TRUE(text) << text.error().message;
    EXPECT_EQ(text->id, "resp_1");
    EXPECT_EQ(text->model, "gpt-4.1");
    EXPECT_EQ(text->created, 7);
    EXPECT_EQ(text->text, "Hello there");
    EXPECT_EQ(text->finish_reason, FinishReason::stop);
    EXPECT_EQ(text->usage.prompt_tokens, 36);
    EXPECT_EQ(text->usage.cached_prompt_tokens, 32);
    EXPECT_EQ(text->usage.output_tokens, 87);
    EXPECT_EQ(text->usage.reasoning_tokens, 20);

    auto call = parse_responses_response(R"({"id":"r","object":"response","status":"completed",
        "output":[{"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"Hm."}]},
        {"type":"function_call","id":"fc","call_id":"call_1","name":"f","arguments":"{}"}]})");
    ASSERT_TRUE(call) << call.error().message;
    EXPECT_EQ(call->reasoning, "Hm.");
    ASSERT_EQ(call->tool_calls.size(), 1u);
    EXPECT_EQ(call->tool_calls[0], (ToolCall{"call_1", "f", "{}", ""}));
    EXPECT_EQ(call->finish_reason, FinishReason::tool_calls);

    auto cut = parse_responses_response(R"({"id":"r","status":"incomplete",
        "incomplete_details":{"reason":"max_output_tokens"},"output":[]})");
    ASSERT_TRUE(cut);
    EXPECT_EQ(cut->finish_reason, FinishReason::length);

    EXPECT_EQ(parse_responses_response(R"({"object":"chat.completion","output":[]})").error().code,
              Errc::protocol_error);
    EXPECT_FALSE(parse_responses_response(R"({"id":"r"})")) << "output is required";
    EXPECT_FALSE(parse_responses_response("not json"));
}

TEST(ResponsesResponseParse, ReadsWhatTheDoorWrites) {
    ChatResponse r;
    r.id = "chatcmpl-1";
    r.model = "m";
    r.text = "Hi";
    r.usage.prompt_tokens = 3;
    r.usage.output_tokens = 1;
    r.finish_reason = FinishReason::length;
    auto parsed = parse_responses_response(emit_responses_response(r, 5));
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->id, "resp_chatcmpl-1");
    EXPECT_EQ(parsed->text, "Hi");
    EXPECT_EQ(parsed->created, 5);
    EXPECT_EQ(parsed->finish_reason, FinishReason::length);
    EXPECT_EQ(parsed->usage.output_tokens, 1);
}

TEST(ResponsesStreamDecode, TheDoorsGoldenStreamsDecodeToTheirAnswer) {
    const Decoded text =
        decode_stream(Api::openai_responses, read_fixture("responses/stream_basic.responses.sse"));
    ASSERT_TRUE(text.ok) << text.error;
    ASSERT_FALSE(text.of(K::role).empty());
    EXPECT_TRUE(text.of(K::role)[0].id.starts_with("resp_"));
    EXPECT_FALSE(text.text().empty());
    EXPECT_EQ(text.of(K::done).size(), 1u);
    ASSERT_EQ(text.of(K::usage).size(), 1u);
    EXPECT_TRUE(text.of(K::usage)[0].usage.output_tokens.has_value());

    const Decoded calls = decode_stream(Api::openai_responses,
                                        read_fixture("responses/stream_tool_calls.responses.sse"));
    ASSERT_TRUE(calls.ok) << calls.error;
    EXPECT_EQ(tool_summary(calls),
              "0:call_files:list_files:{\"path\": \".\"};"
              "1:call_weather:get_weather:{\"location\": \"Paris\"};")
        << "one call per function_call item, arguments from the deltas";
    ASSERT_EQ(calls.of(K::finish).size(), 1u);
    EXPECT_EQ(calls.of(K::finish)[0].finish_reason, FinishReason::tool_calls);

    const Decoded failed =
        decode_stream(Api::openai_responses, read_fixture("responses/stream_error.responses.sse"));
    ASSERT_TRUE(failed.ok) << failed.error;
    EXPECT_EQ(failed.of(K::error).size(), 1u) << "response.failed repeats the error event";
    EXPECT_EQ(failed.of(K::done).size(), 1u);
}

TEST(ResponsesStreamDecode, OurEncodersDeltasComeBackInAnySplit) {
    std::vector<StreamDelta> in;
    auto role = StreamDelta::make(K::role);
    role.id = "resp_x";
    role.name = "m";
    in.push_back(role);
    in.push_back(StreamDelta::make_text("Hello"));
    in.push_back(StreamDelta::make_text(" \"world\" é"));
    auto call = StreamDelta::make(K::tool_call);
    call.index = 0;
    call.id = "call_1";
    call.name = "f";
    in.push_back(call);
    auto args = StreamDelta::make(K::tool_call);
    args.arguments = "{\"a\":1}";
    in.push_back(args);
    auto usage = StreamDelta::make(K::usage);
    usage.usage.prompt_tokens = 9;
    usage.usage.output_tokens = 4;
    in.push_back(usage);
    auto finish = StreamDelta::make(K::finish);
    finish.finish_reason = FinishReason::tool_calls;
    in.push_back(finish);
    const std::string bytes =
        encode_all(Api::openai_responses, in, StreamMeta{"resp_x", "m", 0, true});
    for (unsigned seed = 0; seed < 6; ++seed) {
        SCOPED_TRACE(seed);
        const Decoded out = decode_chunks(Api::openai_responses, random_split(bytes, seed));
        ASSERT_TRUE(out.ok) << out.error;
        EXPECT_EQ(out.of(K::role).at(0).id, "resp_x");
        EXPECT_EQ(out.text(), "Hello \"world\" é");
        EXPECT_EQ(tool_summary(out), "0:call_1:f:{\"a\":1};");
        ASSERT_EQ(out.of(K::usage).size(), 1u);
        EXPECT_EQ(out.of(K::usage)[0].usage.prompt_tokens, 9);
        EXPECT_EQ(out.of(K::usage)[0].usage.output_tokens, 4);
        ASSERT_EQ(out.of(K::finish).size(), 1u);
        EXPECT_EQ(out.of(K::finish)[0].finish_reason, FinishReason::tool_calls);
        EXPECT_EQ(out.of(K::done).size(), 1u);
    }
}

TEST(ResponsesStreamDecode, ReasoningAndIncompleteAndMalformedEvents) {
    ResponsesStreamDecoder decoder;
    std::vector<StreamDelta> out;
    ASSERT_TRUE(decoder.decode(
        "", R"({"type":"response.reasoning_summary_text.delta","delta":"Hm"})", out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].kind, K::reasoning);
    EXPECT_TRUE(out[0].carries_output());
    out.clear();
    ASSERT_TRUE(decoder.decode("response.incomplete", R"({"response":{"status":"incomplete",
        "incomplete_details":{"reason":"max_output_tokens"},"output":[],
        "usage":{"input_tokens":2,"output_tokens":1}}})",
                               out))
        << "the SSE event name stands in for a missing type";
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[1].kind, K::finish);
    EXPECT_EQ(out[1].finish_reason, FinishReason::length);
    EXPECT_EQ(out[2].kind, K::done);
    out.clear();
    auto orphan = decoder.decode(
        "", R"({"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"})",
        out);
    ASSERT_FALSE(orphan);
    EXPECT_EQ(orphan.error().code, Errc::protocol_error);
    EXPECT_TRUE(out.empty());
    EXPECT_FALSE(decoder.decode("", R"({"type":"response.output_text.delta","delta":3})", out));
    EXPECT_FALSE(decoder.decode("", "{", out));
    ASSERT_TRUE(decoder.decode("", R"({"type":"response.in_progress","response":{}})", out));
    EXPECT_EQ(out.back().kind, K::ignorable);
}

}  // namespace
}  // namespace tokenradar::dialect
