#include <tokenradar/cache/answer.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <gtest/gtest.h>

namespace tokenradar::cache {
namespace {

using dialect::StreamDelta;
using Kind = StreamDelta::Kind;

StreamDelta role(std::string id, std::string model) {
    StreamDelta d = StreamDelta::make(Kind::role);
    d.id = std::move(id);
    d.name = std::move(model);
    return d;
}

StreamDelta tool(int index, std::string id, std::string name, std::string args) {
    StreamDelta d = StreamDelta::make(Kind::tool_call);
    d.index = index;
    d.id = std::move(id);
    d.name = std::move(name);
    d.arguments = std::move(args);
    return d;
}

StreamDelta finish(dialect::FinishReason r) {
    StreamDelta d = StreamDelta::make(Kind::finish);
    d.finish_reason = r;
    return d;
}

StreamDelta usage(std::int64_t prompt, std::int64_t output) {
    StreamDelta d = StreamDelta::make(Kind::usage);
    d.usage.prompt_tokens = prompt;
    d.usage.output_tokens = output;
    d.usage.cached_prompt_tokens = 3;
    return d;
}

const Origin kOrigin{"openai", "gpt-x", "api.example", "eu", "openai"};

// A streamed answer with text over three reads, a tool call in two fragments, then the end.
CachedAnswer streamed() {
    AnswerBuilder b;
    b.add(role("chatcmpl-1", "gpt-x-2024"), 1'000);
    b.add(StreamDelta::make_text("Hel"), 5'000);
    b.add(StreamDelta::make_text("lo, "), 5'000);  // same read: same stamp
    b.add(StreamDelta::make_text("wörld"), 9'000);
    b.add(tool(0, "call_1", "lookup", "{\"q\":"), 12'000);
    b.add(tool(0, "", "", "\"x\"}"), 13'000);
    b.add(finish(dialect::FinishReason::tool_calls), 14'000);
    b.add(usage(10, 7), 14'000);
    b.add(StreamDelta::make(Kind::done), 15'000);
    auto a = b.take(kOrigin, 1'700'000'000'000'000, true);
    EXPECT_TRUE(a.has_value());
    return a ? std::move(*a) : CachedAnswer{};
}

TEST(CachedAnswer, KeepsEveryChunkWithItsTimeAndTheWholeResponse) {
    const CachedAnswer a = streamed();
    ASSERT_EQ(a.pieces.size(), 5U);
    EXPECT_EQ(a.piece_text(a.pieces[1]), "lo, ");
    EXPECT_EQ(a.pieces[1].at_ns, 5'000);
    EXPECT_EQ(a.first_token_ns, 5'000);
    EXPECT_EQ(a.e2e_ns, 15'000);
    const dialect::ChatResponse r = a.response();
    EXPECT_EQ(r.text, "Hello, wörld");
    ASSERT_EQ(r.tool_calls.size(), 1U);
    EXPECT_EQ(r.tool_calls[0].id, "call_1");
    EXPECT_EQ(r.tool_calls[0].name, "lookup");
    EXPECT_EQ(r.tool_calls[0].arguments, "{\"q\":\"x\"}");
    EXPECT_EQ(r.finish_reason, dialect::FinishReason::tool_calls);
    EXPECT_EQ(r.usage.output_tokens, 7);
    EXPECT_EQ(r.usage.cached_prompt_tokens, 3);
    EXPECT_EQ(r.id, "chatcmpl-1");
}

TEST(CachedAnswer, ReplaysAsTheOriginalChunksNotOneCollapsedChunk) {
    const CachedAnswer a = streamed();
    const auto deltas = replay_deltas(a);
    // role, 5 pieces, finish, usage, done
    ASSERT_EQ(deltas.size(), 9U);
    EXPECT_EQ(deltas[0].delta.kind, Kind::role);
    EXPECT_EQ(deltas[1].delta.text, "Hel");
    EXPECT_EQ(deltas[3].delta.text, "wörld");
    EXPECT_EQ(deltas[3].at_ns, 9'000);
    EXPECT_EQ(deltas[4].delta.id, "call_1");
    EXPECT_EQ(deltas[5].delta.id, "");
    EXPECT_EQ(deltas[5].delta.arguments, "\"x\"}");
    EXPECT_EQ(deltas.back().delta.kind, Kind::done);
    // Encoded as OpenAI chunks: one per piece (plus role, finish, usage, [DONE]).
    dialect::OpenAiStreamEncoder encoder({"chatcmpl-hit", "gpt-x-2024", 1, true});
    std::string out;
    for (const auto& d : deltas) encoder.encode(d.delta, out);
    std::size_t events = 0;
    for (std::size_t at = out.find("data: "); at != std::string::npos;
         at = out.find("data: ", at + 1)) {
        ++events;
    }
    EXPECT_GE(events, 9U) << out;
    EXPECT_NE(out.find("\"content\":\"lo, \""), std::string::npos) << out;
    EXPECT_NE(out.find("data: [DONE]"), std::string::npos);
}

TEST(CachedAnswer, AnAnswerWithoutItsTerminalEventOrWithAnErrorIsNotOne) {
    AnswerBuilder cut;
    cut.add(role("x", "m"), 1);
    cut.add(StreamDelta::make_text("partial"), 2);
    EXPECT_FALSE(cut.take(kOrigin, 0, true).has_value());

    AnswerBuilder failed;
    failed.add(StreamDelta::make_text("partial"), 2);
    failed.add(StreamDelta::make(Kind::error), 3);
    failed.add(StreamDelta::make(Kind::done), 4);
    EXPECT_FALSE(failed.take(kOrigin, 0, true).has_value());
}

TEST(CachedAnswer, AWholeResponseBecomesOneEntryThatStreamsToo) {
    dialect::ChatResponse r;
    r.id = "chatcmpl-9";
    r.model = "m";
    r.text = "answer";
    r.reasoning = "thought";
    r.tool_calls.push_back({"call_a", "f", "{}", ""});
    r.finish_reason = dialect::FinishReason::stop;
    r.usage.prompt_tokens = 5;
    r.usage.output_tokens = 2;
    const CachedAnswer a = answer_from_response(r, kOrigin, 42'000, 7);
    EXPECT_FALSE(a.from_stream);
    EXPECT_EQ(a.e2e_ns, 42'000);
    EXPECT_EQ(a.first_token_ns, 42'000);
    dialect::ChatResponse back = a.response();
    back.created = r.created;
    EXPECT_EQ(back, r);
}

TEST(CachedAnswer, EncodesAndDecodesToTheSameAnswer) {
    const CachedAnswer a = streamed();
    const std::string bytes = encode(a);
    auto back = decode(bytes);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->pieces, a.pieces);
    EXPECT_EQ(back->text, a.text);
    EXPECT_EQ(back->tool_heads, a.tool_heads);
    EXPECT_EQ(back->origin, a.origin);
    EXPECT_EQ(back->usage, a.usage);
    EXPECT_EQ(back->finish_reason, a.finish_reason);
    EXPECT_EQ(back->e2e_ns, a.e2e_ns);
    EXPECT_EQ(back->stored_at_us, a.stored_at_us);
    EXPECT_TRUE(back->from_stream);
}

TEST(CachedAnswer, DecodeRefusesEveryTruncationAndNamesTheField) {
    const std::string bytes = encode(streamed());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        auto back = decode(std::string_view(bytes).substr(0, n));
        ASSERT_FALSE(back) << "prefix of " << n << " bytes decoded";
        EXPECT_NE(back.error().message.find("cached answer"), std::string::npos);
    }
    auto extra = decode(bytes + "x");
    ASSERT_FALSE(extra);
    EXPECT_NE(extra.error().message.find("end"), std::string::npos) << extra.error().message;
}

TEST(CachedAnswer, DecodeRefusesAPieceThatCutsACharacter) {
    AnswerBuilder b;
    b.add(StreamDelta::make_text("ö"), 1);
    b.add(StreamDelta::make(Kind::done), 2);
    CachedAnswer a = *b.take(kOrigin, 0, true);
    // Split "ö" (2 bytes) into two 1-byte pieces: each is invalid UTF-8 on its own.
    a.pieces = {{1, 0, 1, 0, AnswerPiece::Kind::text}, {1, 1, 1, 0, AnswerPiece::Kind::text}};
    auto back = decode(encode(a));
    ASSERT_FALSE(back);
    EXPECT_NE(back.error().message.find("UTF-8"), std::string::npos) << back.error().message;
}

}  // namespace
}  // namespace tokenradar::cache
