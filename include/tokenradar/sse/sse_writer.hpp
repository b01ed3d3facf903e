#pragma once
// Formats server-sent events into a caller-owned buffer (appends; never clears it).

#include <tokenradar/sse/sse_parser.hpp>

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>

namespace tokenradar::sse {

class SseWriter {
  public:
    // "event: <event>\n" (omitted when empty) + "id: <id>\n" (omitted when empty) + one
    // "data: " line per line of data (split at LF, CR or CRLF; a parser gives them back joined
    // with LF) + "\n". Line breaks inside event or id are cut off there, since they would
    // end the field.
    static void event(std::string& out, std::string_view event, std::string_view data,
                      std::string_view id = {});
    // Only data lines; the common OpenAI/Gemini case.
    static void data(std::string& out, std::string_view data) { event(out, {}, data); }
    // "data: <line>\n\n" for a line that holds no CR or LF (the caller knows: an SseEvent
    // with data_lines == 1): data() without its line-break scan.
    static void data_line(std::string& out, std::string_view line) {
        assert(line.find_first_of("\r\n") == std::string_view::npos);
        out.append("data: ");
        out.append(line);
        out.append("\n\n");
    }
    // A parsed event's data written back as data lines: data_line when the parser saw one line.
    static void data(std::string& out, const SseEvent& parsed) {
        if (parsed.data_lines == 1) {
            data_line(out, parsed.data);
        } else {
            data(out, parsed.data);
        }
    }
    // ": <text>\n\n" (a heartbeat). Line breaks in text start new comment lines.
    static void comment(std::string& out, std::string_view text);
    // "retry: <ms>\n\n"
    static void retry(std::string& out, std::uint32_t ms);
};

}  // namespace tokenradar::sse
