#pragma once
// The base of the dialect's SAX handlers (boost::json::basic_parser): no size limits of their
// own (the parse options bound depth) and the callbacks no scan reads. Private to the dialect
// component.

#include <boost/json/basic_parser.hpp>

#include <cstddef>

namespace tokenradar::dialect {

struct SaxHandlerBase {
    // The DOM parser's own limits (object, array and string max_size) are over 2 GiB; the
    // bodies and events read here are capped far below (16 MiB), so both accept the same.
    static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

    bool on_document_begin(boost::system::error_code&) { return true; }
    bool on_document_end(boost::system::error_code&) { return true; }
    bool on_number_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment_part(boost::json::string_view, boost::system::error_code&) { return true; }
    bool on_comment(boost::json::string_view, boost::system::error_code&) { return true; }

    // Ends the parse: the caller only sees "declined", never which error.
    static bool decline(boost::system::error_code& ec) {
        ec = boost::json::error::exception;
        return false;
    }
};

}  // namespace tokenradar::dialect
