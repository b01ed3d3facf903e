#include <tokenradar/sse/sse_parser.hpp>

#include "../../support/stream_text.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tokenradar::sse {
namespace {

using tokenradar::testing::random_split;
using tokenradar::testing::read_file;
using tokenradar::testing::with_line_endings;

struct Owned {
    std::string event, data, id;
    std::optional<std::uint32_t> retry;
    bool is_comment = false;
    std::size_t data_lines = 0;
    bool operator==(const Owned&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Owned& e) {
    return os << (e.is_comment ? "comment" : "event") << "{" << e.event << "|" << e.data << "|"
              << e.id << "|" << e.data_lines << " lines}";
}

std::vector<Owned> parse_chunks(const std::vector<std::string>& chunks, bool comments = false,
                                bool* truncated = nullptr) {
    SseParser p(SseParser::Options{.max_buffered_bytes = 1 << 20, .expose_comments = comments});
    std::vector<Owned> out;
    for (const auto& c : chunks) {
        auto r = p.feed(c, [&](const SseEvent& e) {
            out.push_back({std::string(e.event), std::string(e.data), std::string(e.id), e.retry,
                           e.is_comment, e.data_lines});
        });
        EXPECT_TRUE(r.has_value());
    }
    bool t = p.finish();
    if (truncated) *truncated = t;
    return out;
}

std::vector<Owned> parse(std::string_view s, bool comments = false) {
    return parse_chunks({std::string(s)}, comments);
}

std::vector<std::filesystem::path> stream_fixtures() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(TOKENRADAR_SOURCE_DIR) / "tests/fixtures")) {
        if (e.path().extension() == ".sse") files.push_back(e.path());
    }
    return files;
}

TEST(SseParser, BasicEventAndDefaults) {
    auto ev = parse("data: hello\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].event, "message");
    EXPECT_EQ(ev[0].data, "hello");
    EXPECT_EQ(ev[0].id, "");
    EXPECT_EQ(ev[0].data_lines, 1u);
}

TEST(SseParser, MultiLineDataJoinedWithLf) {
    auto ev = parse("event: x\ndata: a\ndata:b\ndata\ndata:  c\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].event, "x");
    EXPECT_EQ(ev[0].data, "a\nb\n\n c");  // only one leading space is stripped
    EXPECT_EQ(ev[0].data_lines, 4u);
}

TEST(SseParser, LineEndingsLfCrCrlfMixed) {
    for (std::string_view eol : {"\n", "\r", "\r\n"}) {
        std::string s = "event: e\ndata: 1\ndata: 2\n\ndata: 3\n\n";
        auto ev = parse(with_line_endings(s, eol));
        ASSERT_EQ(ev.size(), 2u) << "eol size " << eol.size();
        EXPECT_EQ(ev[0].data, "1\n2");
        EXPECT_EQ(ev[0].data_lines, 2u);
        EXPECT_EQ(ev[0].event, "e");
        EXPECT_EQ(ev[1].data, "3");
        EXPECT_EQ(ev[1].data_lines, 1u);  // counted afresh for each event
        EXPECT_EQ(ev[1].event, "message");
    }
    auto ev = parse("data: a\r\ndata: b\rdata: c\n\r\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "a\nb\nc");
}

TEST(SseParser, CrAtChunkEndThenLf) {
    // CR ends one chunk, LF starts the next: one line break, not two (no empty event).
    auto ev = parse_chunks({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "a\nb");
    // CR at chunk end followed by a non-LF byte.
    ev = parse_chunks({"data: a\r", "data: b\r", "\r"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "a\nb");
}

TEST(SseParser, BomOnlyAtStart) {
    auto ev = parse(
        "\xEF\xBB\xBF"
        "data: x\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "x");
    ev = parse_chunks({"\xEF", "\xBB",
                       "\xBF"
                       "da",
                       "ta: y\n\n"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "y");
    // A second BOM is part of the field name, so the line is an unknown field.
    ev = parse(
        "\xEF\xBB\xBF\xEF\xBB\xBF"
        "data: z\n\ndata: w\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "w");
    // Not a BOM: the bytes are kept.
    ev = parse_chunks({"\xEF", "data: q\n\ndata: r\n\n"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "r");
}

TEST(SseParser, CommentsIgnoredOrExposed) {
    EXPECT_TRUE(parse(": ping\n\n").empty());
    auto ev = parse(": ping\n:\ndata: x\n\n", true);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_TRUE(ev[0].is_comment);
    EXPECT_EQ(ev[0].data, "ping");
    EXPECT_EQ(ev[0].data_lines, 0u);
    EXPECT_TRUE(ev[1].is_comment);
    EXPECT_EQ(ev[1].data, "");
    EXPECT_FALSE(ev[2].is_comment);
    EXPECT_EQ(ev[2].data, "x");
    EXPECT_EQ(ev[2].data_lines, 1u);
}

TEST(SseParser, IdPersistsAndNulIsIgnored) {
    using namespace std::string_literals;
    auto ev = parse("id: 1\ndata: a\n\ndata: b\n\nid: 2\0x\ndata: c\n\nid\ndata: d\n\n"s);
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0].id, "1");
    EXPECT_EQ(ev[1].id, "1");
    EXPECT_EQ(ev[2].id, "1");  // contained NUL: ignored
    EXPECT_EQ(ev[3].id, "");   // `id` without colon resets to empty
}

TEST(SseParser, RetryDigitsOnly) {
    SseParser p;
    std::vector<std::optional<std::uint32_t>> retries;
    auto sink = [&](const SseEvent& e) { retries.push_back(e.retry); };
    ASSERT_TRUE(p.feed(
        "retry: 1500\ndata: a\n\nretry: 12a\ndata: b\n\nretry: -1\nretry\ndata: c\n\n", sink));
    ASSERT_EQ(retries.size(), 3u);
    EXPECT_EQ(retries[0], 1500u);
    EXPECT_FALSE(retries[1].has_value());
    EXPECT_FALSE(retries[2].has_value());
    EXPECT_EQ(p.last_retry(), 1500u);
    ASSERT_TRUE(p.feed("retry: 99999999999\n\n", sink));  // overflow: ignored
    EXPECT_EQ(p.last_retry(), 1500u);
}

TEST(SseParser, FieldWithoutColonAndEmptyData) {
    auto ev = parse("data\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "");
    EXPECT_EQ(ev[0].data_lines, 1u);
    ev = parse("data:\ndata:\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].data, "\n");
    EXPECT_EQ(ev[0].data_lines, 2u);
    EXPECT_TRUE(parse("event: only\n\n").empty());  // no data: nothing dispatched
    ev = parse("event: only\n\ndata: x\n\n");
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].event, "message");  // event type reset after the empty block
    EXPECT_TRUE(parse("foo: bar\n\n").empty());
}

TEST(SseParser, IncompleteEventAtEofIsDiscarded) {
    bool truncated = false;
    auto ev = parse_chunks({"data: a\n\ndata: b\n"}, false, &truncated);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_TRUE(truncated);
    ev = parse_chunks({"data: a\n\ndata: b"}, false, &truncated);
    EXPECT_EQ(ev.size(), 1u);
    EXPECT_TRUE(truncated);
    ev = parse_chunks({"data: a\n\n"}, false, &truncated);
    EXPECT_FALSE(truncated);
    // The lines of the discarded event are not counted into the next one.
    SseParser p;
    std::vector<std::size_t> lines;
    auto sink = [&](const SseEvent& e) { lines.push_back(e.data_lines); };
    ASSERT_TRUE(p.feed("data: a\ndata: b\n", sink));
    EXPECT_TRUE(p.finish());
    ASSERT_TRUE(p.feed("data: c\n\n", sink));
    EXPECT_EQ(lines, std::vector<std::size_t>{1});
}

TEST(SseParser, BoundedBuffer) {
    SseParser p(SseParser::Options{.max_buffered_bytes = 64});
    int n = 0;
    auto sink = [&](const SseEvent&) { ++n; };
    EXPECT_TRUE(p.feed("data: small\n\n", sink));
    auto r = p.feed(std::string(100, 'x'), sink);  // a line longer than the bound
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, make_error_code(Errc::protocol_error));
    EXPECT_FALSE(p.feed("\n\n", sink));  // sticky
    p.reset();
    std::string many;
    for (int i = 0; i < 20; ++i) many += "data: 0123456789\n";  // data lines, no blank line
    EXPECT_FALSE(p.feed(many, sink));
    EXPECT_EQ(n, 1);
}

TEST(SseParser, EveryFixtureRechunkedGivesSameEvents) {
    auto files = stream_fixtures();
    ASSERT_GE(files.size(), 10u);
    for (const auto& f : files) {
        const std::string bytes = read_file(f);
        for (std::string_view eol : {"\n", "\r", "\r\n"}) {
            const std::string variant = with_line_endings(bytes, eol);
            const auto whole = parse(variant, true);
            ASSERT_FALSE(whole.empty()) << f;
            std::vector<std::string> ones;
            for (char c : variant) ones.emplace_back(1, c);
            EXPECT_EQ(parse_chunks(ones, true), whole) << f << " 1-byte chunks";
            for (unsigned seed = 0; seed < 40; ++seed) {
                std::mt19937 rng(seed);
                auto chunks = random_split(variant, rng, seed % 2 ? 7 : 300);
                ASSERT_EQ(parse_chunks(chunks, true), whole) << f << " seed " << seed;
            }
        }
    }
}

}  // namespace
}  // namespace tokenradar::sse
