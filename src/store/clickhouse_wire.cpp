#include "clickhouse_wire.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstring>

namespace tokenradar::store {
namespace {

constexpr std::string_view kUrlForm =
    "clickhouse://[user[:password]@]host[:port]/database[?secure=true[&ca_file=PATH]]";
constexpr std::string_view kRedacted = "[redacted]";

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

Error bad_url(std::string_view url, std::string_view what) {
    return Error(Errc::bad_request, fmt::format("store URL {}: {}; expected {}",
                                                redact_clickhouse_url(url), what, kUrlForm));
}

// Percent-decoding of the user info (a password may hold '@' or ':' written as %40, %3A).
Result<std::string> percent_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        unsigned value = 0;
        if (text.size() - i < 3) {
            return Error(Errc::bad_request, "a '%' without two hex digits");
        }
        const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
        if (ec != std::errc() || end != text.data() + i + 3) {
            return Error(Errc::bad_request, "a '%' without two hex digits");
        }
        out += static_cast<char>(value);
        i += 2;
    }
    return out;
}

template <class T>
void put_le(std::string& out, T v) {
    std::array<char, sizeof(T)> bytes{};
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        bytes[i] = static_cast<char>(static_cast<std::uint64_t>(v) >> (8 * i));
    }
    out.append(bytes.data(), bytes.size());
}

std::uint64_t get_le(const std::uint8_t* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
}

}  // namespace

Result<ClickHouseUrl> parse_clickhouse_url(std::string_view url) {
    constexpr std::string_view kScheme = "clickhouse://";
    if (!url.starts_with(kScheme)) return bad_url(url, "not a clickhouse:// URL");
    std::string_view rest = url.substr(kScheme.size());
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return bad_url(url, "no /database");
    std::string_view authority = rest.substr(0, slash);
    std::string_view database = rest.substr(slash + 1);
    std::string_view query;
    if (const std::size_t mark = database.find('?'); mark != std::string_view::npos) {
        query = database.substr(mark + 1);
        database = database.substr(0, mark);
    }
    ClickHouseUrl out;
    bool port_given = false;
    if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
        const std::string_view info = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const std::size_t colon = info.find(':');
        auto user = percent_decode(info.substr(0, colon));
        if (!user) return bad_url(url, "user: " + user.error().message);
        if (user->empty()) return bad_url(url, "empty user name");
        out.user = std::move(*user);
        if (colon != std::string_view::npos) {
            auto password = percent_decode(info.substr(colon + 1));
            if (!password) return bad_url(url, "password: " + password.error().message);
            out.password = std::move(*password);
        }
    }
    std::string_view host = authority;
    if (const std::size_t colon = authority.rfind(':');
        colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
        host = authority.substr(0, colon);
        const std::string_view port = authority.substr(colon + 1);
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
            value > 65535) {
            return bad_url(url, fmt::format("port '{}' is not a number in 1-65535", port));
        }
        out.port = static_cast<std::uint16_t>(value);
        port_given = true;
    }
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (host.empty()) return bad_url(url, "no host");
    out.host = std::string(host);
    if (database.empty()) return bad_url(url, "no database name after '/'");
    for (const char c : database) {
        if (!is_name_char(c)) {
            return bad_url(url, fmt::format("database '{}': letters, digits and '_' only",
                                            database.substr(0, 64)));
        }
    }
    out.database = std::string(database);
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        const std::size_t eq = pair.find('=');
        const std::string_view name = pair.substr(0, eq);
        auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
        if (!value) return bad_url(url, fmt::format("{}: {}", name, value.error().message));
        if (name == "secure") {
            if (*value != "true" && *value != "false") {
                return bad_url(
                    url, fmt::format("secure '{}' is not true or false", value->substr(0, 16)));
            }
            out.secure = *value == "true";
        } else if (name == "ca_file") {
            if (value->empty()) return bad_url(url, "ca_file is empty");
            out.ca_file = std::move(*value);
        } else {
            return bad_url(
                url, fmt::format("unknown parameter '{}' (secure, ca_file)", name.substr(0, 32)));
        }
    }
    if (!out.ca_file.empty() && !out.secure) return bad_url(url, "ca_file without secure=true");
    if (out.secure && !port_given) out.port = ClickHouseUrl::kHttpsPort;
    return out;
}

std::string redact_clickhouse_url(std::string_view url) {
    std::string out(url);
    const std::size_t scheme = out.find("://");
    if (scheme == std::string::npos) return out;
    const std::size_t authority = scheme + 3;
    const std::size_t end = out.find('/', authority);
    const std::size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at == std::string::npos || at < authority) return out;
    const std::size_t colon = out.find(':', authority);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, kRedacted);
    return out;
}

std::string clickhouse_quote(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() + 2);
    out += '\'';
    for (const char c : bytes) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\'' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u == 0x7f) {
            out += fmt::format("\\x{:02X}", u);
        } else {
            out += c;
        }
    }
    out += '\'';
    return out;
}

std::string clickhouse_name(std::string_view name) {
    std::string out = "`";
    for (const char c : name) {
        if (c == '`' || c == '\\') out += '\\';
        out += c;
    }
    out += '`';
    return out;
}

void put_row_int64(std::string& out, std::int64_t v) { put_le(out, v); }
void put_row_int32(std::string& out, std::int32_t v) { put_le(out, v); }
void put_row_uint64(std::string& out, std::uint64_t v) { put_le(out, v); }
void put_row_varint(std::string& out, std::uint64_t n) {
    do {
        const auto low = static_cast<std::uint8_t>(n & 0x7fU);
        n >>= 7U;
        out += static_cast<char>(n != 0 ? (low | 0x80U) : low);
    } while (n != 0);
}
void put_row_string(std::string& out, std::string_view bytes) {
    put_row_varint(out, bytes.size());
    out.append(bytes);
}

namespace {

// A LEB128 length at `at`: its value and size, 0 size when the bytes end first.
struct Varint {
    std::uint64_t value = 0;
    std::size_t size = 0;
};
Result<Varint> read_varint(std::span<const std::uint8_t> bytes, std::size_t at) {
    Varint v;
    for (std::size_t i = 0; at + i < bytes.size(); ++i) {
        if (i == 10) {
            return Error(Errc::protocol_error,
                         fmt::format("RowBinary: a length of over 10 bytes at byte {}", at));
        }
        const std::uint8_t b = bytes[at + i];
        v.value |= static_cast<std::uint64_t>(b & 0x7fU) << (7 * i);
        if ((b & 0x80U) == 0) {
            v.size = i + 1;
            return v;
        }
    }
    return Varint{};
}

// A String at `at`: its bytes and the size it took, 0 size when the bytes end first.
struct Field {
    std::string_view bytes;
    std::size_t size = 0;
};
Result<Field> read_string(std::span<const std::uint8_t> bytes, std::size_t at) {
    auto n = read_varint(bytes, at);
    if (!n) return n.error();
    if (n->size == 0) return Field{};
    if (n->value > kMaxRowString) {
        return Error(Errc::protocol_error,
                     fmt::format("RowBinary: a String of {} bytes at byte {} (at most {}): not a "
                                 "store row",
                                 n->value, at, kMaxRowString));
    }
    if (bytes.size() - at - n->size < n->value) return Field{};
    return Field{std::string_view(reinterpret_cast<const char*>(&bytes[at + n->size]),
                                  static_cast<std::size_t>(n->value)),
                 n->size + static_cast<std::size_t>(n->value)};
}

// An Array(String) at `at`: its whole RowBinary bytes, 0 size when the bytes end first.
Result<Field> read_array(std::span<const std::uint8_t> bytes, std::size_t at) {
    auto n = read_varint(bytes, at);
    if (!n) return n.error();
    if (n->size == 0) return Field{};
    if (n->value > kMaxRowArray) {
        return Error(Errc::protocol_error,
                     fmt::format("RowBinary: an Array of {} elements at byte {} (at most {}): not "
                                 "a store row",
                                 n->value, at, kMaxRowArray));
    }
    std::size_t size = n->size;
    for (std::uint64_t i = 0; i < n->value; ++i) {
        auto element = read_string(bytes, at + size);
        if (!element) return element.error();
        if (element->size == 0) return Field{};
        size += element->size;
    }
    return Field{std::string_view(reinterpret_cast<const char*>(&bytes[at]), size), size};
}

}  // namespace

Result<std::size_t> decode_row_binary(std::span<const std::uint8_t> bytes,
                                      std::span<const RowType> types, RowSink row, void* context) {
    std::vector<RowValue> values(types.size());
    std::size_t done = 0;
    if (types.empty()) return done;
    for (;;) {
        std::size_t at = done;
        for (std::size_t c = 0; c < types.size(); ++c) {
            const std::size_t left = bytes.size() - at;
            switch (types[c]) {
                case RowType::int32:
                    if (left < 4) return done;
                    values[c] = static_cast<std::int64_t>(static_cast<std::int32_t>(
                        static_cast<std::uint32_t>(get_le(&bytes[at], 4))));
                    at += 4;
                    break;
                case RowType::int64:
                    if (left < 8) return done;
                    values[c] = static_cast<std::int64_t>(get_le(&bytes[at], 8));
                    at += 8;
                    break;
                case RowType::uint8:
                    if (left < 1) return done;
                    values[c] = static_cast<std::int64_t>(bytes[at]);
                    at += 1;
                    break;
                case RowType::string:
                case RowType::string_array: {
                    auto field = types[c] == RowType::string ? read_string(bytes, at)
                                                             : read_array(bytes, at);
                    if (!field) return field.error();
                    if (field->size == 0) return done;
                    values[c] = field->bytes;
                    at += field->size;
                    break;
                }
            }
        }
        if (auto visited = row(context, values); !visited) return visited.error();
        done = at;
    }
}

std::vector<std::string_view> split_string_array(std::string_view raw) {
    const std::span bytes(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size());
    std::vector<std::string_view> out;
    auto n = read_varint(bytes, 0);
    if (!n || n->size == 0) return out;
    std::size_t at = n->size;
    for (std::uint64_t i = 0; i < n->value; ++i) {
        auto element = read_string(bytes, at);
        if (!element || element->size == 0) break;
        out.push_back(element->bytes);
        at += element->size;
    }
    return out;
}

std::string clickhouse_error_message(std::string_view body) {
    std::string_view text = body.substr(0, 2048);
    int code = clickhouse_error_code(body);
    constexpr std::string_view kDisplay = "e.displayText() = ";
    if (const std::size_t d = text.find(kDisplay); d != std::string_view::npos) {
        text = text.substr(d + kDisplay.size());
        if (const std::size_t what = text.rfind(", e.what() = "); what != std::string_view::npos) {
            text = text.substr(0, what);
        }
        if (text.starts_with("DB::Exception: ")) text.remove_prefix(15);
    } else if (const std::size_t colon = text.find(": "); code >= 0 && colon != std::string::npos) {
        text = text.substr(colon + 2);  // newer servers: "Code: 60. DB::Exception: ..."
        if (text.starts_with("DB::Exception: ")) text.remove_prefix(15);
    }
    std::string out = code >= 0 ? fmt::format("Code: {}: ", code) : std::string();
    for (const char c : text) {
        if (out.size() >= 500) {
            out += "...";
            break;
        }
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n' || c == '\r' || c == '\t') {
            if (!out.empty() && out.back() != ' ') out += ' ';
        } else {
            out += (u < 0x20 || u >= 0x7f) ? '?' : c;  // it may quote a row's bytes
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    if (out.empty()) out = "an empty error answer";
    return out;
}

int clickhouse_error_code(std::string_view body) {
    const std::size_t at = body.substr(0, 2048).find("Code: ");
    if (at == std::string_view::npos) return -1;
    int code = -1;
    const char* first = body.data() + at + 6;
    const auto [end, ec] = std::from_chars(first, body.data() + body.size(), code);
    if (ec != std::errc() || end == first || code < 0) return -1;
    return code;
}

Result<std::int64_t> parse_clickhouse_integer(std::string_view body) {
    std::string_view text = body;
    if (text.ends_with('\n')) text.remove_suffix(1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        std::string shown;
        for (const char c : body.substr(0, 80)) {
            const auto u = static_cast<unsigned char>(c);
            shown += (u < 0x20 || u >= 0x7f) ? '?' : c;
        }
        return Error(Errc::protocol_error,
                     fmt::format("expected one integer, got '{}'{}", shown,
                                 body.size() > 80 ? fmt::format(" ({} bytes)", body.size()) : ""));
    }
    return v;
}

}  // namespace tokenradar::store
