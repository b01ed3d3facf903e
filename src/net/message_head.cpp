#include "message_head.hpp"

#include <boost/beast/core/string.hpp>
#include <fmt/format.h>

#include <array>
#include <charconv>
#include <optional>

namespace tokenradar::net {
namespace {

namespace http = boost::beast::http;

// RFC 9110 token characters, as a table: every header name of every head is checked.
constexpr std::array<bool, 256> kTokenChar = [] {
    std::array<bool, 256> table{};
    for (int c = '0'; c <= '9'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~"))
        table[static_cast<unsigned char>(c)] = true;
    return table;
}();

// Both checks run over every header of every head, and nearly every one passes: they scan
// to the end without an early exit, which the compiler unrolls (and vectorises for values).
bool is_token(std::string_view name) noexcept {
    bool token = !name.empty();
    for (const unsigned char c : name) token &= kTokenChar[c];
    return token;
}

bool is_safe_value(std::string_view value) noexcept {
    bool unsafe = false;
    for (const char c : value) unsafe |= (c == '\r') | (c == '\n') | (c == '\0');
    return !unsafe;
}

bool named(std::string_view name, std::string_view wanted) noexcept {
    return boost::beast::iequals(name, wanted);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}

std::optional<Error> field_error(std::string_view name, std::string_view value) {
    if (!is_token(name)) {
        return Error(Errc::bad_request,
                     fmt::format("header name '{}': expected an HTTP token", name));
    }
    if (!is_safe_value(value)) {
        return Error(Errc::bad_request,
                     fmt::format("header {}: expected a value without CR, LF or NUL", name));
    }
    return std::nullopt;
}

void append_number(std::string& out, std::string_view name, std::size_t number) {
    std::array<char, 24> digits{};
    const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), number).ptr;
    append_field(out, name,
                 std::string_view(digits.data(), static_cast<std::size_t>(end - digits.data())));
}

template <class Fields>  // HeaderFields or HeaderList
std::size_t fields_size(const Fields& headers) {
    std::size_t size = 0;
    for (const auto& [name, value] : headers) size += name.size() + value.size() + 4;
    return size;
}

}  // namespace

Result<std::string> request_head(http::verb method, std::string_view target, std::string_view host,
                                 const HeaderFields& headers, std::size_t body_size) {
    const std::string_view method_name = http::to_string(method);
    const std::size_t size =
        method_name.size() + target.size() + host.size() + 80 + fields_size(headers);
    std::string head;
    head.reserve(size);
    head.append(method_name);
    head.push_back(' ');
    head.append(target);
    head.append(" HTTP/1.1\r\n");
    if (!is_safe_value(target) || target.find(' ') != std::string_view::npos) {
        return Error(Errc::bad_request, "request target: expected no spaces, CR, LF or NUL");
    }
    if (!is_safe_value(host)) return Error(Errc::bad_request, "Host: expected no CR, LF or NUL");
    append_field(head, "Host", host);
    bool user_agent = false;
    for (const auto& [name, value] : headers) {
        if (auto e = field_error(name, value)) return std::move(*e);
        if (named(name, "content-length") || named(name, "transfer-encoding")) continue;
        user_agent = user_agent || named(name, "user-agent");
        append_field(head, name, value);
    }
    if (!user_agent) append_field(head, "User-Agent", "tokenradar");
    if (body_size > 0 || method == http::verb::post || method == http::verb::put ||
        method == http::verb::options) {
        append_number(head, "Content-Length", body_size);
    }
    head.append("\r\n");
    return head;
}

Result<std::string> response_head(http::status status, unsigned version, bool keep_alive,
                                  std::string_view content_type, const HeaderList& headers,
                                  ResponseBody body, std::size_t body_size) {
    const std::string_view reason = http::obsolete_reason(status);
    std::string head;
    head.reserve(content_type.size() + reason.size() + 120 + fields_size(headers));
    head.append("HTTP/1.");
    head.push_back(static_cast<char>('0' + version % 10));
    head.push_back(' ');
    std::array<char, 8> code{};
    const auto code_end =
        std::to_chars(code.data(), code.data() + code.size(), static_cast<unsigned>(status)).ptr;
    head.append(code.data(), static_cast<std::size_t>(code_end - code.data()));
    head.push_back(' ');
    head.append(reason);
    head.append("\r\n");
    if (!content_type.empty()) {
        if (!is_safe_value(content_type)) return field_error("Content-Type", content_type).value();
        append_field(head, "Content-Type", content_type);
    }
    for (const auto& [name, value] : headers) {
        if (auto e = field_error(name, value)) return std::move(*e);
        if (named(name, "content-length") || named(name, "transfer-encoding") ||
            named(name, "connection")) {
            continue;
        }
        append_field(head, name, value);
    }
    if (version >= 11 && !keep_alive) append_field(head, "Connection", "close");
    if (version < 11 && keep_alive) append_field(head, "Connection", "keep-alive");
    if (body == ResponseBody::chunked) {
        if (version >= 11) append_field(head, "Transfer-Encoding", "chunked");
    } else {
        const auto kind = http::to_status_class(status);
        const bool bodiless = kind == http::status_class::informational ||
                              status == http::status::no_content ||
                              status == http::status::not_modified;
        if (!bodiless) append_number(head, "Content-Length", body_size);
    }
    head.append("\r\n");
    return head;
}

}  // namespace tokenradar::net
