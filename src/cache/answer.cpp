#include <tokenradar/cache/answer.hpp>

#include <tokenradar/core/utf8.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

namespace tokenradar::cache {
namespace {

using dialect::StreamDelta;
using Kind = StreamDelta::Kind;

constexpr std::array<char, 4> kMagic = {'T', 'R', 'C', '1'};  // format version 1
constexpr std::uint64_t kMaxCount = 1U << 24;                 // pieces, tool calls
constexpr std::uint64_t kMaxText = std::numeric_limits<std::uint32_t>::max();

bool valid_text(std::string_view s) {
    while (!s.empty()) {
        const Utf8Char c = decode_utf8(s);
        if (c.size == 0) return false;
        s.remove_prefix(c.size);
    }
    return true;
}

class Writer {
  public:
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            out_ += static_cast<char>((v & 0x7f) | 0x80);
            v >>= 7;
        }
        out_ += static_cast<char>(v);
    }
    void signed_varint(std::int64_t v) {  // zigzag
        varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
    }
    void text(std::string_view s) {
        varint(s.size());
        out_.append(s);
    }
    void optional(const std::optional<std::int64_t>& v) {
        out_ += static_cast<char>(v ? 1 : 0);
        if (v) signed_varint(*v);
    }
    std::string take() { return std::move(out_); }
    void raw(std::string_view s) { out_.append(s); }

  private:
    std::string out_;
};

class Reader {
  public:
    explicit Reader(std::string_view bytes) : bytes_(bytes) {}

    bool varint(std::string_view field, std::uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ == bytes_.size()) return fail(field, "ends inside a number");
            const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
            v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return true;
        }
        return fail(field, "a number longer than 64 bits");
    }
    bool signed_varint(std::string_view field, std::int64_t& v) {
        std::uint64_t u = 0;
        if (!varint(field, u)) return false;
        v = static_cast<std::int64_t>(u >> 1) ^ -static_cast<std::int64_t>(u & 1);
        return true;
    }
    bool count(std::string_view field, std::uint64_t limit, std::uint64_t& v) {
        if (!varint(field, v)) return false;
        if (v > limit) return fail(field, fmt::format("{} is over the limit of {}", v, limit));
        return true;
    }
    bool text(std::string_view field, std::string& s) {
        std::uint64_t size = 0;
        if (!varint(field, size)) return false;
        if (size > bytes_.size() - pos_) return fail(field, "longer than what is left");
        s.assign(bytes_.substr(pos_, size));
        pos_ += size;
        if (!valid_text(s)) return fail(field, "not UTF-8");
        return true;
    }
    bool byte(std::string_view field, std::uint8_t& b) {
        if (pos_ == bytes_.size()) return fail(field, "missing");
        b = static_cast<std::uint8_t>(bytes_[pos_++]);
        return true;
    }
    bool optional(std::string_view field, std::optional<std::int64_t>& v) {
        std::uint8_t present = 0;
        if (!byte(field, present)) return false;
        if (present > 1) return fail(field, "a presence byte other than 0 or 1");
        v.reset();
        if (present == 0) return true;
        std::int64_t value = 0;
        if (!signed_varint(field, value)) return false;
        v = value;
        return true;
    }
    bool fail(std::string_view field, std::string_view what) {
        if (!error_) {
            error_ = Error(Errc::protocol_error,
                           fmt::format("cached answer: {} at byte {}: {}", field, pos_, what));
        }
        return false;
    }
    [[nodiscard]] bool at_end() const { return pos_ == bytes_.size(); }
    [[nodiscard]] Error error() const {
        return error_.value_or(Error(Errc::protocol_error, "cached answer"));
    }

  private:
    std::string_view bytes_;
    std::size_t pos_ = 0;
    std::optional<Error> error_;
};

void write_usage(Writer& w, const dialect::Usage& u) {
    w.optional(u.prompt_tokens);
    w.optional(u.cached_prompt_tokens);
    w.optional(u.cache_creation_tokens);
    w.optional(u.output_tokens);
    w.optional(u.reasoning_tokens);
}

bool read_usage(Reader& r, dialect::Usage& u) {
    return r.optional("usage.prompt_tokens", u.prompt_tokens) &&
           r.optional("usage.cached_prompt_tokens", u.cached_prompt_tokens) &&
           r.optional("usage.cache_creation_tokens", u.cache_creation_tokens) &&
           r.optional("usage.output_tokens", u.output_tokens) &&
           r.optional("usage.reasoning_tokens", u.reasoning_tokens);
}

constexpr std::uint8_t kNoFinish = 0xff;

}  // namespace

std::size_t CachedAnswer::bytes() const noexcept {
    std::size_t n = sizeof(CachedAnswer) + pieces.capacity() * sizeof(AnswerPiece) +
                    text.capacity() + tool_heads.capacity() * sizeof(ToolCallHead) +
                    response_id.capacity() + model.capacity() + origin.provider.capacity() +
                    origin.model.capacity() + origin.endpoint.capacity() +
                    origin.region.capacity() + origin.api.capacity();
    for (const auto& h : tool_heads)
        n += h.id.capacity() + h.name.capacity() + h.signature.capacity();
    return n;
}

dialect::ChatResponse CachedAnswer::response() const {
    dialect::ChatResponse r;
    r.id = response_id;
    r.model = model;
    r.finish_reason = finish_reason;
    r.usage = usage;
    for (const auto& p : pieces) {
        const std::string_view bytes = piece_text(p);
        switch (p.kind) {
            case AnswerPiece::Kind::text:
                r.text.append(bytes);
                break;
            case AnswerPiece::Kind::reasoning:
                r.reasoning.append(bytes);
                break;
            case AnswerPiece::Kind::tool_call:
                if (r.tool_calls.size() <= p.index) r.tool_calls.resize(p.index + 1U);
                r.tool_calls[p.index].arguments.append(bytes);
                break;
        }
    }
    for (const auto& h : tool_heads) {
        const std::uint16_t index = pieces[h.piece].index;
        if (r.tool_calls.size() <= index) r.tool_calls.resize(index + 1U);
        auto& call = r.tool_calls[index];
        if (!h.id.empty()) call.id = h.id;
        if (!h.name.empty()) call.name = h.name;
        if (!h.signature.empty()) call.signature = h.signature;
    }
    return r;
}

void AnswerBuilder::add_piece(AnswerPiece::Kind kind, std::uint16_t index, std::string_view bytes,
                              std::int64_t at_ns) {
    AnswerPiece p;
    p.at_ns = at_ns;
    p.kind = kind;
    p.index = index;
    p.offset = static_cast<std::uint32_t>(answer_.text.size());
    p.size = static_cast<std::uint32_t>(bytes.size());
    answer_.text.append(bytes);
    answer_.pieces.push_back(p);
    if (answer_.first_token_ns == 0 && !bytes.empty()) answer_.first_token_ns = at_ns;
}

void AnswerBuilder::add(const StreamDelta& d, std::int64_t at_ns) {
    if (failed_) return;
    switch (d.kind) {
        case Kind::role:
            if (answer_.response_id.empty()) answer_.response_id = d.id;
            if (answer_.model.empty()) answer_.model = d.name;
            break;
        case Kind::text:
        case Kind::reasoning:
            if (!d.text.empty()) {
                add_piece(
                    d.kind == Kind::text ? AnswerPiece::Kind::text : AnswerPiece::Kind::reasoning,
                    0, d.text, at_ns);
            }
            break;
        case Kind::tool_call: {
            if (d.index < 0 || d.index > std::numeric_limits<std::uint16_t>::max()) {
                failed_ = true;  // not an answer this form can hold
                break;
            }
            const bool head = !d.id.empty() || !d.name.empty() || !d.signature.empty();
            if (!head && d.arguments.empty()) break;
            add_piece(AnswerPiece::Kind::tool_call, static_cast<std::uint16_t>(d.index),
                      d.arguments, at_ns);
            if (head) {
                answer_.tool_heads.push_back({static_cast<std::uint32_t>(answer_.pieces.size() - 1),
                                              d.id, d.name, d.signature});
            }
            break;
        }
        case Kind::usage:
            answer_.usage.merge(d.usage);
            break;
        case Kind::finish:
            answer_.finish_reason = d.finish_reason;
            break;
        case Kind::error:
            failed_ = true;
            break;
        case Kind::done:
            if (done_ns_ < 0) done_ns_ = at_ns;
            break;
        case Kind::ignorable:
            break;
    }
    if (answer_.text.size() > kMaxText / 2) failed_ = true;
}

std::optional<CachedAnswer> AnswerBuilder::take(Origin origin, std::int64_t stored_at_us,
                                                bool from_stream, std::int64_t e2e_ns) {
    if (failed_ || done_ns_ < 0) return std::nullopt;
    CachedAnswer answer = std::move(answer_);
    answer_ = {};
    answer.origin = std::move(origin);
    answer.stored_at_us = stored_at_us;
    answer.from_stream = from_stream;
    answer.e2e_ns = e2e_ns > 0 ? e2e_ns : done_ns_;
    answer.pieces.shrink_to_fit();
    answer.text.shrink_to_fit();
    return answer;
}

CachedAnswer answer_from_response(const dialect::ChatResponse& response, Origin origin,
                                  std::int64_t at_ns, std::int64_t stored_at_us) {
    AnswerBuilder builder;
    StreamDelta role = StreamDelta::make(Kind::role);
    role.id = response.id;
    role.name = response.model;
    builder.add(role, at_ns);
    if (!response.reasoning.empty()) {
        StreamDelta d = StreamDelta::make(Kind::reasoning);
        d.text = response.reasoning;
        builder.add(d, at_ns);
    }
    if (!response.text.empty()) builder.add(StreamDelta::make_text(response.text), at_ns);
    for (std::size_t i = 0; i < response.tool_calls.size(); ++i) {
        const auto& call = response.tool_calls[i];
        StreamDelta d = StreamDelta::make(Kind::tool_call);
        d.index = static_cast<int>(i);
        d.id = call.id;
        d.name = call.name;
        d.arguments = call.arguments;
        d.signature = call.signature;
        builder.add(d, at_ns);
    }
    if (response.finish_reason) {
        StreamDelta d = StreamDelta::make(Kind::finish);
        d.finish_reason = *response.finish_reason;
        builder.add(d, at_ns);
    }
    if (!response.usage.empty()) {
        StreamDelta d = StreamDelta::make(Kind::usage);
        d.usage = response.usage;
        builder.add(d, at_ns);
    }
    builder.add(StreamDelta::make(Kind::done), at_ns);
    return *builder.take(std::move(origin), stored_at_us, false, at_ns);
}

std::vector<TimedDelta> replay_deltas(const CachedAnswer& answer) {
    std::vector<TimedDelta> out;
    out.reserve(answer.pieces.size() + 4);
    const std::int64_t start_ns = answer.pieces.empty() ? answer.e2e_ns : answer.pieces[0].at_ns;
    StreamDelta role = StreamDelta::make(Kind::role);
    role.id = answer.response_id;
    role.name = answer.model;
    out.push_back({start_ns, std::move(role)});
    auto head = answer.tool_heads.begin();
    for (std::uint32_t i = 0; i < answer.pieces.size(); ++i) {
        const AnswerPiece& p = answer.pieces[i];
        StreamDelta d;
        switch (p.kind) {
            case AnswerPiece::Kind::text:
                d.kind = Kind::text;
                d.text = answer.piece_text(p);
                break;
            case AnswerPiece::Kind::reasoning:
                d.kind = Kind::reasoning;
                d.text = answer.piece_text(p);
                break;
            case AnswerPiece::Kind::tool_call:
                d.kind = Kind::tool_call;
                d.index = p.index;
                d.arguments = answer.piece_text(p);
                if (head != answer.tool_heads.end() && head->piece == i) {
                    d.id = head->id;
                    d.name = head->name;
                    d.signature = head->signature;
                    ++head;
                }
                break;
        }
        out.push_back({p.at_ns, std::move(d)});
    }
    const std::int64_t end_ns = std::max(answer.e2e_ns, out.back().at_ns);
    if (answer.finish_reason) {
        StreamDelta d = StreamDelta::make(Kind::finish);
        d.finish_reason = *answer.finish_reason;
        out.push_back({end_ns, std::move(d)});
    }
    if (!answer.usage.empty()) {
        StreamDelta d = StreamDelta::make(Kind::usage);
        d.usage = answer.usage;
        out.push_back({end_ns, std::move(d)});
    }
    out.push_back({end_ns, StreamDelta::make(Kind::done)});
    return out;
}

std::string encode(const CachedAnswer& a) {
    Writer w;
    w.raw(std::string_view(kMagic.data(), kMagic.size()));
    for (const std::string* s : {&a.origin.provider, &a.origin.model, &a.origin.endpoint,
                                 &a.origin.region, &a.origin.api, &a.response_id, &a.model}) {
        w.text(*s);
    }
    w.text(a.text);
    w.varint(a.pieces.size());
    std::int64_t previous_ns = 0;
    for (const auto& p : a.pieces) {
        // Pieces tile the text in order: only sizes are written, offsets follow from them.
        w.varint(static_cast<std::uint64_t>(p.kind));
        w.varint(p.index);
        w.varint(p.size);
        w.signed_varint(p.at_ns - previous_ns);
        previous_ns = p.at_ns;
    }
    w.varint(a.tool_heads.size());
    for (const auto& h : a.tool_heads) {
        w.varint(h.piece);
        w.text(h.id);
        w.text(h.name);
        w.text(h.signature);
    }
    w.varint(a.finish_reason ? static_cast<std::uint8_t>(*a.finish_reason) : kNoFinish);
    write_usage(w, a.usage);
    w.signed_varint(a.first_token_ns);
    w.signed_varint(a.e2e_ns);
    w.signed_varint(a.stored_at_us);
    w.varint(a.from_stream ? 1 : 0);
    return w.take();
}

Result<CachedAnswer> decode(std::string_view bytes) {
    if (bytes.size() < kMagic.size() ||
        bytes.substr(0, kMagic.size()) != std::string_view(kMagic.data(), kMagic.size())) {
        return Error(Errc::protocol_error, "cached answer: not format TRC1");
    }
    Reader r(bytes.substr(kMagic.size()));
    CachedAnswer a;
    const std::array<std::pair<std::string_view, std::string*>, 7> strings = {{
        {"origin.provider", &a.origin.provider},
        {"origin.model", &a.origin.model},
        {"origin.endpoint", &a.origin.endpoint},
        {"origin.region", &a.origin.region},
        {"origin.api", &a.origin.api},
        {"response_id", &a.response_id},
        {"model", &a.model},
    }};
    for (const auto& [field, s] : strings) {
        if (!r.text(field, *s)) return r.error();
    }
    // The pool is checked as a whole for UTF-8, and each piece must cut it at a character
    // boundary (a replayed chunk is JSON text).
    if (!r.text("text", a.text)) return r.error();
    std::uint64_t n = 0;
    if (!r.count("pieces", kMaxCount, n)) return r.error();
    a.pieces.reserve(n);
    std::int64_t at_ns = 0;
    std::uint64_t offset = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        std::uint64_t kind = 0;
        std::uint64_t index = 0;
        std::uint64_t size = 0;
        std::int64_t gap = 0;
        if (!r.count("pieces.kind", 2, kind) ||
            !r.count("pieces.index", std::numeric_limits<std::uint16_t>::max(), index) ||
            !r.count("pieces.size", a.text.size() - offset, size) ||
            !r.signed_varint("pieces.at_ns", gap)) {
            return r.error();
        }
        if (kind != static_cast<std::uint64_t>(AnswerPiece::Kind::tool_call) && index != 0) {
            r.fail("pieces.index", "set on a piece that is not a tool call");
            return r.error();
        }
        at_ns += gap;
        AnswerPiece p;
        p.kind = static_cast<AnswerPiece::Kind>(kind);
        p.index = static_cast<std::uint16_t>(index);
        p.offset = static_cast<std::uint32_t>(offset);
        p.size = static_cast<std::uint32_t>(size);
        p.at_ns = at_ns;
        if (!valid_text(a.piece_text(p))) {
            r.fail("pieces.size", "cuts a UTF-8 character");
            return r.error();
        }
        offset += size;
        a.pieces.push_back(p);
    }
    if (offset != a.text.size()) {
        r.fail("pieces", "do not cover the text");
        return r.error();
    }
    if (!r.count("tool_heads", a.pieces.size(), n)) return r.error();
    std::int64_t previous_piece = -1;
    for (std::uint64_t i = 0; i < n; ++i) {
        ToolCallHead h;
        std::uint64_t piece = 0;
        if (!r.count("tool_heads.piece", a.pieces.empty() ? 0 : a.pieces.size() - 1, piece) ||
            !r.text("tool_heads.id", h.id) || !r.text("tool_heads.name", h.name) ||
            !r.text("tool_heads.signature", h.signature)) {
            return r.error();
        }
        if (a.pieces.empty() || static_cast<std::int64_t>(piece) <= previous_piece ||
            a.pieces[piece].kind != AnswerPiece::Kind::tool_call) {
            r.fail("tool_heads.piece", "not a later tool-call piece");
            return r.error();
        }
        previous_piece = static_cast<std::int64_t>(piece);
        h.piece = static_cast<std::uint32_t>(piece);
        a.tool_heads.push_back(std::move(h));
    }
    std::uint64_t finish = 0;
    if (!r.varint("finish_reason", finish)) return r.error();
    if (finish != kNoFinish) {
        if (finish > static_cast<std::uint64_t>(dialect::FinishReason::other)) {
            r.fail("finish_reason", "not a finish reason");
            return r.error();
        }
        a.finish_reason = static_cast<dialect::FinishReason>(finish);
    }
    std::uint64_t from_stream = 0;
    if (!read_usage(r, a.usage) || !r.signed_varint("first_token_ns", a.first_token_ns) ||
        !r.signed_varint("e2e_ns", a.e2e_ns) || !r.signed_varint("stored_at_us", a.stored_at_us) ||
        !r.count("from_stream", 1, from_stream)) {
        return r.error();
    }
    a.from_stream = from_stream == 1;
    if (!r.at_end()) {
        r.fail("end", "bytes after the last field");
        return r.error();
    }
    return a;
}

}  // namespace tokenradar::cache
