#include <tokenradar/sse/sse_writer.hpp>

// To check that what the writer formats parses back.
#include <tokenradar/sse/sse_parser.hpp>

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace tokenradar::sse {
namespace {

TEST(SseWriter, FormatsFields) {
    std::string out;
    SseWriter::event(out, "message_start", "{\"a\":1}");
    EXPECT_EQ(out, "event: message_start\ndata: {\"a\":1}\n\n");
    out.clear();
    SseWriter::data(out, "[DONE]");
    EXPECT_EQ(out, "data: [DONE]\n\n");
    out.clear();
    SseWriter::event(out, "", "x", "42");
    EXPECT_EQ(out, "id: 42\ndata: x\n\n");
    out.clear();
    SseWriter::comment(out, "keep-alive");
    SseWriter::retry(out, 3000);
    EXPECT_EQ(out, ": keep-alive\n\nretry: 3000\n\n");
}

TEST(SseWriter, MultiLineDataRoundTrips) {
    std::string out;
    SseWriter::event(out, "e\nvil", "line1\nline2\r\nline3\rline4\n", "i\rd");
    EXPECT_EQ(out,
              "event: e\nid: i\ndata: line1\ndata: line2\ndata: line3\ndata: line4\ndata: \n\n");
    SseParser p;
    std::string data;
    ASSERT_TRUE(p.feed(out, [&](const SseEvent& e) { data = e.data; }));
    EXPECT_EQ(data, "line1\nline2\nline3\nline4\n");
}

// data_line writes what data() writes, for payloads of one line.
TEST(SseWriter, DataLineWritesWhatDataWritesForOneLine) {
    for (std::string_view line : {"", "x", " x ", "[DONE]", R"({"id":"c1","choices":[]})"}) {
        std::string by_line, by_data;
        SseWriter::data_line(by_line, line);
        SseWriter::data(by_data, line);
        EXPECT_EQ(by_line, by_data) << line;
    }
}

}  // namespace
}  // namespace tokenradar::sse
