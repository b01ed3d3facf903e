#include <zlib.h>

#include <tokenradar/core/duration.hpp>
#include <tokenradar/core/json_text.hpp>
#include <tokenradar/observatory/cell.hpp>
#include <tokenradar/observatory/ingest.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <climits>
#include <algorithm>
#include <cassert>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace tokenradar::observatory {
namespace {

namespace json = boost::json;

// ---- gzip ---------------------------------------------------------------------------------

// Owns a z_stream set up for gzip decoding; inflateEnd runs on every path.
class Inflater {
  public:
    Inflater() { ok_ = inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK; }  // 16: gzip wrapper only
    ~Inflater() {
        if (ok_) inflateEnd(&z_);
    }
    Inflater(const Inflater&) = delete;
    Inflater& operator=(const Inflater&) = delete;

    [[nodiscard]] bool ok() const noexcept { return ok_; }
    z_stream& stream() noexcept { return z_; }

  private:
    z_stream z_{};
    bool ok_ = false;
};

Error gzip_error(std::string_view what) {
    return Error(Errc::bad_request, fmt::format("body: expected gzip data, {}", what));
}

// ---- where a record starts, for messages about the body -------------------------------------

struct Position {
    std::size_t line = 1, column = 1;  // 1-based; columns count bytes
};

Position position_of(std::string_view body, std::size_t offset) {
    Position p;
    const std::string_view before = body.substr(0, offset);
    p.line += static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t last_nl = before.rfind('\n');
    p.column = last_nl == std::string_view::npos ? offset + 1 : offset - last_nl;
    return p;
}

// ---- validation ------------------------------------------------------------------------------

// Errors of measurement_from_json and check_label_value read "field: expected ...".
RecordError split_error(std::size_t index, std::string_view message) {
    const std::size_t colon = message.find(": ");
    if (colon == std::string_view::npos) return {index, "record", std::string(message)};
    return {index, std::string(message.substr(0, colon)), std::string(message.substr(colon + 2))};
}

std::string seconds_text(std::int64_t us) {
    // Rounded up: "0s" would read as no gap at all.
    const std::int64_t s = us / 1'000'000 + (us % 1'000'000 != 0 ? 1 : 0);
    // format_duration prints seconds with {:g}: from 1e6 s (11.6 days; a record a month old)
    // that is 6 significant digits in exponent form ("2.592e+06s"). It also works in
    // nanoseconds, which overflow past ~292 years (a ts_us near INT64_MAX, found by the fuzzer).
    if (s >= 1'000'000) return fmt::format("{}s", s);
    return format_duration(std::chrono::seconds(s));
}

// The checks parse_submission() adds to measurement_from_json(); nullopt when the record is
// fine. Stamps nothing.
std::optional<RecordError> check_record(std::size_t index, const Measurement& m,
                                        const IngestContext& ctx) {
    const Labels& l = m.labels;
    if (l.provider.empty()) return RecordError{index, "provider", "expected a non-empty string"};
    if (l.model.empty()) return RecordError{index, "model", "expected a non-empty string"};
    // The labels of any text (the others were held to their values when parsed).
    for (const LabelInfo& label : kLabelTable) {
        if (!label.values.empty()) continue;
        if (auto ok = check_label_value(label.name, label_value(l, label.label)); !ok) {
            return split_error(index, ok.error().message);
        }
    }
    if (m.request_id.size() > ctx.limits.max_request_id_bytes) {
        return RecordError{index, "request_id",
                           fmt::format("expected at most {} bytes, got {}",
                                       ctx.limits.max_request_id_bytes, m.request_id.size())};
    }
    const std::int64_t skew = ctx.limits.max_clock_skew.count();
    const std::int64_t age = ctx.limits.max_age.count();
    if (m.ts_us > ctx.now_us && m.ts_us - ctx.now_us > skew) {
        return RecordError{index, "ts_us",
                           fmt::format("expected at most {} after the server's clock, got {} after",
                                       format_duration(ctx.limits.max_clock_skew),
                                       seconds_text(m.ts_us - ctx.now_us))};
    }
    if (m.ts_us < ctx.now_us && ctx.now_us - m.ts_us > age) {
        return RecordError{
            index, "ts_us",
            fmt::format("expected at most {} before the server's clock, got {} before",
                        format_duration(ctx.limits.max_age), seconds_text(ctx.now_us - m.ts_us))};
    }
    return std::nullopt;
}

void stamp(Measurement& m, const IngestContext& ctx) {
    m.received_us = ctx.now_us;
    m.client_id = ctx.submitter;
    // The server says whose records these are: only this node's gateway and demo write
    // "gateway", "sim" and "probe" (trusted keys aside), so a submitter cannot change their
    // counts.
    std::string& source = m.labels.source;
    if (source.empty() ||
        (!ctx.trusted_source && (source == "gateway" || source == "sim" || source == "probe"))) {
        source = "submitted";
    }
    // A client key's name belongs to the gateway that admitted the request: a public
    // submitter's would only add cells to everybody's observatory.
    if (!ctx.trusted_source) m.labels.client_key.clear();
    if (m.labels.client_region.empty()) m.labels.client_region = ctx.client_region;
}

// ---- the record loop -------------------------------------------------------------------------

// The (request_id, attempt) identities of the accepted records: open addressing over
// (hash, position in Submission::records). Positions survive the vector growing (SSO strings
// do not); the stored hash means a probe touches a record only when the hashes match.
// (std::unordered_set cost 3x more here: a modulo and a rehash of the id per chain step.)
class SeenKeys {
  public:
    // Adds records[pos]; false when an earlier record has the same identity.
    bool insert(const std::vector<Measurement>& records, std::size_t pos) {
        if ((used_ + 1) * 2 > slots_.size()) grow();
        const Measurement& m = records[pos];
        const std::uint64_t hash = std::hash<std::string_view>{}(m.request_id) ^
                                   (static_cast<std::uint64_t>(m.attempt) * 0x9E3779B97F4A7C15ull);
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
            Slot& slot = slots_[i];
            if (slot.pos_plus_1 == 0) {
                slot = {hash, pos + 1};
                ++used_;
                return true;
            }
            if (slot.hash == hash) {
                const Measurement& other = records[slot.pos_plus_1 - 1];
                if (other.attempt == m.attempt && other.request_id == m.request_id) return false;
            }
        }
    }

  private:
    struct Slot {
        std::uint64_t hash = 0;
        std::size_t pos_plus_1 = 0;  // 0: empty
    };

    void grow() {
        std::vector<Slot> old =
            std::exchange(slots_, std::vector<Slot>(std::max<std::size_t>(64, slots_.size() * 2)));
        const std::size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.pos_plus_1 == 0) continue;
            std::size_t i = slot.hash & mask;
            while (slots_[i].pos_plus_1 != 0) i = (i + 1) & mask;
            slots_[i] = slot;
        }
    }

    std::vector<Slot> slots_;
    std::size_t used_ = 0;
};

// Parses records one at a time into an arena that is reset per record, so memory stays at
// one record's DOM however large the body, and validates, stamps and de-duplicates them.
class RecordSink {
  public:
    RecordSink(const IngestContext& ctx, std::size_t body_size)
        : ctx_(ctx),
          arena_(arena_buffer_, sizeof arena_buffer_),
          parser_(json::storage_ptr(), parse_options(), parser_buffer_, sizeof parser_buffer_) {
        // Growing the vector moves every record again and faults in fresh pages; a record's
        // JSON is rarely under 256 bytes, and max_records bounds what an odd body can reserve.
        const std::size_t expected = std::min(ctx.limits.max_records, body_size / 256 + 1);
        out_.records.reserve(expected);
        out_.indexes.reserve(expected);
    }

    // Room for one more record, or the too-many-records error.
    Result<void> begin_record() {
        if (out_.total == ctx_.limits.max_records) {
            return Error(Errc::payload_too_large,
                         fmt::format("body: expected at most {} records, got more",
                                     ctx_.limits.max_records));
        }
        return {};
    }

    // Parses the JSON value at the start of `text`; the number of bytes it took (including
    // whitespace after it), or 0 with `error` set when it is not JSON.
    std::size_t parse(std::string_view text, boost::system::error_code& error) {
        value_.reset();  // nothing may point into the arena when it is released
        arena_.release();
        parser_.reset(json::storage_ptr(&arena_));
        const std::size_t n = parser_.write_some(text.data(), text.size(), error);
        if (error) return 0;
        // Move-construct: assigning to a value with other storage would deep-copy it.
        value_.emplace(parser_.release());
        return n;
    }

    // Validates the value parse() read as record number total().
    void add_parsed() {
        const std::size_t index = out_.total++;
        Result<Measurement> m = measurement_from_json(*value_);
        if (!m) {
            out_.errors.push_back(split_error(index, m.error().message));
            return;
        }
        if (auto bad = check_record(index, *m, ctx_)) {
            out_.errors.push_back(std::move(*bad));
            return;
        }
        stamp(*m, ctx_);
        out_.records.push_back(std::move(*m));
        if (!seen_.insert(out_.records, out_.records.size() - 1)) {
            out_.records.pop_back();
            ++out_.duplicates;
            return;
        }
        out_.indexes.push_back(index);
    }

    [[nodiscard]] std::size_t total() const noexcept { return out_.total; }
    Submission take() { return std::move(out_); }

  private:
    static json::parse_options parse_options() {
        json::parse_options o;
        o.max_depth = 16;  // records are flat; deep nesting is only ever an attack
        return o;
    }

    const IngestContext& ctx_;
    Submission out_;
    unsigned char arena_buffer_[16 * 1024];
    json::monotonic_resource arena_;
    unsigned char parser_buffer_[2048];
    json::parser parser_;
    std::optional<json::value> value_;
    SeenKeys seen_;
};

Error not_json(std::string_view body, std::size_t offset, std::size_t record,
               const boost::system::error_code& ec) {
    const Position p = position_of(body, offset);
    return Error(Errc::bad_request,
                 fmt::format("body: expected a JSON record at line {}, column {} (record {}), "
                             "got invalid JSON ({})",
                             p.line, p.column, record, ec.message()));
}

Result<void> parse_array(std::string_view body, RecordSink& sink) {
    std::size_t i = skip_json_space(body, 0);
    if (i == body.size() || body[i] != '[') {
        const Position p = position_of(body, i);
        return Error(Errc::bad_request,
                     fmt::format("body: expected a JSON array of records at line {}, column {}",
                                 p.line, p.column));
    }
    i = skip_json_space(body, i + 1);
    bool first = true;
    while (true) {
        if (i < body.size() && body[i] == ']' && first) break;
        if (auto room = sink.begin_record(); !room) return room.error();
        boost::system::error_code ec;
        const std::size_t n = sink.parse(body.substr(i), ec);
        if (ec) return not_json(body, i, sink.total(), ec);
        sink.add_parsed();
        i = skip_json_space(body, i + n);
        if (i < body.size() && body[i] == ',') {
            i = skip_json_space(body, i + 1);
            first = false;
            continue;
        }
        if (i < body.size() && body[i] == ']') break;
        const Position p = position_of(body, i);
        return Error(Errc::bad_request,
                     fmt::format("body: expected ',' or ']' after record {} at line {}, column {}",
                                 sink.total() - 1, p.line, p.column));
    }
    i = skip_json_space(body, i + 1);
    if (i != body.size()) {
        const Position p = position_of(body, i);
        return Error(Errc::bad_request,
                     fmt::format("body: expected nothing after the array's ']', got more at line "
                                 "{}, column {}",
                                 p.line, p.column));
    }
    return {};
}

Result<void> parse_ndjson(std::string_view body, RecordSink& sink) {
    std::size_t line_no = 0;
    std::size_t start = 0;
    while (start < body.size()) {
        ++line_no;
        const void* nl = std::memchr(body.data() + start, '\n', body.size() - start);
        const std::size_t end =
            nl == nullptr ? body.size()
                          : static_cast<std::size_t>(static_cast<const char*>(nl) - body.data());
        const std::string_view line = body.substr(start, end - start);
        start = end + 1;
        const std::size_t first = skip_json_space(line, 0);  // CR and blank lines included
        if (first == line.size()) continue;
        if (auto room = sink.begin_record(); !room) return room.error();
        boost::system::error_code ec;
        const std::size_t n = sink.parse(line.substr(first), ec);
        if (ec) {
            return Error(Errc::bad_request,
                         fmt::format("body: expected one JSON record per line, line {} (record "
                                     "{}) is not JSON ({})",
                                     line_no, sink.total(), ec.message()));
        }
        if (first + n != line.size()) {
            return Error(Errc::bad_request,
                         fmt::format("body: expected one JSON record per line, line {} has more "
                                     "after the record at column {}",
                                     line_no, first + n + 1));
        }
        sink.add_parsed();
    }
    return {};
}

}  // namespace

Result<std::string> gunzip(std::string_view gz, std::size_t max_output) {
    if (gz.empty()) return gzip_error("got an empty body");
    Inflater inflater;
    if (!inflater.ok()) return Error(Errc::internal, "gzip: inflateInit2 failed");
    z_stream& z = inflater.stream();

    // Inflate straight into the result, growing it up to max_output + 1 bytes: one byte past
    // the limit proves the body is too large without inflating the rest of a bomb.
    const std::size_t hard_cap = max_output == SIZE_MAX ? max_output : max_output + 1;
    const auto too_large = [max_output] {
        return Error(
            Errc::payload_too_large,
            fmt::format("body: expected at most {} bytes after gzip decoding", max_output));
    };
    std::string out;
    out.resize(std::min(hard_cap, std::max<std::size_t>(gz.size() * 4, 4096)));
    std::size_t produced = 0;
    std::size_t consumed = 0;
    while (true) {
        if (z.avail_in == 0 && consumed < gz.size()) {
            const std::size_t piece = std::min<std::size_t>(gz.size() - consumed, UINT_MAX);
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + consumed));
            z.avail_in = static_cast<uInt>(piece);
            consumed += piece;
        }
        if (produced == out.size()) {
            if (out.size() == hard_cap) return too_large();
            out.resize(std::min(hard_cap, out.size() * 2));
        }
        const std::size_t room = std::min<std::size_t>(out.size() - produced, UINT_MAX);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        z.avail_out = static_cast<uInt>(room);
        const int rc = inflate(&z, Z_NO_FLUSH);
        produced += room - z.avail_out;
        if (rc == Z_STREAM_END) {
            if (z.avail_in == 0 && consumed == gz.size()) break;
            // Another member follows (or garbage, which the next inflate() refuses).
            if (inflateReset(&z) != Z_OK) return Error(Errc::internal, "gzip: inflateReset failed");
            continue;
        }
        if (rc == Z_OK) continue;
        // No progress possible with output room left: the input ended inside a member.
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && consumed == gz.size()) {
            return gzip_error(
                fmt::format("the data ends early (truncated after {} bytes)", gz.size()));
        }
        const std::size_t at = consumed - z.avail_in;
        return gzip_error(
            fmt::format("got {} at byte {}", z.msg != nullptr ? z.msg : "corrupt data", at));
    }
    if (produced > max_output) return too_large();  // the last member ended past the limit
    out.resize(produced);
    return out;
}

std::string gzip(std::string_view data, int level) {
    assert(level >= Z_DEFAULT_COMPRESSION && level <= Z_BEST_COMPRESSION);
    assert(data.size() < (std::size_t{1} << 32));
    z_stream z{};
    // 16 + MAX_WBITS: the gzip wrapper, what gunzip() and Content-Encoding: gzip expect.
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        throw std::bad_alloc();  // the only failure with valid arguments
    }
    std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    [[maybe_unused]] const int rc = deflate(&z, Z_FINISH);  // the bound fits it in one call
    assert(rc == Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

Result<Submission> parse_submission(std::string_view body, BodyFormat format,
                                    const IngestContext& ctx) {
    auto sink =
        std::make_unique<RecordSink>(ctx, body.size());  // ~18 KiB of buffers: not on the stack
    Result<void> parsed =
        format == BodyFormat::json_array ? parse_array(body, *sink) : parse_ndjson(body, *sink);
    if (!parsed) return parsed.error();
    return sink->take();
}

boost::json::object outcome_json(std::size_t accepted, std::size_t duplicates,
                                 std::span<const RecordError> errors, std::size_t max_errors) {
    json::object o;
    o["accepted"] = accepted;
    o["duplicates"] = duplicates;
    o["rejected"] = errors.size();
    json::array list;
    const std::size_t shown = std::min(max_errors, errors.size());
    list.reserve(shown);
    for (std::size_t i = 0; i < shown; ++i) {
        list.push_back(json::object{{"index", errors[i].index},
                                    {"field", errors[i].field},
                                    {"message", errors[i].message}});
    }
    o["errors"] = std::move(list);
    if (shown < errors.size()) o["more_errors"] = errors.size() - shown;
    return o;
}

Result<void> add_outcome(SubmitOutcome& out, std::string_view answer, std::size_t first_index) {
    constexpr std::size_t kErrorsKept = 20;
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(answer, ec);
    if (ec || !v.is_object()) {
        return Error(Errc::protocol_error, "observatory answer: expected a JSON object");
    }
    const auto& o = v.get_object();
    const auto count = [&](std::string_view key) -> std::size_t {
        const auto* n = o.if_contains(key);
        return n != nullptr && n->is_int64() && n->get_int64() >= 0
                   ? static_cast<std::size_t>(n->get_int64())
                   : 0;
    };
    out.accepted += count("accepted");
    out.duplicates += count("duplicates");
    out.rejected += count("rejected");
    const auto* errors = o.if_contains("errors");
    if (errors == nullptr || !errors->is_array()) return {};
    for (const auto& e : errors->get_array()) {
        if (out.errors.size() >= kErrorsKept || !e.is_object()) break;
        const auto& eo = e.get_object();
        const auto text = [&](std::string_view key) {
            const auto* s = eo.if_contains(key);
            return s != nullptr && s->is_string() ? std::string(s->get_string()) : std::string();
        };
        const auto* index = eo.if_contains("index");
        const std::uint64_t i = index != nullptr && index->is_int64() && index->get_int64() >= 0
                                    ? static_cast<std::uint64_t>(index->get_int64())
                                    : 0;
        out.errors.push_back(
            fmt::format("record {}: {}: {}", first_index + i, text("field"), text("message")));
    }
    return {};
}

}  // namespace tokenradar::observatory
