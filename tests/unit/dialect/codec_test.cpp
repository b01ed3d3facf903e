#include <tokenradar/dialect/codec.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using namespace testing_util;
using K = StreamDelta::Kind;

TEST(Codec, ApiNames) {
    for (Api a : {Api::openai, Api::anthropic, Api::gemini}) EXPECT_EQ(parse_api(to_string(a)), a);
    EXPECT_FALSE(parse_api("cohere"));
}

TEST(Codec, EveryStreamFixtureRechunkedGivesSameDeltas) {
    int files = 0;
    for (Api api : {Api::openai, Api::anthropic, Api::gemini}) {
        for (const auto& f : stream_fixtures(std::string(to_string(api)))) {
            ++files;
            const std::string bytes = read_fixture(f);
            const Decoded whole = decode_stream(api, bytes);
            ASSERT_TRUE(whole.ok) << f << ": " << whole.error;
            ASSERT_FALSE(whole.events.empty()) << f;
            for (std::string_view eol : {"\n", "\r", "\r\n"}) {
                Decoded v = decode_stream(api, tokenradar::testing::with_line_endings(bytes, eol));
                ASSERT_EQ(v.events, whole.events) << f << " eol " << eol.size();
            }
            for (unsigned seed = 0; seed < 60; ++seed) {
                Decoded chunked = decode_chunks(api, random_split(bytes, seed));
                ASSERT_TRUE(chunked.ok) << f << " seed " << seed;
                ASSERT_EQ(chunked.events, whole.events) << f << " seed " << seed;
            }
        }
    }
    EXPECT_GE(files, 12);
}

TEST(Codec, ErrorBodiesParse) {
    auto oa = parse_error_body(Api::openai, 429, read_fixture("openai/error_rate_limit.json"));
    EXPECT_EQ(oa.code, Errc::rate_limited);
    EXPECT_EQ(oa.type, "tokens");
    EXPECT_EQ(oa.message.rfind("Rate limit reached", 0), 0u);
    auto an =
        parse_error_body(Api::anthropic, 529, read_fixture("anthropic/error_overloaded.json"));
    EXPECT_EQ(an.code, Errc::overloaded);
    EXPECT_EQ(an.type, "overloaded_error");
    EXPECT_EQ(an.message, "Overloaded");
    auto ge =
        parse_error_body(Api::gemini, 429, read_fixture("gemini/error_resource_exhausted.json"));
    EXPECT_EQ(ge.code, Errc::rate_limited);
    EXPECT_EQ(ge.type, "RESOURCE_EXHAUSTED");
    // Not JSON: classified by status, body kept as message.
    auto html = parse_error_body(Api::openai, 502, "<html>Bad Gateway</html>");
    EXPECT_EQ(html.code, Errc::upstream_http_error);
    EXPECT_EQ(html.message, "<html>Bad Gateway</html>");
    // ...as valid UTF-8, which the JSON bodies quoting it need (a bad byte becomes U+FFFD).
    EXPECT_EQ(parse_error_body(Api::openai, 502, "bad \xff byte").message, "bad \xEF\xBF\xBD byte");
    EXPECT_EQ(parse_error_body(Api::gemini, 404, "{}").code, Errc::not_found);
}

TEST(Codec, ErrorBodiesEmitAndRoundTrip) {
    EXPECT_EQ(emit_error_body(Api::anthropic, Errc::overloaded, "busy"),
              R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})");
    EXPECT_EQ(emit_error_body(Api::gemini, Errc::rate_limited, "slow down"),
              R"({"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}})");
    EXPECT_EQ(error_http_status(Api::anthropic, Errc::overloaded), 529);
    EXPECT_EQ(error_http_status(Api::openai, Errc::overloaded), 503);
    for (Api api : {Api::openai, Api::anthropic, Api::gemini}) {
        for (Errc e :
             {Errc::bad_request, Errc::unauthorized, Errc::forbidden, Errc::not_found,
              Errc::payload_too_large, Errc::rate_limited, Errc::overloaded, Errc::timeout_total}) {
            std::string body = emit_error_body(api, e, "m\"sg");
            ErrorBody parsed = parse_error_body(api, error_http_status(api, e), body);
            EXPECT_EQ(parsed.code, e) << to_string(api) << " " << body;
            EXPECT_EQ(parsed.message, "m\"sg");
            EXPECT_EQ(parsed.type, error_type(api, e));
        }
    }
}

TEST(Codec, TranslatesOpenAiRequestThroughEveryDialect) {
    auto req = parse_request(Api::openai, read_fixture("openai/request_tools.json"));
    ASSERT_TRUE(req);
    for (Api api : {Api::anthropic, Api::gemini}) {
        auto body = emit_request(api, *req);
        ASSERT_TRUE(body) << body.error().message;
        auto back = parse_request(api, *body, req->model, req->stream);
        ASSERT_TRUE(back) << back.error().message << "\n" << *body;
        ASSERT_EQ(back->messages.size(), req->messages.size()) << *body;
        for (std::size_t i = 0; i < req->messages.size(); ++i) {
            if (api == Api::gemini) {
                // Gemini fileData needs a MIME type; emit guesses one for bare image URLs.
                for (auto& c : back->messages[i].content) {
                    if (c.kind == ContentPart::Kind::image_url) c.media_type.clear();
                }
            }
            EXPECT_EQ(back->messages[i].role, req->messages[i].role);
            EXPECT_EQ(back->messages[i].content, req->messages[i].content)
                << to_string(api) << " " << i;
            EXPECT_EQ(back->messages[i].tool_call_id, req->messages[i].tool_call_id);
        }
        EXPECT_EQ(back->messages[2].tool_calls.at(0).arguments,
                  req->messages[2].tool_calls.at(0).arguments);
        EXPECT_EQ(back->tools, req->tools);
        EXPECT_EQ(back->max_tokens, req->max_tokens);
        EXPECT_EQ(back->stop, req->stop);
    }
}

TEST(Codec, TranslatesEveryStreamIntoEveryDialect) {
    for (Api from : {Api::openai, Api::anthropic, Api::gemini}) {
        for (const auto& f : stream_fixtures(std::string(to_string(from)))) {
            auto src = decode_stream(from, read_fixture(f));
            ASSERT_TRUE(src.ok) << f;
            for (Api to : {Api::openai, Api::anthropic, Api::gemini}) {
                auto d = decode_stream(to, encode_all(to, src.flat()));
                ASSERT_TRUE(d.ok) << f << " -> " << to_string(to) << ": " << d.error;
                EXPECT_EQ(d.text(), src.text()) << f << " -> " << to_string(to);
                EXPECT_EQ(d.text(K::reasoning), src.text(K::reasoning))
                    << f << " -> " << to_string(to);
                EXPECT_EQ(d.of(K::error).size(), src.of(K::error).size())
                    << f << " -> " << to_string(to);
                if (src.of(K::error).empty()) {
                    ASSERT_FALSE(d.of(K::finish).empty()) << f << " -> " << to_string(to);
                    EXPECT_EQ(d.of(K::finish).back().finish_reason,
                              src.of(K::finish).back().finish_reason);
                    EXPECT_EQ(d.flat().back().kind, K::done) << f << " -> " << to_string(to);
                }
            }
        }
    }
}

TEST(Codec, UnknownAndEdgeEventsAreIgnorableNotErrors) {
    std::vector<StreamDelta> out;
    auto an = make_stream_decoder(Api::anthropic);
    ASSERT_TRUE(an->decode("future_event", R"({"type":"future_event","x":1})", out));
    ASSERT_TRUE(an->decode("ping", "{}", out));  // no type in data: the event name decides
    ASSERT_TRUE(an->decode(
        "content_block_delta",
        R"({"type":"content_block_delta","index":9,"delta":{"type":"input_json_delta","partial_json":"{"}})",
        out));  // a block that never started
    for (const auto& d : out) EXPECT_EQ(d.kind, K::ignorable);
    out.clear();
    auto oa = make_stream_decoder(Api::openai);
    ASSERT_TRUE(oa->decode("message", "[DONE] ", out));
    ASSERT_TRUE(oa->decode("message",
                           R"({"choices":[{"index":1,"delta":{"content":"other choice"}}]})", out));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].kind, K::done);
    EXPECT_EQ(out[1].kind, K::ignorable);
    out.clear();
    auto ge = make_stream_decoder(Api::gemini);
    ASSERT_TRUE(ge->decode(
        "message",
        R"({"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"MAX_TOKENS"}]})",
        out));
    EXPECT_EQ(out.back().kind, K::done);
    EXPECT_EQ(out[out.size() - 2].finish_reason, FinishReason::length);
    EXPECT_FALSE(
        ge->decode("message", R"({"candidates":[{"content":{"parts":[{"text":1}]}}]})", out));
}

TEST(Codec, EncodersAdoptUpstreamIdAndModelWhenMetaIsEmpty) {
    auto src = decode_stream(Api::anthropic, read_fixture("anthropic/stream_basic.sse"));
    ASSERT_TRUE(src.ok);
    for (Api to : {Api::openai, Api::anthropic, Api::gemini}) {
        auto enc = make_stream_encoder(to, StreamMeta{});
        std::string out;
        for (const auto& d : src.flat()) enc->encode(d, out);
        enc->finish(out);
        EXPECT_NE(out.find("msg_01Xk3QkZ9"), std::string::npos) << to_string(to);
        EXPECT_NE(out.find("claude-3-5-sonnet-20241022"), std::string::npos) << to_string(to);
    }
}

}  // namespace
}  // namespace tokenradar::dialect
