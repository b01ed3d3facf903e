#include <tokenradar/dialect/text_completion.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/stream_meter.hpp>

#include <gtest/gtest.h>

#include <memory>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

Decoded decode_completions(const std::vector<std::string>& chunks) {
    return decode_chunks(std::make_unique<TextCompletionStreamDecoder>(), chunks);
}

std::string prompt_text(const ChatRequest& req, std::size_t i) {
    return req.messages.at(i).content.at(0).text;
}

TEST(TextCompletionRequest, ReadsEveryPromptShape) {
    auto one = parse_text_completion_request(
        R"({"model":"m","prompt":"Say this is a test","max_tokens":7,"temperature":0,)"
        R"("stop":"\n","stream":true,"stream_options":{"include_usage":true},"echo":false})");
    ASSERT_TRUE(one) << one.error().message;
    EXPECT_EQ(one->model, "m");
    ASSERT_EQ(one->messages.size(), 1u);
    EXPECT_EQ(one->messages[0].role, Role::user);
    EXPECT_EQ(prompt_text(*one, 0), "Say this is a test");
    EXPECT_EQ(one->max_tokens, 7);
    EXPECT_EQ(one->temperature, 0.0);
    EXPECT_EQ(one->stop, std::vector<std::string>{"\n"});
    EXPECT_TRUE(one->stream);
    EXPECT_TRUE(one->include_usage);
    EXPECT_TRUE(one->original.contains("echo"));  // kept for the passthrough

    auto batch = parse_text_completion_request(R"({"model":"m","prompt":["a","b"]})");
    ASSERT_TRUE(batch);
    ASSERT_EQ(batch->messages.size(), 2u);
    EXPECT_EQ(prompt_text(*batch, 1), "b");
    EXPECT_FALSE(batch->stream);

    auto ids = parse_text_completion_request(R"({"model":"m","prompt":[1212,318,257]})");
    ASSERT_TRUE(ids);
    ASSERT_EQ(ids->messages.size(), 1u);
    EXPECT_EQ(prompt_text(*ids, 0), "1212 318 257");

    auto id_batch = parse_text_completion_request(R"({"model":"m","prompt":[[1,2],[3]]})");
    ASSERT_TRUE(id_batch);
    ASSERT_EQ(id_batch->messages.size(), 2u);
    EXPECT_EQ(prompt_text(*id_batch, 1), "3");
}

TEST(TextCompletionRequest, BadBodiesNameTheField) {
    const auto message = [](std::string_view body) {
        auto r = parse_text_completion_request(body);
        EXPECT_FALSE(r) << body;
        if (r) return std::string();
        EXPECT_EQ(r.error().code, make_error_code(Errc::bad_request)) << body;
        return r.error().message;
    };
    EXPECT_NE(message(R"({"prompt":"x"})").find("model"), std::string::npos);
    EXPECT_NE(message(R"({"model":"m"})").find("prompt: required"), std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":7})").find("prompt: expected a string"),
              std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":[]})").find("prompt: expected"), std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":[1,"a"]})").find("prompt: expected"),
              std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":["a",{}]})").find("prompt[1]: expected"),
              std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":"x","stream":"yes"})").find("stream"),
              std::string::npos);
    EXPECT_NE(message(R"({"model":"m","prompt":"x","max_tokens":-1})").find("max_tokens"),
              std::string::npos);
    EXPECT_FALSE(message("[1]").empty());
    EXPECT_FALSE(message("{").empty());
    // A batch is bounded before its prompts become messages; 2,048 is accepted.
    const auto batch = [](int n) {
        std::string body = R"({"model":"m","prompt":[)";
        for (int i = 0; i < n; ++i) body += i ? R"(,"")" : R"("")";
        return body + "]}";
    };
    EXPECT_NE(message(batch(2049)).find("prompt: at most 2048 prompts in a batch, got 2049"),
              std::string::npos);
    auto accepted = parse_text_completion_request(batch(2048));
    ASSERT_TRUE(accepted) << accepted.error().message;
    EXPECT_EQ(accepted->messages.size(), 2048U);
}

TEST(TextCompletionResponse, ParsesAndRoundTrips) {
    auto resp = parse_text_completion(read_fixture("completions/response_basic.json"));
    ASSERT_TRUE(resp) << resp.error().message;
    EXPECT_EQ(resp->id, "cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7");
    EXPECT_EQ(resp->model, "gpt-3.5-turbo-instruct");
    EXPECT_EQ(resp->text, "\n\nThis is indeed a test");
    EXPECT_EQ(resp->finish_reason, FinishReason::length);
    EXPECT_EQ(resp->usage.prompt_tokens, 5);
    EXPECT_EQ(resp->usage.output_tokens, 7);
    EXPECT_EQ(resp->created, 1589478378);
    const std::string emitted = emit_text_completion(*resp);
    EXPECT_NE(emitted.find(R"("object":"text_completion")"), std::string::npos) << emitted;
    auto again = parse_text_completion(emitted);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, *resp);
}

TEST(TextCompletionResponse, OtherBodiesAreProtocolErrors) {
    // A chat.completion is not a text completion.
    auto chat = parse_text_completion(read_fixture("openai/response_basic.json"));
    ASSERT_FALSE(chat);
    EXPECT_EQ(chat.error().code, make_error_code(Errc::protocol_error));
    EXPECT_NE(chat.error().message.find("object"), std::string::npos);
    EXPECT_FALSE(parse_text_completion(R"({"object":"text_completion"})"));  // no choices
    EXPECT_FALSE(parse_text_completion(R"({"choices":[{"text":5}]})"));
    EXPECT_FALSE(parse_text_completion("not json"));
    // No usage: an answer all the same (metering estimates).
    auto bare = parse_text_completion(R"({"choices":[{"text":"hi","finish_reason":"stop"}]})");
    ASSERT_TRUE(bare);
    EXPECT_EQ(bare->text, "hi");
    EXPECT_TRUE(bare->usage.empty());
}

TEST(TextCompletionStream, DecodesTheFixture) {
    const std::string bytes = read_fixture("completions/stream_basic.sse");
    const Decoded d = decode_completions({bytes});
    ASSERT_TRUE(d.ok) << d.error;
    ASSERT_EQ(d.events.size(), 6u);
    // The first chunk names the stream and carries no text.
    ASSERT_EQ(d.events[0].size(), 1u);
    EXPECT_EQ(d.events[0][0].kind, K::role);
    EXPECT_EQ(d.events[0][0].id, "cmpl-7c1e2b");
    EXPECT_EQ(d.events[0][0].name, "meta-llama/Llama-3.1-8B");
    EXPECT_EQ(d.of(K::role).size(), 1u);  // only once
    EXPECT_EQ(d.text(), " Paris, the city of light");
    ASSERT_EQ(d.of(K::finish).size(), 1u);
    EXPECT_EQ(d.of(K::finish)[0].finish_reason, FinishReason::length);
    ASSERT_EQ(d.of(K::usage).size(), 1u);
    EXPECT_EQ(d.of(K::usage)[0].usage.prompt_tokens, 6);
    EXPECT_EQ(d.of(K::usage)[0].usage.output_tokens, 7);
    EXPECT_EQ(d.flat().back().kind, K::done);
    for (unsigned seed = 0; seed < 30; ++seed) {
        const Decoded chunked = decode_completions(random_split(bytes, seed));
        ASSERT_TRUE(chunked.ok) << seed;
        ASSERT_EQ(chunked.events, d.events) << seed;
    }
}

TEST(TextCompletionStream, ErrorsAndMalformedChunks) {
    const Decoded error = decode_completions(
        {"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"Par\"}]}\n\n"
         "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"});
    ASSERT_TRUE(error.ok) << error.error;
    ASSERT_EQ(error.of(K::error).size(), 1u);
    EXPECT_EQ(error.of(K::error)[0].text, "overloaded");
    EXPECT_EQ(error.of(K::error)[0].error_type, "server_error");

    for (std::string_view data :
         {R"({"choices":[{"index":0,"text":7}]})", R"({"choices":{}})", R"({"usage":[]})",
          R"({"choices":[{"index":0,"text":"a"}],"id":5})", "[1]", "{"}) {
        TextCompletionStreamDecoder decoder;
        std::vector<StreamDelta> out;
        auto r = decoder.decode({}, data, out);
        EXPECT_FALSE(r) << data;
        EXPECT_TRUE(out.empty()) << data;
    }
    // Other choices than 0 and unknown fields carry nothing: an ignorable event.
    TextCompletionStreamDecoder decoder;
    std::vector<StreamDelta> out;
    ASSERT_TRUE(decoder.decode({}, R"({"choices":[{"index":1,"text":"other"}],"x":1})", out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].kind, K::ignorable);
}

TEST(TextCompletionStream, EncoderWritesWhatTheDecoderReads) {
    const Decoded src = decode_completions({read_fixture("completions/stream_basic.sse")});
    ASSERT_TRUE(src.ok);
    for (bool usage : {true, false}) {
        TextCompletionStreamEncoder encoder(StreamMeta{"cmpl-1", "m", 1733313045, usage});
        std::string out;
        for (const auto& d : src.flat()) encoder.encode(d, out);
        encoder.finish(out);
        EXPECT_EQ(out.find("chat.completion"), std::string::npos) << out;
        const Decoded back = decode_completions({out});
        ASSERT_TRUE(back.ok) << back.error;
        EXPECT_EQ(back.text(), src.text());
        ASSERT_EQ(back.of(K::finish).size(), 1u);
        EXPECT_EQ(back.of(K::finish)[0].finish_reason, FinishReason::length);
        EXPECT_EQ(back.of(K::usage).size(), usage ? 1u : 0u);
        EXPECT_EQ(back.of(K::role).at(0).id, "cmpl-1");
        EXPECT_EQ(back.flat().back().kind, K::done);
    }
    // An error ends the stream: nothing after it, not even [DONE].
    TextCompletionStreamEncoder encoder(StreamMeta{"cmpl-1", "m", 0, true});
    std::string out;
    auto error = StreamDelta::make(K::error);
    error.text = "boom";
    error.error_code = Errc::overloaded;
    encoder.encode(error, out);
    encoder.encode(StreamDelta::make_text("late"), out);
    encoder.finish(out);
    const Decoded back = decode_completions({out});
    ASSERT_EQ(back.of(K::error).size(), 1u);
    EXPECT_EQ(back.of(K::error)[0].error_code, Errc::overloaded);
    EXPECT_TRUE(back.text().empty());
    EXPECT_TRUE(back.of(K::done).empty());
}

// metrics.md: the first token is the first event carrying non-empty text, not the first chunk.
TEST(TextCompletionStream, MetersTheFirstTokenAtTheFirstNonEmptyText) {
    StreamMeter meter(std::make_unique<TextCompletionStreamDecoder>());
    const std::string bytes = read_fixture("completions/stream_basic.sse");
    const std::size_t second = bytes.find("data:", 1);
    ASSERT_TRUE(meter.feed(bytes.substr(0, second), 100));
    ASSERT_TRUE(meter.feed(bytes.substr(second), 250));
    ASSERT_TRUE(meter.end(300));
    const StreamAccumulator& acc = meter.accumulator();
    EXPECT_EQ(acc.times().first_chunk, 100);
    EXPECT_EQ(acc.times().first_token, 250);
    EXPECT_TRUE(acc.saw_done());
    EXPECT_EQ(meter.response_id(), "cmpl-7c1e2b");
    Measurement m;
    record_stream(m, acc);
    EXPECT_EQ(m.output_tokens, 7);
    EXPECT_EQ(m.prompt_tokens, 6);
    EXPECT_EQ(m.token_source, TokenSource::usage);
}

}  // namespace
}  // namespace tokenradar::dialect
