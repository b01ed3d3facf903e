#include <tokenradar/dialect/translate.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/sse/sse_writer.hpp>

#include <boost/json.hpp>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tokenradar::dialect {
namespace {

namespace json = boost::json;
using namespace testing_util;
using K = StreamDelta::Kind;

constexpr std::int64_t kCreated = 1700000000;

json::value parse_json(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    EXPECT_FALSE(ec) << ec.message() << ": " << text;
    return v;
}

ChatRequest client_request(std::string_view body) {
    auto req = parse_openai_request(body);
    EXPECT_TRUE(req) << req.error().message;
    return req ? *req : ChatRequest{};
}

// The fixture request with `patch`'s top-level fields set (null removes a field).
ChatRequest patched_request(std::string_view patch) {
    json::object body = parse_json(read_fixture("translate/openai_request.json")).as_object();
    const json::value fields = parse_json(patch);
    for (const auto& kv : fields.as_object()) {
        if (kv.value().is_null())
            body.erase(kv.key());
        else
            body[kv.key()] = kv.value();
    }
    return client_request(json::serialize(body));
}

json::object upstream_body(const ChatRequest& req, Api api, std::string_view model = "up-model") {
    auto call = make_upstream_call(req, api, "", model, Secret("sk-test"));
    EXPECT_TRUE(call) << call.error().message;
    return call ? parse_json(call->body).as_object() : json::object();
}

std::string header(const HttpCall& call, std::string_view name) {
    for (const auto& [k, v] : call.headers) {
        if (k == name) return v;
    }
    return "<absent>";
}

struct Translated {
    std::string bytes;
    bool terminated = false;
    bool complete = false;
};

// Upstream bytes -> SseParser -> decoder -> StreamTranslator, fed in the given chunks.
Translated translate_chunks(Api api, const std::vector<std::string>& chunks, bool usage,
                            bool finish = true) {
    Translated t;
    sse::SseParser parser;
    auto decoder = make_stream_decoder(api);
    StreamTranslator tr(api, usage, StreamMeta{"", "", kCreated, true});
    std::vector<StreamDelta> deltas;
    for (const auto& c : chunks) {
        auto fed = parser.feed(c, [&](const sse::SseEvent& e) {
            deltas.clear();
            if (auto d = decoder->decode(e.event, e.data, deltas); !d)
                tr.fail(Errc::protocol_error, d.error().message, t.bytes);
            else
                tr.on_event(e, deltas, t.bytes);
        });
        EXPECT_TRUE(fed);
    }
    if (finish) tr.finish(t.bytes);
    t.terminated = tr.terminated();
    t.complete = tr.complete();
    return t;
}

Translated translate_stream(Api api, const std::string& bytes, bool usage, bool finish = true) {
    return translate_chunks(api, {bytes}, usage, finish);
}

// Every event of an OpenAI stream: parsed JSON, or the string "[DONE]". Fails the test on an
// event that is neither.
std::vector<json::value> client_events(const std::string& bytes) {
    std::vector<json::value> out;
    sse::SseParser parser;
    auto fed = parser.feed(bytes, [&](const sse::SseEvent& e) {
        EXPECT_EQ(e.event, "message");  // OpenAI streams carry no event names
        if (e.data == "[DONE]") {
            out.emplace_back("[DONE]");
            return;
        }
        boost::system::error_code ec;
        json::value v = json::parse(e.data, ec);
        EXPECT_FALSE(ec) << "not JSON: " << e.data;
        out.push_back(std::move(v));
    });
    EXPECT_TRUE(fed);
    EXPECT_FALSE(parser.finish()) << "truncated event at the end";
    return out;
}

// ---- requests ------------------------------------------------------------------------------

TEST(TranslateRequest, AnthropicMatchesTheFixture) {
    ChatRequest req = client_request(read_fixture("translate/openai_request.json"));
    auto call = make_upstream_call(req, Api::anthropic, "", "claude-sonnet-4-5", Secret("sk-ant"));
    ASSERT_TRUE(call) << call.error().message;
    EXPECT_EQ(call->target, "/v1/messages");
    EXPECT_EQ(header(*call, "x-api-key"), "sk-ant");
    EXPECT_EQ(header(*call, "anthropic-version"), kAnthropicVersion);
    EXPECT_EQ(header(*call, "accept"), "text/event-stream");
    EXPECT_EQ(parse_json(call->body), parse_json(read_fixture("translate/anthropic_request.json")))
        << call->body;
    // What we send, our own Anthropic parser (and so the sim) accepts.
    EXPECT_TRUE(parse_anthropic_request(call->body));
}

TEST(TranslateRequest, GeminiMatchesTheFixture) {
    ChatRequest req = client_request(read_fixture("translate/openai_request.json"));
    auto call = make_upstream_call(req, Api::gemini, "/v1beta", "gemini-2.5-flash", Secret("g"));
    ASSERT_TRUE(call) << call.error().message;
    EXPECT_EQ(call->target, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    EXPECT_EQ(header(*call, "x-goog-api-key"), "g");
    EXPECT_EQ(parse_json(call->body), parse_json(read_fixture("translate/gemini_request.json")))
        << call->body;
    auto back = parse_gemini_request(call->body, "gemini-2.5-flash", true);
    ASSERT_TRUE(back) << back.error().message;
    // The system and developer prompts share Gemini's one systemInstruction.
    EXPECT_EQ(back->messages.size(), req.messages.size() - 1);
}

TEST(TranslateRequest, GeminiThoughtSignaturesMakeTheRoundTrip) {
    // Gemini 3 sends a thoughtSignature with a function call and wants it back next turn.
    auto resp = translate_response(Api::gemini, R"({"candidates":[{"content":{"parts":[
        {"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2lnLTE="},
        {"functionCall":{"name":"g","args":{}}}],"role":"model"},"finishReason":"STOP"}],
        "responseId":"r"})");
    ASSERT_TRUE(resp);
    json::value calls = parse_json(*resp).at("choices").at(0).at("message").at("tool_calls");
    EXPECT_EQ(calls.at(0).at("extra_content"),
              parse_json(R"({"google":{"thought_signature":"c2lnLTE="}})"));
    EXPECT_FALSE(calls.at(1).as_object().contains("extra_content"));
    // The client sends the assistant message back as it got it: the signature goes up again.
    json::object next = parse_json(R"({"model":"m","messages":[{"role":"user","content":"x"},
        {"role":"tool","tool_call_id":"call_r_0","content":"1"},
        {"role":"tool","tool_call_id":"call_r_1","content":"2"}]})")
                            .as_object();
    json::object assistant{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}};
    next["messages"].as_array().insert(next["messages"].as_array().begin() + 1, assistant);
    auto body = upstream_body(client_request(json::serialize(next)), Api::gemini);
    const auto& parts = body.at("contents").at(1).at("parts").as_array();
    EXPECT_EQ(parts.at(0).at("thoughtSignature"), "c2lnLTE=");
    EXPECT_FALSE(parts.at(1).as_object().contains("thoughtSignature"));
    // A client that dropped it: Google's documented validator-skip value, on the first call.
    next["messages"].as_array()[1].as_object()["tool_calls"].as_array()[0].as_object().erase(
        "extra_content");
    auto unsigned_body = upstream_body(client_request(json::serialize(next)), Api::gemini);
    EXPECT_EQ(unsigned_body.at("contents").at(1).at("parts").at(0).at("thoughtSignature"),
              "skip_thought_signature_validator");
    // Streams carry it too.
    Translated t = translate_stream(
        Api::gemini,
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\","
        "\"args\":{}},\"thoughtSignature\":\"c2lnLTE=\"}],\"role\":\"model\"},"
        "\"finishReason\":\"STOP\"}],\"responseId\":\"r\"}\n\n",
        false);
    EXPECT_NE(t.bytes.find(R"("extra_content":{"google":{"thought_signature":"c2lnLTE="}})"),
              std::string::npos)
        << t.bytes;
}

// The passthrough body is the client's own text with the top-level `model` value replaced
// and, for a stream, stream_options.include_usage set: whitespace, key order, number and string
// text stay as the client wrote them, and nested or quoted "model"s are not members to touch.
TEST(TranslateRequest, PassthroughBodyIsTheClientsTextWithTwoMembersReplaced) {
    struct Case {
        const char* body;
        const char* expected;
    };
    for (
        const auto& c : {
            Case{R"({ "model" : "m", "temperature": 0.50, "n": 1e3,
  "messages": [{"role": "user", "content": "say \"model\": \\\"x\\"}],
  "metadata": {"model": "nested"} }  )",
                 R"({ "model" : "up/\"q\"", "temperature": 0.50, "n": 1e3,
  "messages": [{"role": "user", "content": "say \"model\": \\\"x\\"}],
  "metadata": {"model": "nested"} }  )"},
            Case{
                R"({"stream":true,"model":"m","messages":[]} )",
                R"({"stream":true,"model":"up/\"q\"","messages":[],"stream_options":{"include_usage":true}} )"},
            Case{
                R"({"stream":true,"stream_options":null,"model":"m","messages":[]})",
                R"({"stream":true,"stream_options":{"include_usage":true},"model":"up/\"q\"","messages":[]})"},
            Case{
                R"({"stream_options":{"include_usage":false,"z":[1,{"y":2}]},"stream":true,"model":"m","messages":[]})",
                R"({"stream_options":{"include_usage":true,"z":[1,{"y":2}]},"stream":true,"model":"up/\"q\"","messages":[]})"},
            Case{
                R"({"model":"m","messages":[],"stream":false,"stream_options":{"include_usage":false}})",
                R"({"model":"up/\"q\"","messages":[],"stream":false,"stream_options":{"include_usage":false}})"},
            // Repeated or escaped top-level keys: parsers differ on repeats, and an escaped
            // key may spell `model`, so the body is the DOM's, re-serialized.
            Case{
                R"({"stream":false,"messages":[], "model":"m", "stream":true})",
                R"({"stream":true,"messages":[],"model":"up/\"q\"","stream_options":{"include_usage":true}})"},
            Case{R"({"mod\u0065l":"m", "messages":[], "temperature":0.5})",
                 R"({"model":"up/\"q\"","messages":[],"temperature":5E-1})"},
        }) {
        ChatRequest req = client_request(c.body);
        auto call = make_upstream_call(req, Api::openai, "/v1", "up/\"q\"", Secret("sk"), c.body);
        ASSERT_TRUE(call) << call.error().message;
        EXPECT_EQ(call->body, c.expected) << c.body;
    }
}

// with_model (the legacy /v1/completions passthrough): only `model` changes, and a stream asks
// for usage (the client's other stream options kept); repeated or escaped keys fall back to
// the DOM like the chat passthrough.
TEST(TranslateRequest, WithModelReplacesOnlyTheModelAndAsksAStreamForUsage) {
    const auto spliced = [](std::string_view body) {
        const json::object original = parse_json(body).as_object();
        const auto* stream = original.if_contains("stream");
        return with_model(original, body, "up/\"q\"",
                          stream != nullptr && stream->is_bool() && stream->get_bool());
    };
    EXPECT_EQ(spliced(R"({ "prompt": "model: x", "model" : "m", "temperature": 0.50 })"),
              R"({ "prompt": "model: x", "model" : "up/\"q\"", "temperature": 0.50 })");
    EXPECT_EQ(
        spliced(R"({"model":"m","prompt":"p","stream":true})"),
        R"({"model":"up/\"q\"","prompt":"p","stream":true,"stream_options":{"include_usage":true}})");
    EXPECT_EQ(
        spliced(R"({"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}})"),
        R"({"model":"up/\"q\"","stream":true,"stream_options":{"include_usage":true,"x":1}})");
    EXPECT_EQ(spliced(R"({"model":"a","prompt":"p","model":"b"})"),
              R"({"model":"up/\"q\"","prompt":"p"})");
}

TEST(TranslateRequest, PassthroughKeepsEveryFieldAndReplacesOnlyModel) {
    const std::string body = R"({"model":"gpt-4o","messages":[{"role":"user","content":[
        {"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}],
        "seed":7,"logprobs":true,"top_logprobs":3,"n":2,"user":"u1","vendor_x":{"a":[1,2]},
        "response_format":{"type":"json_object"},"stream":true,
        "stream_options":{"include_usage":false,"include_obfuscation":false}})";
    ChatRequest req = client_request(body);
    auto call = make_upstream_call(req, Api::openai, "/v1", "gpt-4o-2024-08-06", Secret("sk"));
    ASSERT_TRUE(call) << call.error().message;
    EXPECT_EQ(call->target, "/v1/chat/completions");
    EXPECT_EQ(header(*call, "authorization"), "Bearer sk");
    json::object expected = parse_json(body).as_object();
    expected["model"] = "gpt-4o-2024-08-06";
    expected["stream_options"].as_object()["include_usage"] = true;  // the gateway meters
    EXPECT_EQ(parse_json(call->body), json::value(expected)) << call->body;

    // Absent stream_options are added for streams, left alone otherwise.
    auto stream =
        upstream_body(client_request(R"({"model":"m","messages":[],"stream":true})"), Api::openai);
    EXPECT_EQ(stream.at("stream_options"), (json::object{{"include_usage", true}}));
    EXPECT_EQ(stream.at("model"), "up-model");
    auto plain =
        upstream_body(client_request(R"({"model":"m","messages":[],"seed":1})"), Api::openai);
    EXPECT_FALSE(plain.contains("stream_options"));
    EXPECT_EQ(plain.at("seed"), 1);
}

TEST(TranslateRequest, RefusesWhatTheTargetCannotServeNamingTheField) {
    struct Case {
        Api target;
        const char* patch;
        const char* message;
    } cases[] = {
        {Api::anthropic, R"({"n":2})",
         "n: 2 choices cannot be served by an anthropic upstream (only n = 1)"},
        {Api::gemini, R"({"n":3})",
         "n: 3 choices cannot be served by a gemini upstream (the gateway translates one "
         "candidate: only n = 1)"},
        {Api::anthropic, R"({"logprobs":true})",
         "logprobs: token log probabilities cannot be served by an anthropic upstream (it has "
         "none)"},
        {Api::gemini, R"({"top_logprobs":5})",
         "top_logprobs: token log probabilities cannot be served by a gemini upstream (the "
         "gateway does not translate them)"},
        {Api::anthropic, R"({"logit_bias":{"50256":-100}})",
         "logit_bias: token biases cannot be served by an anthropic upstream (it has no logit "
         "bias)"},
        {Api::gemini, R"({"logit_bias":{"50256":-100}})",
         "logit_bias: token biases cannot be served by a gemini upstream (it has no logit bias)"},
        {Api::anthropic, R"({"seed":42})",
         "seed: a sampling seed cannot be served by an anthropic upstream (it has no seed)"},
        {Api::anthropic, R"({"presence_penalty":0.5})",
         "presence_penalty: 0.5 cannot be served by an anthropic upstream (it has no repetition "
         "penalties)"},
        {Api::anthropic, R"({"frequency_penalty":-1})",
         "frequency_penalty: -1 cannot be served by an anthropic upstream (it has no repetition "
         "penalties)"},
        {Api::anthropic, R"({"temperature":1.5})",
         "temperature: 1.5 cannot be served by an anthropic upstream (it accepts 0 to 1)"},
        {Api::anthropic, R"({"stop":["END","\n\n"]})",
         "stop: the whitespace-only stop sequence \"\\n\\n\" cannot be served by an anthropic "
         "upstream (it rejects them)"},
        {Api::anthropic, R"({"response_format":{"type":"json_object"}})",
         "response_format: json_object cannot be served by an anthropic upstream (it has JSON "
         "output only with a schema: use json_schema)"},
        {Api::gemini, R"({"response_format":{"type":"grammar","grammar":"x"}})",
         "response_format: the type \"grammar\" cannot be served by a gemini upstream (not "
         "translated)"},
        {Api::anthropic, R"({"reasoning_effort":"high"})",
         "reasoning_effort: \"high\" cannot be served by an anthropic upstream (its extended "
         "thinking needs a token budget and the signed thinking blocks of earlier turns sent "
         "back, which OpenAI messages cannot carry)"},
        {Api::gemini, R"({"parallel_tool_calls":false})",
         "parallel_tool_calls: false cannot be served by a gemini upstream (it cannot be limited "
         "to one function call per turn)"},
        {Api::gemini, R"({"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto",
            "tools":[]}}})",
         "tool_choice: the type \"allowed_tools\" cannot be served by a gemini upstream (not "
         "translated: use auto, none, required or one function)"},
        {Api::gemini, R"({"modalities":["text","audio"]})",
         "modalities: [\"text\",\"audio\"] cannot be served by a gemini upstream (the gateway "
         "translates text output only)"},
        {Api::anthropic, R"({"audio":{"voice":"alloy","format":"wav"}})",
         "audio: audio output cannot be served by an anthropic upstream (the gateway translates "
         "text output only)"},
        {Api::gemini, R"({"web_search_options":{}})",
         "web_search_options: web search cannot be served by a gemini upstream (its Google "
         "Search grounding is not translated by the gateway)"},
        {Api::anthropic, R"({"verbosity":"low"})",
         "verbosity: \"low\" cannot be served by an anthropic upstream (it has no verbosity "
         "setting)"},
        {Api::gemini, R"({"functions":[{"name":"f"}]})",
         "functions: the deprecated functions API cannot be served by a gemini upstream (send "
         "tools instead)"},
    };
    for (const auto& c : cases) {
        auto call = make_upstream_call(patched_request(c.patch), c.target, "", "m", Secret());
        ASSERT_FALSE(call) << c.patch;
        EXPECT_EQ(call.error().code, Errc::unsupported) << c.patch;
        EXPECT_EQ(http_status(call.error().code), 400);
        EXPECT_EQ(call.error().message, c.message);
        // The same request passes through to an OpenAI upstream untouched.
        EXPECT_TRUE(make_upstream_call(patched_request(c.patch), Api::openai, "", "m", Secret()));
    }
    auto bad = make_upstream_call(patched_request(R"({"reasoning_effort":"max"})"), Api::gemini, "",
                                  "m", Secret());
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::bad_request);
}

TEST(TranslateRequest, RefusesImagesWhereTheTargetTakesText) {
    ChatRequest sys = client_request(R"({"model":"m","messages":[{"role":"system","content":[
        {"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]})");
    for (Api api : {Api::anthropic, Api::gemini}) {
        auto call = make_upstream_call(sys, api, "", "m", Secret());
        ASSERT_FALSE(call);
        EXPECT_EQ(call.error().message.rfind("messages[0].content[1]: an image in a system "
                                             "message cannot be served by ",
                                             0),
                  0u)
            << call.error().message;
    }
    ChatRequest tool = client_request(R"({"model":"m","messages":[
        {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"shot",
        "arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[
        {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]})");
    auto gemini = make_upstream_call(tool, Api::gemini, "", "m", Secret());
    ASSERT_FALSE(gemini);
    EXPECT_EQ(gemini.error().message.rfind("messages[1].content[0]: an image in a tool result", 0),
              0u);
    // Anthropic takes images inside tool_result blocks, and so does our parser.
    auto anthropic = make_upstream_call(tool, Api::anthropic, "", "m", Secret());
    ASSERT_TRUE(anthropic) << anthropic.error().message;
    EXPECT_TRUE(parse_anthropic_request(anthropic->body)) << anthropic->body;
}

// cache_control as LiteLLM and Anthropic's OpenAI-compatible endpoint take it: on content parts
// of every role, on a message (its last block), and on a tool object.
constexpr std::string_view kCacheMarked = R"({"model":"m","tools":[
    {"type":"function","function":{"name":"a","parameters":{"type":"object"}}},
    {"type":"function","function":{"name":"b"},"cache_control":{"type":"ephemeral","ttl":"1h"}}],
  "messages":[
    {"role":"system","content":[{"type":"text","text":"rules","cache_control":{"type":"ephemeral"}}]},
    {"role":"user","content":[{"type":"text","text":"look"},
      {"type":"image_url","image_url":{"url":"https://x/a.png"},"cache_control":{"type":"ephemeral"}}]},
    {"role":"assistant","content":"calling","cache_control":{"type":"ephemeral","ttl":"5m"},
      "tool_calls":[{"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]},
    {"role":"tool","tool_call_id":"c1","content":[
      {"type":"text","text":"42","cache_control":{"type":"ephemeral"}}]},
    {"role":"user","content":"thanks"}]})";

TEST(TranslateRequest, CacheControlReachesAnthropicBlocksUntouched) {
    const auto body = upstream_body(client_request(kCacheMarked), Api::anthropic);
    const json::value ephemeral = parse_json(R"({"type":"ephemeral"})");
    const auto& tools = body.at("tools").as_array();
    EXPECT_FALSE(tools.at(0).as_object().contains("cache_control"));
    EXPECT_EQ(tools.at(1).at("cache_control"), parse_json(R"({"type":"ephemeral","ttl":"1h"})"));
    EXPECT_EQ(
        body.at("system"),
        parse_json(R"([{"type":"text","text":"rules","cache_control":{"type":"ephemeral"}}])"));
    const auto& messages = body.at("messages").as_array();
    ASSERT_EQ(messages.size(), 3u) << json::serialize(body);
    const auto& user = messages.at(0).at("content").as_array();
    EXPECT_FALSE(user.at(0).as_object().contains("cache_control"));
    EXPECT_EQ(user.at(1).at("type"), "image");
    EXPECT_EQ(user.at(1).at("cache_control"), ephemeral);
    // A string content with a message-level mark becomes a marked text block, before the
    // tool_use block.
    EXPECT_EQ(messages.at(1).at("content").at(0), parse_json(R"({"type":"text","text":"calling",
                  "cache_control":{"type":"ephemeral","ttl":"5m"}})"));
    EXPECT_EQ(messages.at(1).at("content").at(1).at("type"), "tool_use");
    // The tool result opens the last user turn; the unmarked text after it carries no mark.
    const auto& result = messages.at(2).at("content").at(0);
    EXPECT_EQ(result.at("type"), "tool_result");
    EXPECT_EQ(result.at("content").at(0).at("cache_control"), ephemeral);
    EXPECT_EQ(messages.at(2).at("content").at(1), parse_json(R"({"type":"text","text":"thanks"})"));
    // What we send, our Anthropic parser reads back with the same marks.
    auto back = parse_anthropic_request(json::serialize(body));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->tools.at(1).cache_control, R"({"type":"ephemeral","ttl":"1h"})");
    EXPECT_EQ(back->messages.at(0).content.at(0).cache_control, R"({"type":"ephemeral"})");
}

TEST(TranslateRequest, CacheControlIsDroppedForGeminiAndKeptForOpenAi) {
    const ChatRequest req = client_request(kCacheMarked);
    auto gemini = make_upstream_call(req, Api::gemini, "", "m", Secret());
    ASSERT_TRUE(gemini) << gemini.error().message;
    EXPECT_EQ(gemini->body.find("cache_control"), std::string::npos) << gemini->body;
    EXPECT_EQ(gemini->body.find("ephemeral"), std::string::npos) << gemini->body;
    auto openai = make_upstream_call(req, Api::openai, "", "m", Secret(), kCacheMarked);
    ASSERT_TRUE(openai);
    json::object expected = parse_json(kCacheMarked).as_object();
    EXPECT_EQ(parse_json(openai->body), json::value(expected));
}

TEST(TranslateRequest, MoreThanFourBreakpointsAreTheUpstreamsToRefuse) {
    std::string body = R"({"model":"m","messages":[{"role":"user","content":[)";
    for (int i = 0; i < 5; ++i) {
        body += fmt::format(
            R"({}{{"type":"text","text":"t{}","cache_control":{{"type":"ephemeral"}}}})",
            i == 0 ? "" : ",", i);
    }
    body += "]}]}";
    auto call = make_upstream_call(client_request(body), Api::anthropic, "", "m", Secret());
    ASSERT_TRUE(call) << call.error().message;
    std::size_t marks = 0;
    for (std::size_t at = 0; (at = call->body.find("cache_control", at)) != std::string::npos; ++at)
        ++marks;
    EXPECT_EQ(marks, 5u) << call->body;
}

TEST(TranslateRequest, CacheControlMustBeAnObject) {
    auto bad = parse_openai_request(R"({"model":"m","messages":[{"role":"user","content":[
        {"type":"text","text":"x","cache_control":"ephemeral"}]}]})");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, Errc::bad_request);
    EXPECT_NE(bad.error().message.find("messages[0].content[0].cache_control"), std::string::npos)
        << bad.error().message;
}

// A long, stable tools + system prefix and a conversation; `last` is the final user turn.
std::string conversation(std::string_view last, double temperature, int max_tokens) {
    const std::string rules(6000, 'r');  // ~1,500 tokens of system prompt
    return fmt::format(
        R"({{"model":"m","temperature":{},"max_tokens":{},"tools":[{{"type":"function",
        "function":{{"name":"lookup","description":"Find a record",
        "parameters":{{"type":"object","properties":{{"id":{{"type":"string"}}}}}}}}}}],
        "messages":[{{"role":"system","content":"{}"}},{{"role":"user","content":"first question"}},
        {{"role":"assistant","content":"first answer"}},{{"role":"user","content":"{}"}}]}})",
        temperature, max_tokens, rules, last);
}

std::size_t common_prefix(std::string_view a, std::string_view b) {
    return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first -
                                    a.begin());
}

TEST(TranslateRequest, UpstreamBodiesAreByteStableAndShareTheirPrefix) {
    for (Api api : {Api::anthropic, Api::gemini}) {
        for (PromptCache mode : {PromptCache::off, PromptCache::automatic}) {
            const std::string text_a = conversation("second question A", 0.5, 100);
            const std::string text_b = conversation("other question B", 0.25, 300);
            auto a1 =
                make_upstream_call(client_request(text_a), api, "", "up", Secret(), text_a, mode);
            auto a2 =
                make_upstream_call(client_request(text_a), api, "", "up", Secret(), text_a, mode);
            auto b =
                make_upstream_call(client_request(text_b), api, "", "up", Secret(), text_b, mode);
            ASSERT_TRUE(a1 && a2 && b) << to_string(api);
            EXPECT_EQ(a1->body, a2->body) << to_string(api);
            // Tools, then system, then the turns; per-request parameters after them, so the
            // bodies agree up to the final user turn.
            const std::string& body = a1->body;
            const bool gemini = api == Api::gemini;
            const std::size_t tools = body.find(R"("tools":)");
            const std::size_t system =
                body.find(gemini ? R"("systemInstruction":)" : R"("system":)");
            const std::size_t turns = body.find(gemini ? R"("contents":)" : R"("messages":)");
            EXPECT_LT(tools, system) << body;
            EXPECT_LT(system, turns) << body;
            const std::size_t last_turn = body.find("second question A");
            ASSERT_NE(last_turn, std::string::npos);
            EXPECT_GE(common_prefix(body, b->body), last_turn) << body << "\n" << b->body;
        }
    }
}

TEST(TranslateRequest, AutomaticPromptCacheMarksAnthropicRequestsOnly) {
    const std::string text = conversation("second question", 0.5, 100);
    const ChatRequest req = client_request(text);
    const auto marked = [&](Api api, PromptCache mode) {
        auto call = make_upstream_call(req, api, "", "up", Secret(), text, mode);
        EXPECT_TRUE(call);
        std::size_t marks = 0;
        for (std::size_t at = 0;
             call && (at = call->body.find("cache_control", at)) != std::string::npos; ++at)
            ++marks;
        return marks;
    };
    EXPECT_EQ(marked(Api::anthropic, PromptCache::off), 0u);
    // The system block (tools alone are short) and the assistant turn before the last question.
    EXPECT_EQ(marked(Api::anthropic, PromptCache::automatic), 2u);
    EXPECT_EQ(marked(Api::gemini, PromptCache::automatic), 0u);
    EXPECT_EQ(marked(Api::openai, PromptCache::automatic), 0u);  // the client's bytes
    auto call =
        make_upstream_call(req, Api::anthropic, "", "up", Secret(), text, PromptCache::automatic);
    ASSERT_TRUE(call);
    const json::value v = parse_json(call->body);
    EXPECT_EQ(v.at("system").at(0).at("cache_control"), parse_json(R"({"type":"ephemeral"})"));
    EXPECT_EQ(v.at("messages").at(1).at("content").at(0).at("cache_control"),
              parse_json(R"({"type":"ephemeral"})"));
}

TEST(TranslateRequest, DropsHarmlessFieldsSilently) {
    ChatRequest req = patched_request(
        R"({"user":"u","metadata":{"k":"v"},"store":true,"service_tier":"flex",
            "prediction":{"type":"content","content":"x"},"safety_identifier":"h",
            "prompt_cache_key":"k","logprobs":false,"top_logprobs":0,"logit_bias":{},
            "presence_penalty":0,"frequency_penalty":0,"modalities":["text"],
            "verbosity":"medium","reasoning_effort":"none","vendor_extension":{"x":1},"n":1})");
    for (Api api : {Api::anthropic, Api::gemini}) {
        auto body = upstream_body(req, api);
        for (const char* gone :
             {"user", "metadata", "store", "service_tier", "prediction", "vendor_extension",
              "logit_bias", "presence_penalty", "n", "stream_options", "parallel_tool_calls"}) {
            EXPECT_FALSE(body.contains(gone)) << to_string(api) << " " << gone;
        }
    }
}

TEST(TranslateRequest, GeminiGenerationOptions) {
    auto body = upstream_body(
        patched_request(R"({"response_format":{"type":"json_schema","json_schema":{"name":"w",
            "schema":{"type":"object","properties":{"t":{"type":"number"}}},"strict":true}},
            "seed":7,"presence_penalty":0.5,"frequency_penalty":0.25,"top_p":0.9,
            "reasoning_effort":"high","tool_choice":{"type":"function","function":{"name":"get_time"}},
            "max_completion_tokens":null,"max_tokens":99})"),
        Api::gemini);
    EXPECT_EQ(json::value(body.at("generationConfig")),
              parse_json(R"({"maxOutputTokens":99,"temperature":0.3,"topP":0.9,
                  "stopSequences":["END","###"],"responseMimeType":"application/json",
                  "responseJsonSchema":{"type":"object","properties":{"t":{"type":"number"}}},
                  "seed":7,"presencePenalty":0.5,"frequencyPenalty":0.25,
                  "thinkingConfig":{"thinkingBudget":24576}})"));
    EXPECT_EQ(json::value(body.at("toolConfig")),
              parse_json(R"({"functionCallingConfig":{"mode":"ANY",
                  "allowedFunctionNames":["get_time"]}})"));
    struct Case {
        const char* patch;
        const char* config;
    } cases[] = {
        {R"({"tool_choice":"required"})", R"({"functionCallingConfig":{"mode":"ANY"}})"},
        {R"({"tool_choice":"none"})", R"({"functionCallingConfig":{"mode":"NONE"}})"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(
            json::value(upstream_body(patched_request(c.patch), Api::gemini).at("toolConfig")),
            parse_json(c.config));
    }
    auto json_mode = upstream_body(patched_request(R"({"response_format":{"type":"json_object"},
        "reasoning_effort":"low"})"),
                                   Api::gemini);
    const auto& gc = json_mode.at("generationConfig").as_object();
    EXPECT_EQ(gc.at("responseMimeType"), "application/json");
    EXPECT_FALSE(gc.contains("responseJsonSchema"));
    EXPECT_EQ(gc.at("thinkingConfig").at("thinkingBudget"), 1024);
}

TEST(TranslateRequest, AnthropicGenerationOptions) {
    auto body = upstream_body(
        patched_request(R"({"response_format":{"type":"json_schema","json_schema":{"name":"w",
            "schema":{"type":"object","additionalProperties":false}}},"top_p":0.8,
            "tool_choice":{"type":"function","function":{"name":"get_time"}},
            "parallel_tool_calls":false,"max_completion_tokens":null})"),
        Api::anthropic);
    EXPECT_EQ(body.at("max_tokens"), kAnthropicDefaultMaxTokens);  // required by Anthropic
    EXPECT_EQ(body.at("top_p"), 0.8);
    EXPECT_EQ(json::value(body.at("output_config")), parse_json(R"({"format":{"type":"json_schema",
                  "schema":{"type":"object","additionalProperties":false}}})"));
    EXPECT_EQ(json::value(body.at("tool_choice")),
              parse_json(R"({"type":"tool","name":"get_time","disable_parallel_tool_use":true})"));
    struct Case {
        const char* patch;
        const char* choice;
    } cases[] = {
        {R"({"tool_choice":"required"})", R"({"type":"any"})"},
        {R"({"tool_choice":"none"})", R"({"type":"none"})"},
        {R"({"tool_choice":null,"parallel_tool_calls":false})",
         R"({"type":"auto","disable_parallel_tool_use":true})"},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(
            json::value(upstream_body(patched_request(c.patch), Api::anthropic).at("tool_choice")),
            parse_json(c.choice))
            << c.patch;
    }
    // No tools: no tool_choice (Anthropic refuses one without tools).
    auto no_tools = upstream_body(patched_request(R"({"tools":null,"messages":[{"role":"user",
        "content":"hi"}],"tool_choice":"none"})"),
                                  Api::anthropic);
    EXPECT_FALSE(no_tools.contains("tool_choice"));
    EXPECT_FALSE(no_tools.contains("tools"));
}

// ---- responses -----------------------------------------------------------------------------

TEST(TranslateResponse, AnthropicAndGeminiBecomeChatCompletions) {
    struct Case {
        Api api;
        const char* upstream;
        const char* expected;
    } cases[] = {
        {Api::anthropic, "anthropic/response_tool_use.json",
         "translate/anthropic_response_tool_use.openai.json"},
        {Api::gemini, "gemini/response_basic.json", "translate/gemini_response_basic.openai.json"},
    };
    for (const auto& c : cases) {
        auto out = translate_response(c.api, read_fixture(c.upstream), kCreated);
        ASSERT_TRUE(out) << out.error().message;
        EXPECT_EQ(parse_json(*out), parse_json(read_fixture(c.expected))) << *out;
        // And what we produce is a chat.completion by our own OpenAI parser.
        EXPECT_TRUE(parse_openai_response(*out));
    }
}

TEST(TranslateResponse, FinishReasonsUsageAndToolIds) {
    // Anthropic stop reasons and cache tokens.
    struct Stop {
        const char* anthropic;
        const char* openai;
    } stops[] = {{"end_turn", "stop"},
                 {"stop_sequence", "stop"},
                 {"max_tokens", "length"},
                 {"tool_use", "tool_calls"},
                 {"refusal", "content_filter"}};
    for (const auto& s : stops) {
        const std::string body =
            std::string(R"({"id":"msg_1","model":"c","content":[{"type":"text","text":"x"}],)") +
            R"("stop_reason":")" + s.anthropic +
            R"(","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}})";
        auto out = translate_response(Api::anthropic, body);
        ASSERT_TRUE(out) << out.error().message;
        json::value v = parse_json(*out);
        EXPECT_EQ(v.at("choices").at(0).at("finish_reason"), s.openai) << s.anthropic;
        EXPECT_EQ(v.at("usage"),
                  parse_json(R"({"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,
                      "prompt_tokens_details":{"cached_tokens":90}})"));
    }
    struct GeminiStop {
        const char* gemini;
        const char* openai;
    } gstops[] = {{"STOP", "stop"},
                  {"MAX_TOKENS", "length"},
                  {"SAFETY", "content_filter"},
                  {"RECITATION", "content_filter"}};
    for (const auto& s : gstops) {
        const std::string body =
            std::string(R"({"candidates":[{"content":{"parts":[{"text":"x"}],"role":"model"},)") +
            R"("finishReason":")" + s.gemini + R"("}],"responseId":"r"})";
        auto out = translate_response(Api::gemini, body);
        ASSERT_TRUE(out);
        EXPECT_EQ(parse_json(*out).at("choices").at(0).at("finish_reason"), s.openai) << s.gemini;
    }
    // Gemini function calls without ids get ids the client can answer; STOP -> tool_calls.
    auto calls = translate_response(Api::gemini, R"({"candidates":[{"content":{"parts":[
        {"text":"thinking...","thought":true},
        {"functionCall":{"name":"a","args":{"x":1}}},{"functionCall":{"name":"b","args":{}}}],
        "role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,
        "candidatesTokenCount":4,"thoughtsTokenCount":6},"responseId":"R9"})");
    ASSERT_TRUE(calls);
    json::value v = parse_json(*calls);
    const auto& msg = v.at("choices").at(0).at("message");
    EXPECT_EQ(msg.at("tool_calls").at(0).at("id"), "call_R9_0");
    EXPECT_EQ(msg.at("tool_calls").at(1).at("id"), "call_R9_1");
    EXPECT_EQ(msg.at("tool_calls").at(0).at("function").at("arguments"), R"({"x":1})");
    EXPECT_EQ(msg.at("content"), nullptr);
    EXPECT_EQ(msg.at("reasoning_content"), "thinking...");
    EXPECT_EQ(v.at("choices").at(0).at("finish_reason"), "tool_calls");
    EXPECT_EQ(v.at("usage"), parse_json(R"({"prompt_tokens":3,"completion_tokens":10,
        "total_tokens":13,"completion_tokens_details":{"reasoning_tokens":6}})"));
    // A blocked prompt has no candidates at all.
    auto blocked = translate_response(
        Api::gemini, R"({"promptFeedback":{"blockReason":"SAFETY"},"responseId":"b"})");
    ASSERT_TRUE(blocked);
    EXPECT_EQ(parse_json(*blocked).at("choices").at(0).at("finish_reason"), "content_filter");
}

TEST(TranslateResponse, OpenAiPassesUnchangedAndGarbageIsAProtocolError) {
    const std::string body = read_fixture("openai/response_basic.json");
    auto same = translate_response(Api::openai, body);
    ASSERT_TRUE(same);
    EXPECT_EQ(*same, body);
    for (Api api : {Api::anthropic, Api::gemini}) {
        auto bad = translate_response(api, "<html>502</html>");
        ASSERT_FALSE(bad);
        EXPECT_EQ(bad.error().code, Errc::protocol_error);
        EXPECT_EQ(bad.error().message.rfind(std::string(to_string(api)) + " response: ", 0), 0u);
    }
}

TEST(RelayResponse, MetersFromTheOneParseAndGivesTranslateResponsesBody) {
    // Anthropic: usage in OpenAI's sense (prompt includes cached), the id, the same body.
    const std::string anthropic =
        R"({"id":"msg_1","model":"c","content":[{"type":"text","text":"hello"}],)"
        R"("stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":90,)"
        R"("output_tokens":5}})";
    Measurement m;
    auto relayed = relay_response(Api::anthropic, anthropic, kCreated, m);
    ASSERT_TRUE(relayed) << relayed.error().message;
    EXPECT_EQ(*relayed, translate_response(Api::anthropic, anthropic, kCreated).value());
    EXPECT_EQ(m.response_id, "msg_1");
    EXPECT_EQ(m.prompt_tokens, 100);
    EXPECT_EQ(m.cached_prompt_tokens, 90);
    EXPECT_EQ(m.output_tokens, 5);
    EXPECT_EQ(m.token_source, TokenSource::usage);

    // OpenAI: the bytes unchanged, metered; without usage, the estimate.
    const std::string openai = read_fixture("openai/response_basic.json");
    Measurement o;
    ASSERT_EQ(relay_response(Api::openai, openai, kCreated, o).value(), openai);
    EXPECT_EQ(o.response_id, parse_openai_response(openai)->id);
    EXPECT_EQ(o.output_tokens, parse_openai_response(openai)->usage.output_tokens);
    Measurement e;
    ASSERT_TRUE(relay_response(
        Api::openai, R"({"id":"x","choices":[{"message":{"content":"abcdefg"}}]})", kCreated, e));
    EXPECT_EQ(e.output_tokens, 2);
    EXPECT_EQ(e.token_source, TokenSource::estimate);

    // What is not the dialect's response fails with parse_response's error, OpenAI too
    // (translate_response passes an OpenAI body unread).
    for (Api api : {Api::openai, Api::anthropic, Api::gemini}) {
        Measurement bad;
        auto out = relay_response(api, "<html>502</html>", kCreated, bad);
        ASSERT_FALSE(out);
        EXPECT_EQ(out.error().code, Errc::protocol_error);
        EXPECT_EQ(out.error().message, parse_response(api, "<html>502</html>").error().message);
    }
}

// ---- errors --------------------------------------------------------------------------------

TEST(TranslateError, StatusAndBodyForEachDialect) {
    const std::string openai_body = read_fixture("openai/error_rate_limit.json");
    ClientError oa = translate_error(Api::openai, 429, openai_body);
    EXPECT_EQ(oa.http_status, 429);
    EXPECT_EQ(oa.body, openai_body);  // a valid OpenAI error passes unchanged

    struct Case {
        Api api;
        int status;
        std::string body;
        int client_status;
        const char* expected;
    } cases[] = {
        {Api::anthropic, 529, read_fixture("anthropic/error_overloaded.json"), 503,
         R"({"error":{"message":"upstream anthropic answered HTTP 529: Overloaded",
             "type":"overloaded_error","param":null,"code":"overloaded_error"}})"},
        {Api::gemini, 429, read_fixture("gemini/error_resource_exhausted.json"), 429,
         R"({"error":{"message":"upstream gemini answered HTTP 429: You exceeded your current quota, please check your plan and billing details.",
             "type":"rate_limit_error","param":null,"code":"RESOURCE_EXHAUSTED"}})"},
        {Api::gemini, 400,
         R"({"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}})",
         400,
         R"({"error":{"message":"upstream gemini answered HTTP 400: Invalid JSON payload",
             "type":"invalid_request_error","param":null,"code":"INVALID_ARGUMENT"}})"},
        {Api::anthropic, 500, R"({"type":"error","error":{"type":"api_error","message":"boom"}})",
         502,
         R"({"error":{"message":"upstream anthropic answered HTTP 500: boom",
             "type":"upstream_error","param":null,"code":"api_error"}})"},
        {Api::anthropic, 401,
         R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
         401,
         R"({"error":{"message":"upstream anthropic answered HTTP 401: invalid x-api-key",
             "type":"authentication_error","param":null,"code":"authentication_error"}})"},
        {Api::gemini, 504, "", 504,
         R"({"error":{"message":"upstream gemini answered HTTP 504","type":"timeout_error",
             "param":null,"code":null}})"},
        {Api::openai, 502, "<html>Bad Gateway</html>", 502,
         R"({"error":{"message":"upstream openai answered HTTP 502: <html>Bad Gateway</html>",
             "type":"upstream_error","param":null,"code":null}})"},
    };
    for (const auto& c : cases) {
        ClientError e = translate_error(c.api, c.status, c.body);
        EXPECT_EQ(e.http_status, c.client_status) << c.body;
        EXPECT_EQ(parse_json(e.body), parse_json(c.expected)) << e.body;
    }
}

// ---- streams -------------------------------------------------------------------------------

TEST(StreamTranslator, AnthropicAndGeminiStreamsMatchTheFixtures) {
    struct Case {
        Api api;
        const char* upstream;
        bool usage;
        const char* expected;
    } cases[] = {
        {Api::anthropic, "anthropic/stream_tool_use.sse", true,
         "translate/anthropic_stream_tool_use.openai.sse"},
        {Api::anthropic, "anthropic/stream_thinking.sse", false,
         "translate/anthropic_stream_thinking.openai.sse"},
        {Api::gemini, "gemini/stream_function_call.sse", false,
         "translate/gemini_stream_function_call.openai.sse"},
        {Api::gemini, "gemini/stream_thinking.sse", true,
         "translate/gemini_stream_thinking.openai.sse"},
    };
    for (const auto& c : cases) {
        const std::string upstream = read_fixture(c.upstream);
        Translated t = translate_stream(c.api, upstream, c.usage);
        EXPECT_TRUE(t.terminated && t.complete) << c.upstream;
        const auto expected = client_events(read_fixture(c.expected));
        EXPECT_EQ(client_events(t.bytes), expected) << c.upstream << "\n" << t.bytes;
        // What the client gets decodes as the same answer the upstream sent.
        Decoded up = decode_stream(c.api, upstream);
        Decoded down = decode_stream(Api::openai, t.bytes);
        ASSERT_TRUE(down.ok) << down.error;
        EXPECT_EQ(down.text(), up.text());
        EXPECT_EQ(down.text(K::reasoning), up.text(K::reasoning));
        EXPECT_EQ(down.of(K::finish), up.of(K::finish));
        // The translator sees whole events: how the upstream bytes were split cannot matter.
        for (unsigned seed = 0; seed < 30; ++seed) {
            Translated again = translate_chunks(c.api, random_split(upstream, seed), c.usage);
            ASSERT_EQ(again.bytes, t.bytes) << c.upstream << " seed " << seed;
        }
    }
}

TEST(StreamTranslator, UsageChunkOnlyWhenTheClientAskedForIt) {
    for (Api api : {Api::openai, Api::anthropic, Api::gemini}) {
        const std::string upstream =
            read_fixture(std::string(to_string(api)) + "/stream_basic.sse");
        for (bool usage : {false, true}) {
            Translated t = translate_stream(api, upstream, usage);
            auto events = client_events(t.bytes);
            ASSERT_FALSE(events.empty());
            EXPECT_EQ(events.back(), "[DONE]");
            int usage_chunks = 0;
            for (const auto& e : events) {
                if (!e.is_object()) continue;
                if (e.at("choices").as_array().empty()) {
                    ++usage_chunks;
                    EXPECT_GT(e.at("usage").at("prompt_tokens").as_int64(), 0);
                }
            }
            EXPECT_EQ(usage_chunks, usage ? 1 : 0) << to_string(api) << " usage " << usage;
        }
    }
    // With usage asked for, an OpenAI stream passes byte for byte.
    const std::string basic = read_fixture("openai/stream_basic.sse");
    EXPECT_EQ(translate_stream(Api::openai, basic, true).bytes, basic);
}

// A relayed OpenAI event is written again, not copied: CRLF framing becomes LF, and a payload
// the upstream split over two data lines stays split (one line: SseWriter::data_line; more:
// SseWriter::data, which splits at the LF the parser joined them with).
TEST(StreamTranslator, OpenAiEventsAreReframedWithLfAndKeepTheirDataLines) {
    const std::string head =
        R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",)";
    const std::string first =
        head +
        R"("choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]})";
    const std::string second =
        R"("choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]})";
    const std::string upstream = "data: " + first + "\r\n\r\n" + "data: " + head +
                                 "\r\ndata: " + second + "\r\n\r\n" + "data: [DONE]\r\n\r\n";
    for (const auto& chunks :
         {std::vector<std::string>{upstream},
          std::vector<std::string>{upstream.substr(0, 150), upstream.substr(150)}}) {
        Translated t = translate_chunks(Api::openai, chunks, true);
        EXPECT_EQ(t.bytes, "data: " + first + "\n\n" + "data: " + head + "\ndata: " + second +
                               "\n\n" + "data: [DONE]\n\n");
        EXPECT_TRUE(t.complete);
    }
}

TEST(StreamTranslator, UpstreamErrorsBecomeOpenAiErrorEventsAndDone) {
    struct Case {
        Api api;
        const char* upstream;
        const char* text;
        const char* error;
    } cases[] = {
        {Api::anthropic, "anthropic/stream_error.sse", "Once",
         R"({"error":{"message":"upstream anthropic: Overloaded","type":"overloaded_error",
             "param":null,"code":"overloaded_error"}})"},
        {Api::gemini, "gemini/stream_error.sse", "Partial",
         R"({"error":{"message":"upstream gemini: The model is overloaded. Please try again later.",
             "type":"overloaded_error","param":null,"code":"UNAVAILABLE"}})"},
        {Api::openai, "openai/stream_error.sse", "Partial",
         R"({"error":{"message":"The server had an error while processing your request. Sorry about that!",
             "type":"server_error","param":null,"code":null}})"},
    };
    for (const auto& c : cases) {
        Translated t = translate_stream(c.api, read_fixture(c.upstream), true);
        EXPECT_TRUE(t.terminated);
        EXPECT_FALSE(t.complete);
        auto events = client_events(t.bytes);
        ASSERT_GE(events.size(), 3u) << t.bytes;
        EXPECT_EQ(events[events.size() - 2], parse_json(c.error)) << t.bytes;
        EXPECT_EQ(events.back(), "[DONE]");
        Decoded d = decode_stream(Api::openai, t.bytes);
        EXPECT_EQ(d.text(), c.text);
        EXPECT_EQ(d.of(K::error).size(), 1u);
    }
}

TEST(StreamTranslator, FailMidStreamWritesWholeJsonThenDone) {
    for (Api api : {Api::openai, Api::anthropic, Api::gemini}) {
        const std::string upstream =
            read_fixture(std::string(to_string(api)) + "/stream_basic.sse");
        // Everything up to the middle of the second event: the upstream went away there.
        const std::size_t cut = upstream.find("data:", upstream.find("data:") + 1) + 20;
        std::string out;
        {
            sse::SseParser parser;
            auto decoder = make_stream_decoder(api);
            StreamTranslator tr(api, true, StreamMeta{"chatcmpl-gw", "virtual-model", kCreated});
            std::vector<StreamDelta> deltas;
            ASSERT_TRUE(parser.feed(upstream.substr(0, cut), [&](const sse::SseEvent& e) {
                deltas.clear();
                ASSERT_TRUE(decoder->decode(e.event, e.data, deltas));
                tr.on_event(e, deltas, out);
            }));
            tr.fail(Errc::timeout_idle, "no upstream event for 30 s", out);
            EXPECT_TRUE(tr.terminated());
            EXPECT_FALSE(tr.complete());
            const std::size_t size = out.size();
            tr.fail(Errc::connection_error, "again", out);  // nothing after the end
            tr.finish(out);
            EXPECT_EQ(out.size(), size);
        }
        auto events = client_events(out);
        ASSERT_GE(events.size(), 3u) << out;
        EXPECT_EQ(events[events.size() - 2],
                  parse_json(R"({"error":{"message":"no upstream event for 30 s",
                      "type":"timeout_error","param":null,"code":null}})"));
        EXPECT_EQ(events.back(), "[DONE]");
        if (api != Api::openai) {
            // Translated chunks carry the gateway's id and model.
            EXPECT_EQ(events[0].at("id"), "chatcmpl-gw");
            EXPECT_EQ(events[0].at("model"), "virtual-model");
        }
    }
}

TEST(StreamTranslator, UpstreamEndingWithoutItsTerminalEventIsAnError) {
    struct Case {
        Api api;
        const char* upstream;
        const char* terminal;
    } cases[] = {
        {Api::openai, "openai/stream_basic.sse", "data: [DONE]"},
        {Api::anthropic, "anthropic/stream_basic.sse", "message_stop"},
        {Api::gemini, "gemini/stream_basic.sse", "a chunk with finishReason"},
    };
    for (const auto& c : cases) {
        // The fixture without its last (terminal) event.
        std::vector<std::pair<std::string, std::string>> events;
        sse::SseParser parser;
        ASSERT_TRUE(parser.feed(read_fixture(c.upstream), [&](const sse::SseEvent& e) {
            events.emplace_back(e.event == "message" ? "" : std::string(e.event), e.data);
        }));
        events.pop_back();
        std::string trimmed;
        for (const auto& [name, data] : events) sse::SseWriter::event(trimmed, name, data);
        Translated t = translate_stream(c.api, trimmed, false);
        EXPECT_TRUE(t.terminated);
        EXPECT_FALSE(t.complete) << c.upstream;
        auto out = client_events(t.bytes);
        ASSERT_GE(out.size(), 2u);
        const std::string expected = std::string("the ") + std::string(to_string(c.api)) +
                                     " upstream ended the stream before its terminal event (" +
                                     c.terminal + ")";
        EXPECT_EQ(out[out.size() - 2].at("error").at("message"), json::string(expected)) << t.bytes;
        EXPECT_EQ(out[out.size() - 2].at("error").at("type"), "upstream_error");
        EXPECT_EQ(out.back(), "[DONE]");
    }
}

TEST(StreamTranslator, NothingAfterTheEndAndOnlyWholeEvents) {
    // Events after [DONE] / message_stop are ignored; a second finish() adds nothing.
    std::string bytes = read_fixture("anthropic/stream_basic.sse") +
                        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                        "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n";
    Translated t = translate_stream(Api::anthropic, bytes, false);
    EXPECT_EQ(t.bytes.find("late"), std::string::npos);
    EXPECT_EQ(client_events(t.bytes).back(), "[DONE]");
    // A decoded [DONE] with trailing blanks is written in its canonical form.
    Translated done = translate_stream(Api::openai, "data: [DONE]  \n\n", false);
    EXPECT_EQ(done.bytes, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace tokenradar::dialect
