#include <tokenradar/sse/sse_writer.hpp>

#include "eol.hpp"

#include <charconv>

namespace tokenradar::sse {

namespace {

// Offset of the first CR or LF, npos when none.
std::size_t find_eol(std::string_view s) noexcept {
    const char* eol = detail::find_eol(s.data(), s.data() + s.size());
    return eol == s.data() + s.size() ? std::string_view::npos
                                      : static_cast<std::size_t>(eol - s.data());
}

std::string_view first_line(std::string_view s) { return s.substr(0, find_eol(s)); }

// Appends one "<prefix><line>\n" per line of text, splitting at LF, CR or CRLF.
void lines(std::string& out, std::string_view prefix, std::string_view text) {
    while (true) {
        std::size_t eol = find_eol(text);
        out.append(prefix);
        out.append(text.substr(0, eol));
        out.push_back('\n');
        if (eol == std::string_view::npos) return;
        std::size_t next = eol + 1;
        if (text[eol] == '\r' && next < text.size() && text[next] == '\n') ++next;
        text.remove_prefix(next);
    }
}

}  // namespace

void SseWriter::event(std::string& out, std::string_view event, std::string_view data,
                      std::string_view id) {
    if (!event.empty()) {
        out.append("event: ");
        out.append(first_line(event));
        out.push_back('\n');
    }
    if (!id.empty()) {
        out.append("id: ");
        out.append(first_line(id));
        out.push_back('\n');
    }
    lines(out, "data: ", data);
    out.push_back('\n');
}

void SseWriter::comment(std::string& out, std::string_view text) {
    lines(out, ": ", text);
    out.push_back('\n');
}

void SseWriter::retry(std::string& out, std::uint32_t ms) {
    char buf[16];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, ms);
    (void)ec;
    out.append("retry: ");
    out.append(buf, ptr);
    out.append("\n\n");
}

}  // namespace tokenradar::sse
