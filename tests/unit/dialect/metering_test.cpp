#include <tokenradar/dialect/metering.hpp>

#include <tokenradar/dialect/stream_meter.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::dialect {
namespace {

// The cached prompt tokens each dialect reports reach the record, streamed or whole:
// OpenAI prompt_tokens_details.cached_tokens, Anthropic cache_read_input_tokens (+
// cache_creation_input_tokens), Gemini cachedContentTokenCount. Prompt tokens include them.

Measurement metered_stream(Api api, const std::string& body) {
    StreamMeter meter(api);
    EXPECT_TRUE(meter.feed(body, 1'000));
    EXPECT_TRUE(meter.end(2'000));
    Measurement m;
    record_stream(m, meter.accumulator());
    return m;
}

Measurement metered_whole(Api api, const std::string& body) {
    Measurement m;
    auto metered = meter_response(m, api, body);
    EXPECT_TRUE(metered) << metered.error().message;
    return m;
}

TEST(MeteringCachedTokens, OpenAi) {
    const std::string usage =
        R"("usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102,)"
        R"("prompt_tokens_details":{"cached_tokens":64}})";
    const Measurement whole = metered_whole(
        Api::openai, R"({"id":"c1","object":"chat.completion","choices":[{"index":0,)"
                     R"("message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],)" +
                         usage + "}");
    EXPECT_EQ(whole.prompt_tokens, 100);
    EXPECT_EQ(whole.cached_prompt_tokens, 64);
    const Measurement streamed = metered_stream(
        Api::openai,
        R"(data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})"
        "\n\n"
        R"(data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
        "\n\n"
        R"(data: {"id":"c1","choices":[],)" +
            usage + "}\n\ndata: [DONE]\n\n");
    EXPECT_EQ(streamed.prompt_tokens, 100);
    EXPECT_EQ(streamed.cached_prompt_tokens, 64);
}

TEST(MeteringCachedTokens, Anthropic) {
    const Measurement whole = metered_whole(
        Api::anthropic,
        R"({"id":"msg_1","model":"c","content":[{"type":"text","text":"hi"}],)"
        R"("stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":80,)"
        R"("cache_creation_input_tokens":10,"output_tokens":2}})");
    EXPECT_EQ(whole.prompt_tokens, 100);
    EXPECT_EQ(whole.cached_prompt_tokens, 80);
    EXPECT_EQ(whole.cache_creation_tokens, 10);

    const std::string start =
        "event: message_start\ndata: "
        R"({"type":"message_start","message":{"id":"msg_1","model":"c","usage":{)"
        R"("input_tokens":10,"cache_read_input_tokens":80,"cache_creation_input_tokens":10,)"
        R"("output_tokens":1}}})"
        "\n\nevent: content_block_delta\ndata: "
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}})"
        "\n\n";
    const std::string stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    // message_delta's usage as Anthropic documents it: output only, or every count cumulative;
    // and as some compatible servers send it: input_tokens without the cache fields.
    for (
        const char* delta_usage :
        {R"({"output_tokens":2})",
         R"({"input_tokens":10,"cache_read_input_tokens":80,"cache_creation_input_tokens":10,"output_tokens":2})",
         R"({"input_tokens":10,"output_tokens":2})"}) {
        const Measurement streamed = metered_stream(
            Api::anthropic,
            start +
                "event: message_delta\ndata: "
                R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":)" +
                delta_usage + "}\n\n" + stop);
        EXPECT_EQ(streamed.prompt_tokens, 100) << delta_usage;
        EXPECT_EQ(streamed.cached_prompt_tokens, 80) << delta_usage;
        EXPECT_EQ(streamed.cache_creation_tokens, 10) << delta_usage;
        EXPECT_EQ(streamed.output_tokens, 2) << delta_usage;
    }
}

TEST(MeteringCachedTokens, Gemini) {
    const std::string usage = R"("usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":2,)"
                              R"("totalTokenCount":102,"cachedContentTokenCount":64})";
    const std::string chunk = R"({"candidates":[{"content":{"parts":[{"text":"hi"}],)"
                              R"("role":"model"},"finishReason":"STOP"}],)" +
                              usage + R"(,"responseId":"r1"})";
    const Measurement whole = metered_whole(Api::gemini, chunk);
    EXPECT_EQ(whole.prompt_tokens, 100);
    EXPECT_EQ(whole.cached_prompt_tokens, 64);
    const Measurement streamed = metered_stream(Api::gemini, "data: " + chunk + "\r\n\r\n");
    EXPECT_EQ(streamed.prompt_tokens, 100);
    EXPECT_EQ(streamed.cached_prompt_tokens, 64);
}

}  // namespace
}  // namespace tokenradar::dialect
