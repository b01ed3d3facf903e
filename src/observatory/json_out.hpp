#pragma once
// A small streaming JSON writer for the query API's bodies. Boost.JSON builds a tree first
// and prints doubles as `2.812E2`; the API writes thousands of numbers per answer and wants
// them as people read them (`281.2`), so it writes text directly.
//
// Strings are escaped as JSON requires (quote, backslash, control characters); other bytes
// are copied: label values are UTF-8 checked at ingestion (cell.hpp check_label_value) and
// this process's own labels come from parsed JSON or TOML. Not thread-safe; nothing suspends.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::observatory {

class JsonOut {
  public:
    JsonOut& begin_object();
    JsonOut& end_object();
    JsonOut& begin_array();
    JsonOut& end_array();
    // An object member's name; the value follows with one of the calls below.
    JsonOut& key(std::string_view name);
    JsonOut& string(std::string_view value);
    // Shortest text that reads back as `value`; NaN and infinities (never valid JSON) as null.
    JsonOut& number(double value);
    JsonOut& integer(std::int64_t value);
    JsonOut& unsigned_integer(std::uint64_t value);
    JsonOut& boolean(bool value);
    JsonOut& null();
    // A whole value already written as JSON (another JsonOut's text), copied as it is.
    JsonOut& raw(std::string_view json);

    [[nodiscard]] const std::string& text() const noexcept { return out_; }
    [[nodiscard]] std::string take() { return std::move(out_); }

  private:
    void separate();  // a comma before every value or key after the first in its container

    std::string out_;
    std::vector<bool> first_;  // per open container: nothing written in it yet
    bool after_key_ = false;
};

}  // namespace tokenradar::observatory
