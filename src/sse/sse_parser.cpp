#include <tokenradar/sse/sse_parser.hpp>

#include "eol.hpp"

#include <charconv>
#include <cstring>

namespace tokenradar::sse {

using detail::find_eol;

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The field name ends a few bytes in ("data:"): a loop finds the colon for less than the
// memchr call string_view::find makes.
std::size_t find_colon(std::string_view line) noexcept {
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] == ':') return i;
    }
    return std::string_view::npos;
}

// A field name against a literal: a compare of known length the compiler inlines (a
// string_view == called memcmp for four bytes).
template <std::size_t N>
bool is_field(std::string_view field, const char (&name)[N]) noexcept {
    return field.size() == N - 1 && std::memcmp(field.data(), name, N - 1) == 0;
}

}  // namespace

Result<void> SseParser::feed_impl(std::string_view bytes, Sink sink) {
    if (failed_) return Error(Errc::protocol_error, "sse: parser already failed");
    if (!started_) {
        // The BOM may itself arrive split across chunks: hold bytes until we can decide.
        line_.append(bytes);
        std::size_t n = std::min(line_.size(), kBom.size());
        if (std::string_view(line_).substr(0, n) == kBom.substr(0, n) && n < kBom.size()) {
            return check_limit();
        }
        started_ = true;
        std::string first = std::move(line_);
        line_.clear();
        std::string_view rest(first);
        if (rest.substr(0, kBom.size()) == kBom) rest.remove_prefix(kBom.size());
        return feed_lines(rest, sink);
    }
    return feed_lines(bytes, sink);
}

Result<void> SseParser::feed_lines(std::string_view bytes, Sink sink) {
    const char* p = bytes.data();
    const char* end = p + bytes.size();
    if (skip_lf_ && p != end) {
        if (*p == '\n') ++p;
        skip_lf_ = false;
    }
    if (!line_.empty() && p != end) {
        // Finish the line carried over from the previous chunk.
        const char* eol = find_eol(p, end);
        line_.append(p, eol);
        if (eol == end) return check_limit();
        process_line(line_, sink);
        line_.clear();
        p = eol + 1;
        if (*eol == '\r') {
            if (p == end)
                skip_lf_ = true;
            else if (*p == '\n')
                ++p;
        }
    }
    while (p != end) {
        const char* eol = find_eol(p, end);
        if (eol == end) {
            line_.append(p, end);
            break;
        }
        process_line(std::string_view(p, static_cast<std::size_t>(eol - p)), sink);
        p = eol + 1;
        if (*eol == '\r') {
            if (p == end)
                skip_lf_ = true;
            else if (*p == '\n')
                ++p;
        }
    }
    return check_limit();
}

Result<void> SseParser::check_limit() {
    if (buffered_bytes() > options_.max_buffered_bytes) {
        failed_ = true;
        return Error(Errc::protocol_error, "sse: event exceeds " +
                                               std::to_string(options_.max_buffered_bytes) +
                                               " buffered bytes");
    }
    return {};
}

void SseParser::process_line(std::string_view line, Sink sink) {
    if (line.empty()) {
        dispatch(sink);
        return;
    }
    const std::size_t colon = find_colon(line);
    if (colon == 0) {
        if (options_.expose_comments) {
            std::string_view text = line.substr(1);
            if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
            SseEvent e;
            e.data = text;
            e.id = last_id_;
            e.is_comment = true;
            sink.fn(sink.ctx, e);
        }
        return;
    }
    std::string_view field = line;
    std::string_view value;
    if (colon != std::string_view::npos) {
        field = line.substr(0, colon);
        value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (is_field(field, "data")) {
        data_.append(value);
        data_.push_back('\n');
        ++data_lines_;
        has_fields_ = true;
    } else if (is_field(field, "event")) {
        event_.assign(value);
        has_fields_ = true;
    } else if (is_field(field, "id")) {
        if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
        has_fields_ = true;
    } else if (is_field(field, "retry")) {
        bool digits = !value.empty();
        for (char c : value) digits = digits && c >= '0' && c <= '9';
        std::uint32_t ms = 0;
        if (digits) {
            auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
            if (ec == std::errc() && ptr == value.data() + value.size()) {
                retry_ = ms;
                last_retry_ = ms;
            }
        }
        has_fields_ = true;
    }
    // Any other field name is ignored, per the spec.
}

void SseParser::dispatch(Sink sink) {
    if (data_.empty()) {
        // No data lines: the spec resets the buffers and dispatches nothing.
        event_.clear();
        retry_.reset();
        has_fields_ = false;
        return;
    }
    SseEvent e;
    e.event = event_.empty() ? std::string_view("message") : std::string_view(event_);
    e.data = std::string_view(data_).substr(0, data_.size() - 1);
    e.data_lines = data_lines_;
    e.id = last_id_;
    e.retry = retry_;
    sink.fn(sink.ctx, e);
    data_.clear();
    data_lines_ = 0;
    event_.clear();
    retry_.reset();
    has_fields_ = false;
}

bool SseParser::finish() noexcept {
    bool truncated = has_fields_ || !data_.empty() || !line_.empty();
    line_.clear();
    data_.clear();
    data_lines_ = 0;
    event_.clear();
    retry_.reset();
    has_fields_ = false;
    skip_lf_ = false;
    return truncated;
}

void SseParser::reset() noexcept {
    finish();
    last_id_.clear();
    last_retry_.reset();
    started_ = false;
    failed_ = false;
}

}  // namespace tokenradar::sse
