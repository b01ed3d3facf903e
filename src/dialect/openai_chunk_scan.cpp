#include "openai_chunk_scan.hpp"

#include "json_sax.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

namespace {

namespace json = boost::json;
using ErrorCode = boost::system::error_code;

// Where the parser is: the containers the scan reads, or anything else (skipped whole).
enum class Place : std::uint8_t {
    root,
    choices,
    choice,
    delta,
    usage,
    prompt_details,      // usage.prompt_tokens_details
    completion_details,  // usage.completion_tokens_details
    other,
};
// The containers the scan reads (all but `other`), each with its mask of fields seen.
constexpr std::size_t kPlaces = static_cast<std::size_t>(Place::other);

// What the value after the last key means to the scan.
enum class Field : std::uint8_t {
    ignored,             // a field the full decoder does not read, or reads only when declined
    choices,             // root.choices: an array, or null
    usage,               // root.usage: an object, or null
    id,                  // root.id: a string, or null (read always; a role delta carries it)
    model,               // root.model: a string, or null (read always; a role delta carries it)
    index,               // choice.index: 0 or null
    delta,               // choice.delta: an object, or null
    finish,              // choice.finish_reason: a string, or null
    content,             // delta.content: a string (empty reads as absent), or null
    role,                // delta.role: a string, or null
    prompt_tokens,       // usage.prompt_tokens: an integer, or null
    completion_tokens,   // usage.completion_tokens: an integer, or null
    prompt_details,      // usage.prompt_tokens_details: an object, or null
    completion_details,  // usage.completion_tokens_details: an object, or null
    cached_tokens,       // prompt_tokens_details.cached_tokens: an integer, or null
    reasoning_tokens,    // completion_tokens_details.reasoning_tokens: an integer, or null
    null_only,           // delta.reasoning* / tool_calls / refusal: anything but null declines
    decline,             // root.error: always the full decoder's
};

class Handler : public SaxHandlerBase {
  public:
    // Before each document: `input` is its bytes (raw_content() points into them).
    void reset(std::string_view input) {
        input_ = input;
        raw_content_ = {};
        stack_.clear();
        field_ = Field::ignored;
        seen_.fill(0);
        choices_ = 0;
        reset_key();
        for (std::string* s : {&text_, &finish_, &id_, &model_}) clear_keeping_small(*s);
        has_finish_ = has_role_ = has_usage_ = false;
        usage_ = Usage{};
        in_string_ = false;
        capture_ = nullptr;
    }
    std::string_view text() const { return text_; }
    std::optional<std::string_view> finish() const {
        if (!has_finish_) return std::nullopt;
        return std::string_view(finish_);
    }
    bool role() const { return has_role_; }
    std::string_view id() const { return id_; }
    std::string_view model() const { return model_; }
    const Usage* usage() const { return has_usage_ ? &usage_ : nullptr; }
    // The delta's content string as it stands in the input, between its quotes, when it had
    // no escape (its bytes are its text); empty otherwise.
    std::string_view raw_content() const { return raw_content_; }

    bool on_object_begin(ErrorCode& ec) {
        if (stack_.empty()) {
            stack_.push_back(Place::root);
            return true;
        }
        if (top() == Place::choices) {
            if (++choices_ > 1) return decline(ec);
            return open(Place::choice);
        }
        if (top() == Place::other || field_ == Field::ignored) return open(Place::other);
        if (field_ == Field::delta) return open(Place::delta);
        if (const auto usage_place = usage_object_place<Place>(field_)) {
            if (*usage_place == Place::usage) has_usage_ = true;
            return open(*usage_place);
        }
        return decline(ec);  // a field the scan reads, of another type
    }
    bool on_object_end(std::size_t, ErrorCode&) {
        stack_.pop_back();
        field_ = Field::ignored;
        return true;
    }
    bool on_array_begin(ErrorCode& ec) {
        if (stack_.empty()) return decline(ec);  // the root must be an object
        if (top() == Place::root && field_ == Field::choices) return open(Place::choices);
        if (top() != Place::other && (field_ != Field::ignored || top() == Place::choices))
            return decline(ec);
        return open(Place::other);
    }
    bool on_array_end(std::size_t, ErrorCode&) {
        stack_.pop_back();
        field_ = Field::ignored;
        return true;
    }

    bool on_key_part(json::string_view s, std::size_t, ErrorCode&) {
        if (known()) key_part(s);
        return true;
    }
    bool on_key(json::string_view s, std::size_t, ErrorCode& ec) {
        if (!known()) return true;
        field_ = classify_key(s, [&](std::string_view key) { return classify(top(), key); });
        if (field_ == Field::decline) return decline(ec);
        if (field_ == Field::ignored) return true;
        // null_only covers several keys: repeats of those cannot change the outcome (any
        // non-null one declines), so only the other fields count.
        if (field_ != Field::null_only) {
            unsigned& seen = seen_[static_cast<std::size_t>(top())];
            if ((seen & bit(field_)) != 0) return decline(ec);
            seen |= bit(field_);
        }
        return true;
    }

    bool on_string_part(json::string_view s, std::size_t, ErrorCode& ec) {
        if (!in_string_) {
            if (!string_allowed()) return decline(ec);
            in_string_ = true;
            capture_ = field_ == Field::content  ? &text_
                       : field_ == Field::finish ? &finish_
                       : field_ == Field::id     ? &id_
                       : field_ == Field::model  ? &model_
                                                 : nullptr;
        }
        if (capture_ != nullptr) capture_->append(s.data(), s.size());
        return true;
    }
    bool on_string(json::string_view s, std::size_t, ErrorCode& ec) {
        // Whole and unescaped, the parser hands over the input's own bytes.
        const bool whole = !in_string_;
        if (!on_string_part(s, 0, ec)) return false;
        if (field_ == Field::content && whole && s.data() >= input_.data() &&
            s.data() + s.size() <= input_.data() + input_.size())
            raw_content_ = std::string_view(s.data(), s.size());
        has_finish_ = has_finish_ || field_ == Field::finish;
        has_role_ = has_role_ || field_ == Field::role;
        in_string_ = false;
        capture_ = nullptr;
        return done_value();
    }

    bool on_int64(std::int64_t v, json::string_view, ErrorCode& ec) {
        if (!known() || field_ == Field::ignored) return scalar(ec);
        if (field_ == Field::index) return v == 0 ? done_value() : decline(ec);
        return take_integer(v, ec);
    }
    bool on_uint64(std::uint64_t v, json::string_view, ErrorCode& ec) {
        if (!known() || field_ == Field::ignored) return scalar(ec);
        if (field_ == Field::index) return v == 0 ? done_value() : decline(ec);
        if (v > static_cast<std::uint64_t>(INT64_MAX)) return decline(ec);
        return take_integer(static_cast<std::int64_t>(v), ec);
    }
    // A double where the scan reads a field (a count Reader::integer would take as 5.0):
    // the full decoder's, as the response scanner leaves it.
    bool on_double(double, json::string_view, ErrorCode& ec) { return scalar(ec); }
    bool on_bool(bool, ErrorCode& ec) { return scalar(ec); }
    bool on_null(ErrorCode& ec) {
        // null reads as absent everywhere the full decoder looks (Reader::find), but a
        // choice must be an object.
        if (!stack_.empty() && top() == Place::choices) return decline(ec);
        if (stack_.empty()) return decline(ec);
        return done_value();
    }

  private:
    Place top() const { return stack_.back(); }
    bool known() const { return !stack_.empty() && top() != Place::other; }
    bool open(Place p) {
        stack_.push_back(p);
        field_ = Field::ignored;
        return true;
    }
    bool done_value() {
        field_ = Field::ignored;
        return true;
    }
    bool string_allowed() const {
        if (stack_.empty()) return false;  // a scalar root
        if (top() == Place::other) return true;
        if (top() == Place::choices) return false;  // a choice must be an object
        switch (field_) {
            case Field::ignored:
            case Field::content:
            case Field::finish:
            case Field::role:
            case Field::id:
            case Field::model:
                return true;
            default:
                return false;
        }
    }
    // A number or a bool where the scan reads nothing, or reads another type: declines.
    bool scalar(ErrorCode& ec) {
        if (stack_.empty()) return decline(ec);
        if (top() == Place::other) return true;
        if (top() == Place::choices || field_ != Field::ignored) return decline(ec);
        return true;
    }
    // A token count of the usage object; any other field the scan reads is not a number.
    bool take_integer(std::int64_t v, ErrorCode& ec) {
        return set_usage_count(field_, v, usage_) ? done_value() : decline(ec);
    }

    static Field classify(Place where, std::string_view key) {
        switch (where) {
            case Place::root:
                if (key == "choices") return Field::choices;
                if (key == "usage") return Field::usage;
                if (key == "id") return Field::id;
                if (key == "model") return Field::model;
                if (key == "error") return Field::decline;
                return Field::ignored;
            case Place::choice:
                if (key == "index") return Field::index;
                if (key == "delta") return Field::delta;
                if (key == "finish_reason") return Field::finish;
                return Field::ignored;
            case Place::delta:
                if (key == "content") return Field::content;
                if (key == "role") return Field::role;
                if (key == "reasoning_content" || key == "reasoning" || key == "tool_calls" ||
                    key == "refusal")
                    return Field::null_only;
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
    std::array<unsigned, kPlaces> seen_{};  // the fields read so far, per container
    int choices_ = 0;
    std::string text_;
    std::string finish_;
    std::string id_;
    std::string model_;
    Usage usage_;
    bool has_finish_ = false;
    bool has_role_ = false;
    bool has_usage_ = false;
    bool in_string_ = false;
    std::string* capture_ = nullptr;  // where the string being read goes, if anywhere
    std::string_view input_;
    std::string_view raw_content_;
};

json::parse_options scan_options() {
    json::parse_options opts;
    opts.max_depth = 64;  // as EventJson, so both paths accept the same documents
    return opts;
}

// The bytes around the content string of the last chunk the parser accepted. The chunks of
// one stream differ only in their text (id, created, model and the choice around it repeat),
// so a chunk that repeats these bytes exactly, around a content string of plain printable
// ASCII (no quote, no backslash: its bytes are its text), is the same document with another
// text: it is taken without parsing, with the same finish reason.
class Envelope {
  public:
    // After the parser accepted `data` with a non-empty text: remembers the bytes around its
    // content string, `content` (a view into `data`, between the quotes, from the parser).
    void learn(std::string_view data, std::string_view content,
               std::optional<std::string_view> finish) {
        valid_ = false;
        if (content.empty() || content.data() <= data.data() ||
            content.data() + content.size() >= data.data() + data.size())
            return;
        const auto start = static_cast<std::size_t>(content.data() - data.data());
        const std::size_t end = start + content.size();
        if (data[start - 1] != '"' || data[end] != '"') return;
        before_.assign(data.substr(0, start));
        after_.assign(data.substr(end));
        has_finish_ = finish.has_value();
        finish_.assign(finish.value_or(std::string_view{}));
        valid_ = true;
    }
    // The text of `data` when it is the remembered envelope around a plain ASCII text.
    std::optional<std::string_view> text_of(std::string_view data) const noexcept {
        if (!valid_ || data.size() <= before_.size() + after_.size()) return std::nullopt;
        if (!data.starts_with(before_) || !data.ends_with(after_)) return std::nullopt;
        const std::string_view text =
            data.substr(before_.size(), data.size() - before_.size() - after_.size());
        for (const char c : text) {
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return std::nullopt;
        }
        return text;
    }
    std::optional<std::string_view> finish() const noexcept {
        if (!has_finish_) return std::nullopt;
        return std::string_view(finish_);
    }

  private:
    std::string before_;  // through the content string's opening quote
    std::string after_;   // from its closing quote to the end
    std::string finish_;
    bool has_finish_ = false;
    bool valid_ = false;
};

}  // namespace

struct OpenAiChunkScanner::Impl {
    json::basic_parser<Handler> parser{scan_options()};
    Envelope envelope;
    bool enveloped = false;      // the envelope took the last chunk
    std::string enveloped_text;  // its text (a copy: the caller's bytes may go)
};

OpenAiChunkScanner::OpenAiChunkScanner() : impl_(std::make_unique<Impl>()) {}
OpenAiChunkScanner::~OpenAiChunkScanner() = default;

bool OpenAiChunkScanner::scan(std::string_view data) noexcept {
    Impl& s = *impl_;
    s.enveloped = false;
    auto& parser = s.parser;
    try {
        if (const auto text = s.envelope.text_of(data)) {
            s.enveloped_text.assign(*text);  // may allocate: inside the try
            s.enveloped = true;
            return true;
        }
        parser.reset();
        parser.handler().reset(data);
        ErrorCode ec;
        const std::size_t n = parser.write_some(false, data.data(), data.size(), ec);
        const bool accepted = !ec && n == data.size() && parser.done();
        const Handler& h = parser.handler();
        // A role or usage chunk is the stream's first or last: not an envelope to repeat.
        if (accepted && !h.text().empty() && !h.role() && h.usage() == nullptr)
            s.envelope.learn(data, h.raw_content(), h.finish());
        return accepted;
    } catch (const std::bad_alloc&) {
        // A buffer could not grow: the full decoder decides. The envelope may be half-learnt.
        s.envelope = Envelope{};
        return false;
    }
}

std::string_view OpenAiChunkScanner::text() const noexcept {
    return impl_->enveloped ? std::string_view(impl_->enveloped_text)
                            : impl_->parser.handler().text();
}

bool OpenAiChunkScanner::enveloped() const noexcept { return impl_->enveloped; }

std::optional<std::string_view> OpenAiChunkScanner::finish() const noexcept {
    return impl_->enveloped ? impl_->envelope.finish() : impl_->parser.handler().finish();
}

bool OpenAiChunkScanner::role() const noexcept {
    return !impl_->enveloped && impl_->parser.handler().role();
}

std::string_view OpenAiChunkScanner::id() const noexcept {
    return impl_->enveloped ? std::string_view{} : impl_->parser.handler().id();
}

std::string_view OpenAiChunkScanner::model() const noexcept {
    return impl_->enveloped ? std::string_view{} : impl_->parser.handler().model();
}

const Usage* OpenAiChunkScanner::usage() const noexcept {
    return impl_->enveloped ? nullptr : impl_->parser.handler().usage();
}

}  // namespace tokenradar::dialect
