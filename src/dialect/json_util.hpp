#pragma once
// Private helpers for reading JSON with errors that name the field path, and for decoding
// stream events without a heap allocation per event.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

namespace json = boost::json;

// A field path built on the stack; rendered ("messages[2].role") only when reporting.
// A Path refers to its parent, so keep parents alive as named variables.
class Path {
  public:
    Path() = default;
    Path key(std::string_view k) const& { return Path(this, k, kNoIndex); }
    Path at(std::size_t i) const& { return Path(this, {}, i); }
    // A child of a temporary would dangle (found by the request fuzzers): refuse to compile.
    Path key(std::string_view) const&& = delete;
    Path at(std::size_t) const&& = delete;
    std::string str() const;

  private:
    static constexpr std::size_t kNoIndex = static_cast<std::size_t>(-1);
    Path(const Path* parent, std::string_view k, std::size_t i)
        : parent_(parent), key_(k), index_(i) {}
    const Path* parent_ = nullptr;
    std::string_view key_;
    std::size_t index_ = kNoIndex;
};

// Reads fields and remembers the first error. Accessors return empty results after an
// error, so parsing code checks `failed()` at convenient points, not after every read.
class Reader {
  public:
    explicit Reader(Errc errc) : errc_(errc) {}

    bool failed() const noexcept { return error_.has_value(); }
    Error take_error() { return std::move(*error_); }
    void fail(const Path& p, std::string_view what);
    void fail_key(const Path& parent, std::string_view key, std::string_view what) {
        fail(parent.key(key), what);
    }

    // nullptr when absent or JSON null.
    static const json::value* find(const json::object& o, std::string_view key) noexcept;

    const json::object* object(const json::object& o, std::string_view key, const Path& p,
                               bool required = false);
    const json::array* array(const json::object& o, std::string_view key, const Path& p,
                             bool required = false);
    std::optional<std::string_view> string(const json::object& o, std::string_view key,
                                           const Path& p, bool required = false);
    std::optional<std::int64_t> integer(const json::object& o, std::string_view key, const Path& p,
                                        bool required = false);
    // A finite number (a JSON literal such as 1e999 parses as infinity and is refused) within
    // `range` when given: "expected a number from 0 to 2".
    struct Range {
        double lo;
        double hi;
    };
    std::optional<double> number(const json::object& o, std::string_view key, const Path& p,
                                 bool required = false, std::optional<Range> range = {});
    // An integer of at least `min` (max_tokens: "expected an integer of at least 1").
    std::optional<std::int64_t> integer_at_least(const json::object& o, std::string_view key,
                                                 const Path& p, std::int64_t min,
                                                 bool required = false);
    std::optional<bool> boolean(const json::object& o, std::string_view key, const Path& p,
                                bool required = false);
    // An element (or any value) that must be an object.
    const json::object* as_object(const json::value& v, const Path& p);

  private:
    const json::value* lookup(const json::object& o, std::string_view key, const Path& p,
                              bool required);
    Errc errc_;
    std::optional<Error> error_;
};

// The documented ranges of the sampling parameters every dialect shares (OpenAI's and
// Gemini's temperature; Anthropic's is 0-1, the probability range).
inline constexpr Reader::Range kTemperatureRange{0.0, 2.0};
inline constexpr Reader::Range kProbabilityRange{0.0, 1.0};
inline constexpr Reader::Range kPenaltyRange{-2.0, 2.0};

// Calls read(element, path) for each element of `a` while the reader has not failed; an
// element that is not an object fails the reader and ends the walk.
template <class ReadObject>
void for_each_object(Reader& r, const json::array& a, const Path& p, ReadObject&& read) {
    for (std::size_t i = 0; i < a.size() && !r.failed(); ++i) {
        Path ip = p.at(i);
        const json::object* element = r.as_object(a[i], ip);
        if (!element) return;
        read(*element, ip);
    }
}

// The end of every stream decoder's decode(): after a read error the event's deltas (from
// `first` on) are dropped and the error returned; an event that gave none adds one
// `ignorable` delta (it was an event all the same).
Result<void> finish_event(Reader& r, std::vector<StreamDelta>& out, std::size_t first);

// Appends the elements of `a`, which must all be strings ("stop[1]: expected a string").
void read_strings(Reader& r, const json::array& a, const Path& p, std::vector<std::string>& out);

// Gemini takes proto3 JSON, where a field may be spelled lowerCamelCase or snake_case;
// nullptr when absent or null.
inline const json::value* proto_field(const json::object& o, std::string_view camel,
                                      std::string_view snake) noexcept {
    const json::value* v = Reader::find(o, camel);
    return v ? v : Reader::find(o, snake);
}

// Parses a whole body that must be a JSON object, into `storage` (the default heap when empty).
Result<json::object> parse_object(std::string_view body, Errc errc, json::storage_ptr storage = {});

// Storage for a parsed request body that outlives its parse (ChatRequest::original): one arena
// for the whole DOM, shared by the object and its copies and freed with the last of them. On
// the default heap each key, string, object and array was a malloc (~13 of the gateway's ~35
// per small request). With `scratch`, the DOM is made in it instead: for a caller that drops
// `original` before `scratch` (a door reads its client's DOM only until it is translated), and
// then destroying the DOM is free, where a shared arena's DOM is still walked node by node.
json::storage_ptr request_storage(std::size_t body_size,
                                  json::monotonic_resource* scratch = nullptr);
// Replaces `target` with `source`, storage and all: an assignment keeps the target's storage
// and deep-copies into it when the two differ.
void adopt(json::object& target, json::object&& source);

// One member of a JSON object's text: its key as written (between the quotes, escapes not
// decoded) and the byte range of its value's text.
struct MemberText {
    std::string_view key;
    std::size_t value_begin = 0;
    std::size_t value_end = 0;
};

// The top-level members of a JSON object's text, in order, without a DOM. The text must be
// an object that parsed without error: values are skipped, not validated.
//   MemberScanner members(text);
//   while (auto m = members.next()) ...;
//   members.closing_brace()  // the object's '}', or nullopt when the text was not one
class MemberScanner {
  public:
    explicit MemberScanner(std::string_view text);
    std::optional<MemberText> next();
    // After next() returned nullopt: the offset of the closing brace, or nullopt when the
    // text is not shaped like an object after all.
    std::optional<std::size_t> closing_brace() const { return close_; }

  private:
    std::string_view text_;
    std::size_t at_ = 0;  // the next member's key, or the closing brace
    bool done_ = false;
    std::optional<std::size_t> close_;
};

// A stack arena for parsing a response body that is read and dropped within one function: a
// small body then needs no heap allocation per key and string (those mallocs were ~4% of
// bench's CPU per small non-streaming request). A larger body spills to the heap.
class ResponseArena {
  public:
    ResponseArena() : mr_(buffer_, sizeof buffer_) {}
    ResponseArena(const ResponseArena&) = delete;
    ResponseArena& operator=(const ResponseArena&) = delete;
    json::storage_ptr storage() noexcept { return json::storage_ptr(&mr_); }

  private:
    unsigned char buffer_[4096];
    json::monotonic_resource mr_;
};

// Parses one stream event into a reusable arena; the returned object is valid until the
// next parse().
class EventJson {
  public:
    EventJson() : mr_(buffer_, sizeof buffer_), value_(json::storage_ptr(&mr_)) {}
    EventJson(const EventJson&) = delete;
    EventJson& operator=(const EventJson&) = delete;
    Result<const json::object*> parse(std::string_view data);

  private:
    unsigned char buffer_[8192];
    json::monotonic_resource mr_;
    // Lives in the arena, so assigning a value parsed into the arena moves it (a value with
    // other storage would be deep-copied to the heap, event by event).
    json::value value_;
};

std::string to_json_text(const json::value& v);
// JSON text -> object; nullopt when it is not a JSON object.
std::optional<json::object> parse_json_object(std::string_view text);

}  // namespace tokenradar::dialect
