#include "../../../src/dialect/openai_response_scan.hpp"

#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <gtest/gtest.h>

#include <string>

namespace tokenradar::dialect {
namespace {

// Meters `body` through meter_response (the scan when it takes the body) and through the DOM:
// success and every metered field must agree. Returns whether the scan took the body.
bool same_as_full_parse(std::string_view body) {
    Measurement fast;
    Measurement full;
    const auto metered = meter_response(fast, Api::openai, body);
    const auto parsed = parse_openai_response(body);
    if (parsed) record_response(full, *parsed);
    EXPECT_EQ(metered.has_value(), parsed.has_value()) << body;
    if (!metered && !parsed) {
        EXPECT_EQ(metered.error().message, parsed.error().message) << body;
    }
    EXPECT_TRUE(fast == full) << body << "\nscan: id=" << fast.response_id
                              << " out=" << fast.output_tokens.value_or(-1)
                              << "\nfull: id=" << full.response_id
                              << " out=" << full.output_tokens.value_or(-1);
    OpenAiResponseScanner scan;
    return scan.scan(body);
}

// The body the sims and OpenAI send, with `message` and `usage` as given.
std::string response(std::string_view message,
                     std::string_view usage = R"({"prompt_tokens":7,)"
                                              R"("completion_tokens":8,"total_tokens":15})",
                     std::string_view extra = "") {
    return R"({"id":"chatcmpl-1","object":"chat.completion","created":1796073206,"model":"gpt-4o",)" +
           std::string(extra) + R"("choices":[{"index":0,"message":)" + std::string(message) +
           R"(,"logprobs":null,"finish_reason":"stop"}],"usage":)" + std::string(usage) + "}";
}

TEST(OpenAiResponseScan, ReadsIdUsageAndAnswerSizeOfTheUsualBody) {
    const std::string body =
        response(R"({"role":"assistant","content":"Hi \"there\"\n\u00e9"})",
                 R"({"prompt_tokens":7,"completion_tokens":8,"total_tokens":15,)"
                 R"("prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},)"
                 R"("completion_tokens_details":{"reasoning_tokens":2}})");
    OpenAiResponseScanner scan;
    ASSERT_TRUE(scan.scan(body));
    EXPECT_EQ(scan.id(), "chatcmpl-1");
    EXPECT_EQ(scan.usage().prompt_tokens, 7);
    EXPECT_EQ(scan.usage().output_tokens, 8);
    EXPECT_EQ(scan.usage().cached_prompt_tokens, 3);
    EXPECT_EQ(scan.usage().reasoning_tokens, 2);
    EXPECT_FALSE(scan.usage().cache_creation_tokens);
    EXPECT_EQ(scan.text_bytes(), std::string("Hi \"there\"\n\xC3\xA9").size());
    EXPECT_EQ(scan.reasoning_bytes(), 0u);
    EXPECT_TRUE(same_as_full_parse(body));

    // The scanner is reused: nothing of the last body stays.
    ASSERT_TRUE(scan.scan(R"({"choices":[]})"));
    EXPECT_EQ(scan.id(), "");
    EXPECT_TRUE(scan.usage().empty());
    EXPECT_EQ(scan.text_bytes(), 0u);
}

TEST(OpenAiResponseScan, WithoutUsageTheEstimateComesFromTheSameTextSizes) {
    // Estimated per text (rounded up each): 5 bytes -> 2 tokens, 3 -> 1.
    const std::string body = response(R"({"content":"hello","reasoning_content":"abc"})", "null");
    ASSERT_TRUE(same_as_full_parse(body));
    Measurement m;
    ASSERT_TRUE(meter_response(m, Api::openai, body));
    EXPECT_EQ(m.output_tokens, 3);
    EXPECT_EQ(m.token_source, TokenSource::estimate);
    EXPECT_EQ(m.response_id, "chatcmpl-1");

    // reasoning_content wins over reasoning; a null one leaves it to reasoning.
    OpenAiResponseScanner scan;
    ASSERT_TRUE(
        scan.scan(response(R"({"content":"x","reasoning_content":"ab","reasoning":"abcdef"})")));
    EXPECT_EQ(scan.reasoning_bytes(), 2u);
    ASSERT_TRUE(
        scan.scan(response(R"({"content":"x","reasoning_content":null,"reasoning":"abcdef"})")));
    EXPECT_EQ(scan.reasoning_bytes(), 6u);
    for (const char* message : {R"({"content":"x","reasoning_content":"ab","reasoning":"abcdef"})",
                                R"({"content":"x","reasoning_content":null,"reasoning":"abcdef"})",
                                R"({"content":null,"reasoning":"abcdef"})"}) {
        EXPECT_TRUE(same_as_full_parse(response(message, "{}"))) << message;
    }
}

TEST(OpenAiResponseScan, TakesWhatTheFullParserReadsAlikeAndSkipsTheRest) {
    const char* taken[] = {
        R"({"choices":[]})",
        R"({"choices":[{"message":{}}]})",
        R"({"id":null,"model":null,"created":null,"choices":[{"message":{"content":null,)"
        R"("tool_calls":null},"finish_reason":null}],"usage":null})",
        // Escaped keys arrive in parts.
        R"({"choices":[{"message":{"cont\u0065nt":"abcd"}}],"us\u0061ge":{"completion_tokens":1}})",
        // Unread fields of any shape, nested, and a uint64 that fits int64.
        R"({"x":[1,2.5,{"choices":5,"id":[]}],"choices":[{"message":{"content":"a","refusal":)"
        R"(null,"annotations":[],"audio":{"id":1}},"logprobs":{"content":[{"t":1e3}]}}],)"
        R"("usage":{"prompt_tokens":9223372036854775807,"extra":true},"service_tier":"default"})",
        "  {\"choices\":[]}\n",
    };
    for (const char* body : taken) EXPECT_TRUE(same_as_full_parse(body)) << body;
}

TEST(OpenAiResponseScan, DeclinesWhatOnlyTheFullParserDecides) {
    // Each is a valid response (or a failure) the DOM decides: the scan declines, and
    // meter_response then gives exactly what the full parser gives.
    const std::string declined[] = {
        // Valid, but not the usual shape.
        response(R"({"content":null,"tool_calls":[{"id":"c","type":"function",)"
                 R"("function":{"name":"f","arguments":"{}"}}]})"),
        R"({"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]})",
        response(R"({"content":"x"})", R"({"completion_tokens":8.0})"),
        response(R"({"content":"x"})", "{}", R"("created":1.7e9,)"),
        response(R"({"content":"x","reasoning_content":"r","reasoning":5})"),
        // A repeated field: which one the DOM keeps is its business.
        response(R"({"content":"x","content":"yy"})"),
        R"({"choices":[],"choices":[]})",
        response(R"({"content":"x"})", R"({"completion_tokens":1,"completion_tokens":2})"),
        // Failures.
        R"({})",
        R"({"choices":null})",
        R"({"choices":{}})",
        R"({"choices":[null]})",
        R"({"choices":[[]]})",
        R"({"choices":["x"]})",
        R"({"choices":[{}]})",
        R"({"choices":[{"message":null}]})",
        R"({"choices":[{"message":"hi"}]})",
        R"({"choices":[{"message":{"content":5}}]})",
        R"({"choices":[{"message":{"content":"x"},"finish_reason":1}]})",
        R"({"choices":[{"message":{"tool_calls":{}}}]})",
        R"({"id":7,"choices":[]})",
        R"({"model":{},"choices":[]})",
        R"({"created":"now","choices":[]})",
        R"({"created":18446744073709551615,"choices":[]})",
        R"({"choices":[],"usage":[]})",
        R"({"choices":[],"usage":{"prompt_tokens":"7"}})",
        R"({"choices":[],"usage":{"prompt_tokens_details":5}})",
        R"({"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens":true}}})",
        R"([])",
        R"("x")",
        R"(null)",
        R"({"choices":[]} x)",
        R"({"choices":[)",
        "",
        // Deeper than the parse options allow, inside an unread field.
        R"({"choices":[],"x":)" + std::string(40, '[') + std::string(40, ']') + "}",
    };
    for (const auto& body : declined) EXPECT_FALSE(same_as_full_parse(body)) << body;
}

}  // namespace
}  // namespace tokenradar::dialect
