#include "openai_response_scan.hpp"

#include "json_sax.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include <array>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::dialect {

namespace {

namespace json = boost::json;
using ErrorCode = boost::system::error_code;

// Where the parser is: the containers parse_openai_response reads, or anything else (skipped
// whole).
enum class Place : std::uint8_t {
    root,
    choices,
    choice,
    message,
    usage,
    prompt_details,
    completion_details,
    other,
};
constexpr std::size_t kReadPlaces = static_cast<std::size_t>(Place::other);

// What the value after the last key is to the full parser.
enum class Field : std::uint8_t {
    ignored,             // a field it does not read
    id,                  // strings (or null)
    model,               //
    finish,              //
    content,             //
    reasoning_content,   //
    reasoning,           //
    created,             // integers (or null)
    prompt_tokens,       //
    completion_tokens,   //
    cached_tokens,       //
    reasoning_tokens,    //
    choices,             // an array, required
    message,             // an object, required
    usage,               // objects (or null)
    prompt_details,      //
    completion_details,  //
    tool_calls,          // anything but null declines (the full parser validates each call)
};

bool is_string_field(Field f) { return f >= Field::id && f <= Field::reasoning; }
bool is_integer_field(Field f) { return f >= Field::created && f <= Field::reasoning_tokens; }

class Handler : public SaxHandlerBase {
  public:
    void reset() {
        clear_keeping_small(id_);  // the scanner lives as long as its thread
        reset_key();
        stack_.clear();
        field_ = Field::ignored;
        seen_.fill(0);
        choices_ = 0;
        has_choices_ = has_message_ = false;
        string_ = std::nullopt;
        usage_ = Usage{};
        content_bytes_ = reasoning_content_bytes_ = reasoning_bytes_ = 0;
        has_reasoning_content_ = false;
    }
    std::string_view id() const { return id_; }
    const Usage& usage() const { return usage_; }
    std::size_t text_bytes() const { return content_bytes_; }
    std::size_t reasoning_bytes() const {
        // parse_openai_response keeps reasoning_content when it is a string, else reasoning.
        return has_reasoning_content_ ? reasoning_content_bytes_ : reasoning_bytes_;
    }

    bool on_object_begin(ErrorCode& ec) {
        if (stack_.empty()) return open(Place::root);
        if (top() == Place::other) return open(Place::other);
        if (top() == Place::choices) {
            if (++choices_ > 1) return decline(ec);
            return open(Place::choice);
        }
        if (field_ == Field::ignored) return open(Place::other);
        if (field_ == Field::message) {
            has_message_ = true;
            return open(Place::message);
        }
        if (const auto usage_place = usage_object_place<Place>(field_)) return open(*usage_place);
        return decline(ec);  // a field the scan reads, of another type
    }
    bool on_object_end(std::size_t, ErrorCode& ec) {
        // Required by the full parser: the first choice's message, and the root's choices.
        if (top() == Place::choice && !has_message_) return decline(ec);
        if (top() == Place::root && !has_choices_) return decline(ec);
        return close();
    }
    bool on_array_begin(ErrorCode& ec) {
        if (stack_.empty() || top() == Place::choices) return decline(ec);  // root, choice
        if (top() == Place::other || field_ == Field::ignored) return open(Place::other);
        if (field_ != Field::choices) return decline(ec);
        has_choices_ = true;
        return open(Place::choices);
    }
    bool on_array_end(std::size_t, ErrorCode&) { return close(); }

    bool on_key_part(json::string_view s, std::size_t, ErrorCode&) {
        if (top() != Place::other) key_part(s);
        return true;
    }
    bool on_key(json::string_view s, std::size_t, ErrorCode& ec) {
        if (top() == Place::other) return true;
        field_ = classify_key(s, [&](std::string_view key) { return classify(top(), key); });
        if (field_ == Field::ignored) return true;
        // A repeated field declines, so which duplicate the DOM keeps never matters.
        unsigned& seen = seen_[static_cast<std::size_t>(top())];
        if ((seen & bit(field_)) != 0) return decline(ec);
        seen |= bit(field_);
        return true;
    }

    bool on_string_part(json::string_view s, std::size_t, ErrorCode& ec) {
        if (!string_) {
            if (!scalar_allowed(is_string_field(field_))) return decline(ec);
            string_ = top() == Place::other ? Field::ignored : field_;
        }
        switch (*string_) {
            case Field::id:
                id_.append(s.data(), s.size());
                break;
            case Field::content:
                content_bytes_ += s.size();
                break;
            case Field::reasoning_content:
                reasoning_content_bytes_ += s.size();
                has_reasoning_content_ = true;
                break;
            case Field::reasoning:
                reasoning_bytes_ += s.size();
                break;
            default:
                break;
        }
        return true;
    }
    bool on_string(json::string_view s, std::size_t, ErrorCode& ec) {
        if (!on_string_part(s, 0, ec)) return false;
        string_ = std::nullopt;
        return done_value();
    }

    bool on_int64(std::int64_t v, json::string_view, ErrorCode& ec) { return integer(v, ec); }
    bool on_uint64(std::uint64_t v, json::string_view, ErrorCode& ec) {
        if (v > static_cast<std::uint64_t>(INT64_MAX)) return scalar(false, ec);
        return integer(static_cast<std::int64_t>(v), ec);
    }
    bool on_double(double, json::string_view, ErrorCode& ec) { return scalar(false, ec); }
    bool on_bool(bool, ErrorCode& ec) { return scalar(false, ec); }
    bool on_null(ErrorCode& ec) {
        // null reads as absent (Reader::find), which the required fields refuse; a choice
        // must be an object.
        if (stack_.empty() || top() == Place::choices) return decline(ec);
        if (top() != Place::other && (field_ == Field::choices || field_ == Field::message))
            return decline(ec);
        return done_value();
    }

  private:
    Place top() const { return stack_.back(); }
    bool open(Place p) {
        stack_.push_back(p);
        field_ = Field::ignored;
        return true;
    }
    bool close() {
        stack_.pop_back();
        field_ = Field::ignored;
        return true;
    }
    bool done_value() {
        field_ = Field::ignored;
        return true;
    }
    // A scalar here is one the full parser accepts: anything in a skipped value, the right
    // type for a field it reads (`fits`), never a root or a choice.
    bool scalar_allowed(bool fits) const {
        if (stack_.empty() || top() == Place::choices) return false;
        return top() == Place::other || field_ == Field::ignored || fits;
    }
    bool scalar(bool fits, ErrorCode& ec) {
        if (!scalar_allowed(fits)) return decline(ec);
        return done_value();
    }
    bool integer(std::int64_t v, ErrorCode& ec) {
        if (!scalar_allowed(is_integer_field(field_))) return decline(ec);
        if (top() != Place::other) set_usage_count(field_, v, usage_);
        return done_value();
    }

    static Field classify(Place where, std::string_view key) {
        switch (where) {
            case Place::root:
                if (key == "id") return Field::id;
                if (key == "model") return Field::model;
                if (key == "created") return Field::created;
                if (key == "choices") return Field::choices;
                if (key == "usage") return Field::usage;
                return Field::ignored;
            case Place::choice:
                if (key == "message") return Field::message;
                if (key == "finish_reason") return Field::finish;
                return Field::ignored;
            case Place::message:
                if (key == "content") return Field::content;
                if (key == "reasoning_content") return Field::reasoning_content;
                if (key == "reasoning") return Field::reasoning;
                if (key == "tool_calls") return Field::tool_calls;
                return Field::ignored;
            case Place::usage:
            case Place::prompt_details:
            case Place::completion_details:
                return classify_usage_key<Field>(where, key);
            default:
                return Field::ignored;
        }
    }

    std::vector<Place> stack_;
    Field field_ = Field::ignored;
    std::array<unsigned, kReadPlaces> seen_{};  // fields seen, per container read (each is one)
    int choices_ = 0;
    bool has_choices_ = false;
    bool has_message_ = false;
    std::optional<Field> string_;  // the field of the string being read
    std::string id_;
    Usage usage_;
    std::size_t content_bytes_ = 0;
    std::size_t reasoning_content_bytes_ = 0;
    std::size_t reasoning_bytes_ = 0;
    bool has_reasoning_content_ = false;
};

}  // namespace

struct OpenAiResponseScanner::Impl {
    // Default options, as parse_object's json::parse: both accept the same documents.
    json::basic_parser<Handler> parser{json::parse_options{}};
};

OpenAiResponseScanner::OpenAiResponseScanner() : impl_(std::make_unique<Impl>()) {}
OpenAiResponseScanner::~OpenAiResponseScanner() = default;

bool OpenAiResponseScanner::scan(std::string_view body) noexcept {
    auto& parser = impl_->parser;
    try {
        parser.reset();
        parser.handler().reset();
        ErrorCode ec;
        const std::size_t n = parser.write_some(false, body.data(), body.size(), ec);
        return !ec && n == body.size() && parser.done();
    } catch (const std::bad_alloc&) {
        return false;  // the handler's buffers could not grow: the DOM path decides
    }
}

std::string_view OpenAiResponseScanner::id() const noexcept { return impl_->parser.handler().id(); }

const Usage& OpenAiResponseScanner::usage() const noexcept {
    return impl_->parser.handler().usage();
}

std::size_t OpenAiResponseScanner::text_bytes() const noexcept {
    return impl_->parser.handler().text_bytes();
}

std::size_t OpenAiResponseScanner::reasoning_bytes() const noexcept {
    return impl_->parser.handler().reasoning_bytes();
}

}  // namespace tokenradar::dialect
