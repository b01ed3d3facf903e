#include "json_out.hpp"

#include <fmt/format.h>

#include <cassert>
#include <cmath>

namespace tokenradar::observatory {

void JsonOut::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
}

JsonOut& JsonOut::begin_object() {
    separate();
    out_ += '{';
    first_.push_back(true);
    return *this;
}

JsonOut& JsonOut::end_object() {
    assert(!first_.empty() && !after_key_);
    first_.pop_back();
    out_ += '}';
    return *this;
}

JsonOut& JsonOut::begin_array() {
    separate();
    out_ += '[';
    first_.push_back(true);
    return *this;
}

JsonOut& JsonOut::end_array() {
    assert(!first_.empty() && !after_key_);
    first_.pop_back();
    out_ += ']';
    return *this;
}

JsonOut& JsonOut::key(std::string_view name) {
    string(name);
    out_ += ':';
    after_key_ = true;
    return *this;
}

JsonOut& JsonOut::string(std::string_view value) {
    separate();
    out_ += '"';
    std::size_t plain = 0;  // start of the run of bytes that need no escape
    for (std::size_t i = 0; i < value.size(); ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        out_.append(value.substr(plain, i - plain));
        plain = i + 1;
        switch (c) {
            case '"':
                out_ += "\\\"";
                break;
            case '\\':
                out_ += "\\\\";
                break;
            case '\n':
                out_ += "\\n";
                break;
            case '\r':
                out_ += "\\r";
                break;
            case '\t':
                out_ += "\\t";
                break;
            default:
                fmt::format_to(std::back_inserter(out_), "\\u{:04x}", c);
                break;
        }
    }
    out_.append(value.substr(plain));
    out_ += '"';
    return *this;
}

JsonOut& JsonOut::number(double value) {
    if (!std::isfinite(value)) return null();
    separate();
    if (value == 0) value = 0;  // -0 reads back as 0 anyway; print it as 0
    fmt::format_to(std::back_inserter(out_), "{}", value);
    return *this;
}

JsonOut& JsonOut::integer(std::int64_t value) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", value);
    return *this;
}

JsonOut& JsonOut::unsigned_integer(std::uint64_t value) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", value);
    return *this;
}

JsonOut& JsonOut::boolean(bool value) {
    separate();
    out_ += value ? "true" : "false";
    return *this;
}

JsonOut& JsonOut::null() {
    separate();
    out_ += "null";
    return *this;
}

JsonOut& JsonOut::raw(std::string_view json) {
    separate();
    out_.append(json);
    return *this;
}

}  // namespace tokenradar::observatory
