#include "../../../src/dialect/openai_chunk_scan.hpp"

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <tokenradar/dialect/openai.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

// What both decoders made of one event: its deltas, or its error message.
struct Decoded {
    std::vector<StreamDelta> deltas;
    std::string error;
    bool operator==(const Decoded&) const = default;
};
void PrintTo(const Decoded& d, std::ostream* os) {
    *os << "error='" << d.error << "' deltas=";
    for (const auto& x : d.deltas) PrintTo(x, os);
}

Decoded decode_with(OpenAiStreamDecoder& dec, std::string_view data) {
    Decoded d;
    if (auto r = dec.decode("message", data, d.deltas); !r) d.error = r.error().message;
    return d;
}

// Decodes `data` with and without the fast path: the results must be identical. Returns
// whether the fast path took the event.
bool same_as_full_decoder(std::string_view data) {
    OpenAiStreamDecoder fast;
    OpenAiStreamDecoder full(false);
    const Decoded a = decode_with(fast, data);
    const Decoded b = decode_with(full, data);
    EXPECT_EQ(a, b) << data;
    EXPECT_EQ(full.fast_events(), 0u);
    return fast.fast_events() == 1;
}

std::string chunk(std::string_view delta, std::string_view finish = "null",
                  std::string_view extra = "") {
    return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o",)"
           R"("system_fingerprint":"fp_1",)" +
           std::string(extra) + R"("choices":[{"index":0,"delta":)" + std::string(delta) +
           R"(,"logprobs":null,"finish_reason":)" + std::string(finish) + "}]}";
}

TEST(OpenAiChunkScan, ReadsTheTextOfAPlainChunk) {
    OpenAiChunkScanner scan;
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"Hel\"lo\n\u00e9"})")));
    EXPECT_EQ(scan.text(), "Hel\"lo\n\xC3\xA9");
    EXPECT_FALSE(scan.finish().has_value());
    ASSERT_TRUE(scan.scan(chunk("{}", R"("length")")));  // reused: nothing left from before
    EXPECT_EQ(scan.text(), "");
    EXPECT_EQ(scan.finish(), "length");
    EXPECT_FALSE(scan.role());
    EXPECT_EQ(scan.usage(), nullptr);
    ASSERT_TRUE(scan.scan(chunk(R"({"role":"assistant","content":"Hi"})")));
    EXPECT_TRUE(scan.role());
    EXPECT_EQ(scan.id(), "chatcmpl-1");
    EXPECT_EQ(scan.model(), "gpt-4o");
    EXPECT_EQ(scan.text(), "Hi");
    ASSERT_TRUE(scan.scan(
        R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}})"));
    EXPECT_FALSE(scan.role());
    ASSERT_NE(scan.usage(), nullptr);
    Usage expected;
    expected.prompt_tokens = 5;
    expected.cached_prompt_tokens = 3;
    expected.output_tokens = 7;
    EXPECT_EQ(*scan.usage(), expected);
}

TEST(OpenAiChunkScan, TextRoleFinishAndUsageChunksTakeTheFastPathWithTheFullDecodersResult) {
    const std::vector<std::string> fast{
        chunk(R"({"content":"Hello"})"),
        chunk(R"({"content":" wor\"ld\\ \u00e9\ud83d\ude00"})"),
        chunk("{}", R"("stop")"),
        chunk(R"({"content":"end"})", R"("length")"),
        chunk(R"({"content":"x"})", R"("tool_calls")"),
        chunk(R"({"content":"x"})", R"("something_new")"),
        chunk("null", R"("stop")"),
        chunk(R"({"content":null})"),
        // null fields read as absent, as Reader::find does
        chunk(
            R"({"role":null,"content":"a","refusal":null,"reasoning_content":null,"reasoning":null,"tool_calls":null})"),
        // unknown fields at every level, with nested values, are skipped
        chunk(
            R"({"content":"a","audio":{"x":[1,2,{"content":"no"}]},"extra":[["role"]]})", "null",
            R"("obfuscation":"abc","service_tier":"default","usage":null,"nested":{"choices":[1,2]},)"),
        R"(  {"choices":[{"finish_reason":null,"delta":{"content":"k"},"index":0}],"id":"x"}  )",
        R"({"choices":[{"delta":{"content":"no index"}}]})",
        R"({"choices":[]})",
        R"({"id":"x"})",
        R"({"choices":null,"usage":null})",
        R"({"choices":[{"index":0,"delta":{"content":"a","logprobs":{"content":[{"token":"a"}]}}}]})",
        // the first chunk's role (with the id and model it carries), with or without text
        chunk(R"({"role":"assistant","content":"","refusal":null})"),  // OpenAI's first chunk
        chunk(R"({"role":"assistant"})"),
        chunk(R"({"content":""})"),  // empty text is no text, as the full decoder reads it
        chunk(R"({"role":"assistant","content":"Hi","refusal":null})"),
        chunk(R"({"role":""})"),
        R"({"choices":[{"index":0,"delta":{"role":"assistant"}}],"model":"m\u00e9","id":"c\"1"})",
        R"({"id":null,"model":null,"choices":[{"delta":{"role":"assistant"},"index":0}]})",
        R"({"choices":[{"delta":{"role":"assistant"}}]})",
        // the usage chunk, as include_usage sends it, and its variants
        R"({"id":"x","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}})",
        R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"prompt_tokens_details":)"
        R"({"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,)"
        R"("accepted_prediction_tokens":0,"x":[{"reasoning_tokens":"no"}]}}})",
        R"({"choices":[],"usage":{}})",
        R"({"choices":[],"usage":{"prompt_tokens":null,"prompt_tokens_details":null}})",
        R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":-1,"extra":{"prompt_tokens":"x"}}})",
        R"({"choices":[],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":0}})",
        R"({"choices":[],"usage":{"prompt_tokens_details":{"reasoning_tokens":"x"},"completion_tokens_details":{"cached_tokens":[]}}})",
        chunk(R"({"content":"a"})", R"("stop")",
              R"("usage":{"prompt_tokens":1,"completion_tokens":2},)"),
        chunk(R"({"role":"assistant","content":"all"})", R"("stop")",
              R"("usage":{"prompt_tokens":1,"completion_tokens":1},)"),
    };
    for (const auto& data : fast) {
        SCOPED_TRACE(data);
        EXPECT_TRUE(same_as_full_decoder(data));
    }
}

TEST(OpenAiChunkScan, EventsOnlyTheFullDecoderReadsAreHandedToIt) {
    const std::vector<std::string> full{
        chunk(R"({"reasoning_content":"Let me think"})"),
        chunk(R"({"reasoning":"Let me think","content":"a"})"),
        chunk(R"({"refusal":"I can't help with that"})"),
        chunk(
            R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]})"),
        chunk(R"({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]})"),
        chunk(R"({"tool_calls":[]})"),
        R"({"error":{"message":"overloaded","type":"server_error"}})",
        R"({"error":null,"choices":[]})",
        R"({"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]})",
        R"({"choices":[{"index":1,"delta":{"content":"b"}}]})",
        R"({"choices":[{"index":-1,"delta":{"content":"b"}}]})",
        R"({"choices":[{"index":0.0e0,"delta":{"content":"k"}}]})",  // 0 to the full decoder too
        // repeated fields: which one a DOM keeps is the full decoder's business
        chunk(R"({"content":"a","content":"b"})"),
        R"({"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}]})",
        R"({"choices":[],"choices":[{"index":0,"delta":{"content":"b"}}]})",
        chunk(R"({"content":"a"})", R"("stop","finish_reason":"length")"),
        // wrong types and bad JSON: the full decoder's errors, word for word
        chunk(R"({"content":5})"),
        chunk(R"({"content":["a"]})"),
        chunk(R"({"content":{"text":"a"}})"),
        chunk(R"("text")"),
        chunk(R"({"content":"a"})", "7"),
        chunk(R"({"content":"a"})", "true"),
        R"({"choices":{"index":0}})",
        R"({"choices":"none"})",
        R"({"choices":[null]})",
        R"({"choices":["a"]})",
        R"({"choices":[[1]]})",
        R"({"choices":[{"index":"0","delta":{"content":"a"}}]})",
        R"({"usage":5})",
        R"({"usage":[]})",
        R"({"usage":"none"})",
        // a role or usage the full decoder refuses, or reads differently
        chunk(R"({"role":5,"content":"a"})"),
        chunk(R"({"role":{"name":"assistant"}})"),
        chunk(R"({"role":"assistant","role":"user"})"),
        chunk(R"({"role":"assistant"})", "null", R"("id":"again",)"),
        chunk(R"({"role":"assistant"})", "null", R"("model":7,)"),
        R"({"id":["x"],"choices":[]})",
        R"({"choices":[],"usage":{"prompt_tokens":"5"}})",
        R"({"choices":[],"usage":{"prompt_tokens":5.5}})",
        R"({"choices":[],"usage":{"prompt_tokens":5.0,"completion_tokens":1e3}})",  // DOM: 5, 1000
        R"({"choices":[],"usage":{"prompt_tokens":1e19}})",
        R"({"choices":[],"usage":{"prompt_tokens":18446744073709551615}})",
        R"({"choices":[],"usage":{"prompt_tokens":true}})",
        R"({"choices":[],"usage":{"prompt_tokens":[1]}})",
        R"({"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}})",
        R"({"choices":[],"usage":{"prompt_tokens_details":5}})",
        R"({"choices":[],"usage":{"prompt_tokens_details":[]}})",
        R"({"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens":"1"}}})",
        R"({"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":{}}}})",
        R"({"choices":[],"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}})",
        R"({"choices":[{"index":0,"delta":{"content":"a"}}]})"
        "x",
        R"({"choices":[{"index":0,"delta":{"content":"a"}}])",
        R"({"choices":[{"index":0,"delta":{"content":"\xff"}}]})",
        R"([{"choices":[]}])",
        "42",
        "null",
        "",
        "{\"a\":" + std::string(70, '[') + std::string(70, ']') + "}",
    };
    for (const auto& data : full) {
        SCOPED_TRACE(data);
        EXPECT_FALSE(same_as_full_decoder(data));
    }
}

TEST(OpenAiChunkScan, AChunkRepeatingTheLastEnvelopeIsTakenWithoutParsing) {
    OpenAiChunkScanner scan;
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"Hel"})")));
    EXPECT_FALSE(scan.enveloped());  // the first one is parsed
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"lo, world"})")));
    EXPECT_TRUE(scan.enveloped());
    EXPECT_EQ(scan.text(), "lo, world");
    EXPECT_FALSE(scan.finish().has_value());
    // Escapes and non-ASCII text are parsed (their bytes are not their text).
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"a\"b"})")));
    EXPECT_FALSE(scan.enveloped());
    EXPECT_EQ(scan.text(), "a\"b");
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"été"})")));
    EXPECT_FALSE(scan.enveloped());
    // Another envelope (a finish reason) is parsed, then becomes the one to match.
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"end"})", R"("stop")")));
    EXPECT_FALSE(scan.enveloped());
    ASSERT_TRUE(scan.scan(chunk(R"({"content":"again"})", R"("stop")")));
    EXPECT_TRUE(scan.enveloped());
    EXPECT_EQ(scan.text(), "again");
    EXPECT_EQ(scan.finish(), "stop");
    // The envelope's bytes around a quote or a control character: not taken, and invalid JSON.
    const std::string around = chunk(R"({"content":"X"})", R"("stop")");
    const std::size_t x = around.find("\"X\"") + 1;
    for (const std::string middle : {"a\"b", "a\nb", "a\\"}) {
        SCOPED_TRACE(middle);
        EXPECT_FALSE(scan.scan(around.substr(0, x) + middle + around.substr(x + 1)));
        EXPECT_FALSE(scan.enveloped());
    }
}

TEST(OpenAiChunkScan, EnvelopedChunksDecodeAsTheFullDecoderDecodesThem) {
    // One decoder through a sequence whose envelopes repeat, change and break: every event's
    // result must be the full decoder's.
    const std::string base = chunk(R"({"content":"one"})");
    const std::string usage = R"("usage":{"prompt_tokens":1,"completion_tokens":2},)";
    const std::vector<std::string> events{
        chunk(R"({"role":"assistant","content":""})"),
        // a role or usage chunk is not an envelope: the next would lose its role or usage
        chunk(R"({"role":"assistant","content":"Hi"})"),
        chunk(R"({"role":"assistant","content":"Ho"})"),
        chunk(R"({"content":"u1"})", "null", usage),
        chunk(R"({"content":"u2"})", "null", usage),
        base,
        chunk(R"({"content":"two three"})"),
        chunk(R"({"content":"x"})"),
        chunk(R"({"content":"tab\tescaped"})"),
        chunk(R"({"content":"after"})"),
        chunk(R"({"content":"other"})", "null", R"("service_tier":"default",)"),
        chunk(R"({"content":"more"})", "null", R"("service_tier":"default",)"),
        base.substr(0, base.size() - 1),          // the envelope without its last brace
        base.substr(0, base.size() - 3) + "}}}",  // a different tail
        chunk(R"({"content":"last"})", R"("length")"),
        chunk(R"({"content":"last2"})", R"("length")"),
    };
    OpenAiStreamDecoder fast;
    OpenAiStreamDecoder full(false);
    for (const std::string& data : events) {
        EXPECT_EQ(decode_with(fast, data), decode_with(full, data)) << data;
    }
    EXPECT_GE(fast.fast_events(), 8u);
}

TEST(OpenAiChunkScan, TheEnvelopeIsTheDeltasContentWhereverItIsWrittenLikeAnotherKey) {
    // The delta's content key with a space or an escape, and another object's "content":"
    // later in the chunk: the envelope must hold the delta's string, not that one.
    for (const std::string key : {R"("content": )", R"("cont\u0065nt":)"}) {
        SCOPED_TRACE(key);
        const std::vector<std::string> events{
            R"({"choices":[{"delta":{)" + key + R"("hi"}}],"x":{"content":"y"}})",
            R"({"choices":[{"delta":{)" + key + R"("hi"}}],"x":{"content":"zz"}})",
            R"({"choices":[{"delta":{)" + key + R"("ho"}}],"x":{"content":"y"}})",
            R"({"choices":[{"delta":{)" + key + R"("hi"}}],"x":{"content":"y"}})",
        };
        OpenAiStreamDecoder fast;
        OpenAiStreamDecoder full(false);
        for (const std::string& data : events) {
            EXPECT_EQ(decode_with(fast, data), decode_with(full, data)) << data;
        }
        EXPECT_EQ(fast.fast_events(), events.size());
    }
    // Written plainly, the same chunks repeat the envelope around the delta's text.
    OpenAiChunkScanner scan;
    ASSERT_TRUE(scan.scan(R"({"choices":[{"delta":{"content":"hi"}}],"x":{"content":"y"}})"));
    ASSERT_TRUE(scan.scan(R"({"choices":[{"delta":{"content":"ho"}}],"x":{"content":"y"}})"));
    EXPECT_TRUE(scan.enveloped());
    EXPECT_EQ(scan.text(), "ho");
}

TEST(OpenAiChunkScan, AStreamMetersAlikeOnBothPaths) {
    for (const std::string& name : stream_fixtures("openai")) {
        SCOPED_TRACE(name);
        const std::string body = read_fixture(name);
        OpenAiStreamDecoder fast;
        OpenAiStreamDecoder full(false);
        sse::SseParser parser;
        std::size_t events = 0;
        (void)parser.feed(body, [&](const sse::SseEvent& e) {
            ++events;
            EXPECT_EQ(decode_with(fast, e.data), decode_with(full, e.data)) << e.data;
        });
        EXPECT_GT(events, 0u);
        if (name == "openai/stream_basic.sse") {
            EXPECT_GT(fast.fast_events(), 0u);
        }
        // A real server's stream: every chunk, the finish one with its usage and timings
        // included, on the fast path ([DONE] is not a chunk).
        if (name == "openai/stream_llama_cpp.sse") {
            EXPECT_EQ(fast.fast_events(), events - 1);
        }
    }
}

}  // namespace
}  // namespace tokenradar::dialect
