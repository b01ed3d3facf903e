#pragma once
// The base of the dialect's SAX handlers (boost::json::basic_parser): no size limits of their
// own (the parse options bound depth) and the callbacks no scan reads. Private to the dialect
// component.

#include <tokenradar/dialect/chat.hpp>

#include <boost/json/basic_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

struct SaxHandlerBase {
    // The DOM parser's own limits (object, array and string max_size) are over 2 GiB; the
    // bodies and events read here are capped far below (16 MiB), so both accept the same.
    // The names are Boost.JSON's handler contract.
    // NOLINTBEGIN(readability-identifier-naming)
    static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
    static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
    // NOLINTEND(readability-identifier-naming)

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

  protected:
    // Keys usually arrive whole (on_key); an escaped or split one comes in parts first
    // (on_key_part). A handler passes the parts of the keys it reads to key_part(), then
    // the last piece to classify_key(), which hands `classify` the whole key either way.
    void key_part(boost::json::string_view part) { key_.append(part.data(), part.size()); }
    template <class Classify>
    auto classify_key(boost::json::string_view last, Classify classify) {
        if (key_.empty()) return classify(std::string_view(last.data(), last.size()));
        key_.append(last.data(), last.size());
        const auto field = classify(std::string_view(key_));
        key_.clear();
        return field;
    }
    // Between documents. A scanner may live as long as its thread: a rare huge key is not kept.
    void reset_key() { clear_keeping_small(key_); }
    // Empties `s`, and frees its buffer when a rare huge value grew it past kKeptCapacity.
    static void clear_keeping_small(std::string& s) {
        if (s.capacity() > kKeptCapacity) std::string().swap(s);
        s.clear();
    }
    static constexpr std::size_t kKeptCapacity = 4096;

  private:
    std::string key_;
};

// OpenAI's usage object as read_openai_usage reads it, for the scanners of whole responses
// and of stream chunks (their Field and Place enums name these members alike): the field a
// key of `usage` or of its two details objects is, and the count an integer of it sets.
template <class Field, class Place>
Field classify_usage_key(Place where, std::string_view key) {
    switch (where) {
        case Place::usage:
            if (key == "prompt_tokens") return Field::prompt_tokens;
            if (key == "completion_tokens") return Field::completion_tokens;
            if (key == "prompt_tokens_details") return Field::prompt_details;
            if (key == "completion_tokens_details") return Field::completion_details;
            return Field::ignored;
        case Place::prompt_details:
            return key == "cached_tokens" ? Field::cached_tokens : Field::ignored;
        case Place::completion_details:
            return key == "reasoning_tokens" ? Field::reasoning_tokens : Field::ignored;
        default:
            return Field::ignored;
    }
}
// The place an object opened as `field` is when it is the usage object or one of its two
// details objects; nullopt for any other field.
template <class Place, class Field>
std::optional<Place> usage_object_place(Field field) {
    switch (field) {
        case Field::usage:
            return Place::usage;
        case Field::prompt_details:
            return Place::prompt_details;
        case Field::completion_details:
            return Place::completion_details;
        default:
            return std::nullopt;
    }
}

// False when `field` is no token count of the usage object.
template <class Field>
bool set_usage_count(Field field, std::int64_t value, Usage& usage) {
    switch (field) {
        case Field::prompt_tokens:
            usage.prompt_tokens = value;
            return true;
        case Field::completion_tokens:
            usage.output_tokens = value;
            return true;
        case Field::cached_tokens:
            usage.cached_prompt_tokens = value;
            return true;
        case Field::reasoning_tokens:
            usage.reasoning_tokens = value;
            return true;
        default:
            return false;
    }
}

// The bit of a field in a per-container "seen" mask: a repeated field declines, so which
// duplicate the DOM keeps never matters.
template <class Field>
constexpr unsigned bit(Field f) {
    return 1u << static_cast<unsigned>(f);
}

}  // namespace tokenradar::dialect
