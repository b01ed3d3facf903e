#include <tokenradar/sse/sse_writer.hpp>

// To check that what the writer formats parses back.
#include <tokenradar/sse/sse_parser.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

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

// data_line is data() for a payload of one line, as SseParser reports it with data_lines.
TEST(SseWriter, DataLineWritesWhatDataWritesForOneLine) {
    SseParser p;
    std::vector<std::pair<std::string, std::uint32_t>> events;
    ASSERT_TRUE(p.feed("data: {\"a\":1}\r\n\r\ndata\n\ndata:  x \rdata: y\n\n: note\n\n",
                       [&](const SseEvent& e) { events.emplace_back(e.data, e.data_lines); }));
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[2].second, 2u);  // two lines: data() only
    for (const auto& [data, lines] : events) {
        if (lines != 1) continue;
        std::string by_line, by_data;
        SseWriter::data_line(by_line, data);
        SseWriter::data(by_data, data);
        EXPECT_EQ(by_line, by_data) << data;
    }
}

}  // namespace
}  // namespace tokenradar::sse
