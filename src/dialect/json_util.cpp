#include "json_util.hpp"

#include <tokenradar/core/json_text.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace tokenradar::dialect {

std::string Path::str() const {
    if (parent_ == nullptr) return {};
    std::string s = parent_->str();
    if (index_ != kNoIndex) {
        s += '[';
        s += std::to_string(index_);
        s += ']';
    } else {
        if (!s.empty()) s += '.';
        s.append(key_);
    }
    return s;
}

void Reader::fail(const Path& p, std::string_view what) {
    if (error_) return;
    std::string where = p.str();
    if (where.empty()) where = "body";
    error_.emplace(errc_, where + ": " + std::string(what));
}

const json::value* Reader::find(const json::object& o, std::string_view key) noexcept {
    // Request objects are small and a request makes ~20 lookups, most for absent options:
    // an inline scan that compares sizes first costs a fraction of if_contains's ~80
    // instructions (an out-of-line call, a memcmp per key). Large objects keep its hash index.
    constexpr std::size_t kScanned = 16;
    const json::value* v = nullptr;
    if (o.size() <= kScanned) {
        for (const json::key_value_pair& field : o) {
            const json::string_view k = field.key();
            if (k.size() == key.size() && std::equal(k.begin(), k.end(), key.begin())) {
                v = &field.value();
                break;
            }
        }
    } else {
        v = o.if_contains(key);
    }
    return (v == nullptr || v->is_null()) ? nullptr : v;
}

const json::value* Reader::lookup(const json::object& o, std::string_view key, const Path& p,
                                  bool required) {
    if (error_) return nullptr;
    const json::value* v = find(o, key);
    if (v == nullptr && required) fail_key(p, key, "required");
    return v;
}

const json::object* Reader::object(const json::object& o, std::string_view key, const Path& p,
                                   bool required) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) {
        fail_key(p, key, "expected an object");
        return nullptr;
    }
    return &v->get_object();
}

const json::array* Reader::array(const json::object& o, std::string_view key, const Path& p,
                                 bool required) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return nullptr;
    if (!v->is_array()) {
        fail_key(p, key, "expected an array");
        return nullptr;
    }
    return &v->get_array();
}

std::optional<std::string_view> Reader::string(const json::object& o, std::string_view key,
                                               const Path& p, bool required) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
        fail_key(p, key, "expected a string");
        return std::nullopt;
    }
    const json::string& s = v->get_string();
    return std::string_view(s.data(), s.size());
}

std::optional<std::int64_t> Reader::integer(const json::object& o, std::string_view key,
                                            const Path& p, bool required) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return std::nullopt;
    if (v->is_int64()) return v->get_int64();
    if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
        return static_cast<std::int64_t>(v->get_uint64());
    }
    if (v->is_double()) {
        double d = v->get_double();
        if (d >= -9.0e18 && d <= 9.0e18 && static_cast<double>(static_cast<std::int64_t>(d)) == d) {
            return static_cast<std::int64_t>(d);
        }
    }
    fail_key(p, key, "expected an integer");
    return std::nullopt;
}

std::optional<double> Reader::number(const json::object& o, std::string_view key, const Path& p,
                                     bool required, std::optional<Range> range) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) {
        fail_key(p, key, "expected a number");
        return std::nullopt;
    }
    const double d = v->to_number<double>();
    if (range && !(d >= range->lo && d <= range->hi)) {  // NaN and infinities fail too
        fail_key(p, key, fmt::format("expected a number from {} to {}", range->lo, range->hi));
        return std::nullopt;
    }
    if (!std::isfinite(d)) {
        fail_key(p, key, "expected a finite number");
        return std::nullopt;
    }
    return d;
}

std::optional<std::int64_t> Reader::integer_at_least(const json::object& o, std::string_view key,
                                                     const Path& p, std::int64_t min,
                                                     bool required) {
    auto i = integer(o, key, p, required);
    if (i && *i < min) {
        fail_key(p, key, fmt::format("expected an integer of at least {}", min));
        return std::nullopt;
    }
    return i;
}

std::optional<bool> Reader::boolean(const json::object& o, std::string_view key, const Path& p,
                                    bool required) {
    const json::value* v = lookup(o, key, p, required);
    if (v == nullptr) return std::nullopt;
    if (!v->is_bool()) {
        fail_key(p, key, "expected true or false");
        return std::nullopt;
    }
    return v->get_bool();
}

const json::object* Reader::as_object(const json::value& v, const Path& p) {
    if (error_) return nullptr;
    if (!v.is_object()) {
        fail(p, "expected an object");
        return nullptr;
    }
    return &v.get_object();
}

void read_strings(Reader& r, const json::array& a, const Path& p, std::vector<std::string>& out) {
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!a[i].is_string()) {
            r.fail(p.at(i), "expected a string");
            return;
        }
        out.emplace_back(a[i].get_string());
    }
}

Result<json::object> parse_object(std::string_view body, Errc errc, json::storage_ptr storage) {
    boost::system::error_code ec;
    json::value v = json::parse(body, ec, std::move(storage));
    if (ec) return Error(errc, "body: invalid JSON (" + ec.message() + ")");
    if (!v.is_object()) return Error(errc, "body: expected a JSON object");
    return std::move(v.get_object());
}

json::storage_ptr request_storage(std::size_t body_size, json::monotonic_resource* scratch) {
    if (scratch != nullptr) return scratch;
    // The DOM of a small body takes about twice its text (entries, string headers).
    return json::make_shared_resource<json::monotonic_resource>(2 * body_size + 1024);
}

void adopt(json::object& target, json::object&& source) {
    std::destroy_at(&target);
    std::construct_at(&target, std::move(source));  // the move constructor takes the storage
}

namespace {

// From a string's opening quote to just past its closing one. A byte loop: request strings
// are mostly short, where a memchr per quote cost more than it saved.
std::size_t skip_string(std::string_view t, std::size_t open) noexcept {
    for (std::size_t i = open + 1; i < t.size(); ++i) {
        if (t[i] == '\\') {
            ++i;  // the escaped character, whatever it is
        } else if (t[i] == '"') {
            return i + 1;
        }
    }
    return t.size();
}

std::size_t skip_value(std::string_view t, std::size_t i) noexcept {
    if (i >= t.size()) return i;
    if (t[i] == '"') return skip_string(t, i);
    if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        while (i < t.size()) {
            const char c = t[i];
            if (c == '"') {
                i = skip_string(t, i);
                continue;
            }
            if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return i + 1;
            }
            ++i;
        }
        return i;
    }
    while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && !is_json_space(t[i])) ++i;
    return i;  // a number, true, false or null
}

}  // namespace

MemberScanner::MemberScanner(std::string_view text) : text_(text) {
    at_ = skip_json_space(text_, 0);
    if (at_ == text_.size() || text_[at_] != '{') {
        done_ = true;
        return;
    }
    at_ = skip_json_space(text_, at_ + 1);
}

std::optional<MemberText> MemberScanner::next() {
    if (done_) return std::nullopt;
    done_ = true;  // until this member is whole
    if (at_ < text_.size() && text_[at_] == '}') {
        close_ = at_;
        return std::nullopt;
    }
    if (at_ == text_.size() || text_[at_] != '"') return std::nullopt;
    const std::size_t key_end = skip_string(text_, at_);
    if (key_end - at_ < 2) return std::nullopt;
    const std::string_view key = text_.substr(at_ + 1, key_end - at_ - 2);
    std::size_t i = skip_json_space(text_, key_end);
    if (i == text_.size() || text_[i] != ':') return std::nullopt;
    const std::size_t value_begin = skip_json_space(text_, i + 1);
    const std::size_t value_end = skip_value(text_, value_begin);
    if (value_end == value_begin) return std::nullopt;
    i = skip_json_space(text_, value_end);
    if (i < text_.size() && text_[i] == ',') {
        at_ = skip_json_space(text_, i + 1);
        if (at_ == text_.size() || text_[at_] != '"') return std::nullopt;  // "a":1,}
    } else if (i < text_.size() && text_[i] == '}') {
        at_ = i;
    } else {
        return std::nullopt;
    }
    done_ = false;
    return MemberText{key, value_begin, value_end};
}

Result<const json::object*> EventJson::parse(std::string_view data) {
    value_ =
        nullptr;  // drop the previous value (keeping the arena storage) before its memory is reused
    mr_.release();
    boost::system::error_code ec;
    json::parse_options opts;
    opts.max_depth = 64;
    value_ = json::parse(data, ec, json::storage_ptr(&mr_), opts);
    if (ec) return Error(Errc::protocol_error, "event data: invalid JSON (" + ec.message() + ")");
    if (!value_.is_object())
        return Error(Errc::protocol_error, "event data: expected a JSON object");
    return &value_.get_object();
}

std::string to_json_text(const json::value& v) { return json::serialize(v); }

std::optional<json::object> parse_json_object(std::string_view text) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.get_object());
}

Result<void> finish_event(Reader& r, std::vector<StreamDelta>& out, std::size_t first) {
    if (r.failed()) {
        out.resize(first);
        return r.take_error();
    }
    if (out.size() == first) out.push_back(StreamDelta::make(StreamDelta::Kind::ignorable));
    return {};
}

}  // namespace tokenradar::dialect
