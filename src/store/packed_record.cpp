#include "packed_record.hpp"

#include <fmt/format.h>

#include <climits>
#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <optional>

namespace tokenradar::store {
namespace {

constexpr std::size_t kFieldCount = kPackedFields.size();
constexpr std::size_t kLengthBytes = (kFieldCount + 1) / 2;
constexpr std::size_t kHeaderBytes = 1 + kLengthBytes;
// A value is written with one 8-byte store and the write position moved by its length.
static_assert(std::endian::native == std::endian::little, "pack_record stores values as they lie");

// Fields that may be absent (std::optional in Measurement): a present 0 is one zero byte. The
// others are 0 when absent, and a 0 is written as no bytes.
constexpr std::uint32_t kOptionalFields = [] {
    std::uint32_t bits = 0;
    for (std::size_t i = 4; i <= 9; ++i) bits |= 1U << i;    // headers_ns .. done_ns
    for (std::size_t i = 12; i <= 16; ++i) bits |= 1U << i;  // prompt_tokens .. reasoning_tokens
    for (std::size_t i = 19; i <= 24; ++i) bits |= 1U << i;  // chunk_gap_p50_ns .. relay_max_ns
    return bits;
}();
constexpr bool optional_field(std::size_t i) noexcept { return ((kOptionalFields >> i) & 1U) != 0; }
static_assert(kPackedFields[4] == "headers_ns" && kPackedFields[9] == "done_ns");
static_assert(kPackedFields[12] == "prompt_tokens" && kPackedFields[16] == "reasoning_tokens");
static_assert(kPackedFields[19] == "chunk_gap_p50_ns" && kPackedFields[24] == "relay_max_ns");

constexpr std::uint64_t zigzag(std::int64_t v) noexcept {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t u) noexcept {
    return static_cast<std::int64_t>((u >> 1) ^ (0 - (u & 1)));
}
static_assert(zigzag(0) == 0 && zigzag(-1) == 1 && zigzag(1) == 2 &&
              zigzag(INT64_MIN) == UINT64_MAX);
static_assert(unzigzag(zigzag(INT64_MIN)) == INT64_MIN && unzigzag(zigzag(INT64_MAX)) == INT64_MAX);

// a - b, wrapping: stamps that did not come from one steady clock must not overflow.
constexpr std::int64_t minus(std::int64_t a, std::int64_t b) noexcept {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

// The index of a field in kPackedFields, at compile time.
consteval std::size_t field(std::string_view name) {
    for (std::size_t i = 0; i < kFieldCount; ++i) {
        if (kPackedFields[i] == name) return i;
    }
    throw "no such packed field";  // not a constant expression: a compile error
}

// Writes fields into a buffer with room for every one at 8 bytes, then the header. The field
// index is a template argument, so each length lands in the header with constant shifts.
class Packer {
  public:
    explicit Packer(std::uint8_t* out) noexcept : out_(out), at_(out + kHeaderBytes) {}
    template <std::size_t I>
    void plain(std::int64_t v) noexcept {
        static_assert(!optional_field(I));
        put<I>(zigzag(v), 0);
    }
    template <std::size_t I>
    void optional(const std::optional<std::int64_t>& v) noexcept {
        static_assert(optional_field(I));
        if (v) put<I>(zigzag(*v), 1);
    }
    // A steady-clock stamp, relative to send.
    template <std::size_t I>
    void stamp(const std::optional<std::int64_t>& v, std::int64_t send) noexcept {
        static_assert(optional_field(I));
        if (v) put<I>(zigzag(minus(*v, send)), 1);
    }
    // Appends `tail` after the values and writes the header; returns the size.
    std::size_t finish(std::string_view tail) noexcept {
        if (!tail.empty()) std::memcpy(at_, tail.data(), tail.size());
        at_ += tail.size();
        out_[0] = kPackedVersion;
        std::memcpy(out_ + 1, &low_, sizeof low_);
        std::memcpy(out_ + 1 + sizeof low_, &high_, kLengthBytes - sizeof low_);
        return static_cast<std::size_t>(at_ - out_);
    }

  private:
    template <std::size_t I>
    void put(std::uint64_t z, int min_bytes) noexcept {
        const int n = std::max((static_cast<int>(std::bit_width(z)) + 7) / 8, min_bytes);
        std::memcpy(at_, &z, sizeof z);  // the next value overwrites the bytes past n
        at_ += n;
        if constexpr (I < 16) {
            low_ |= static_cast<std::uint64_t>(n) << (4 * I);
        } else {
            high_ |= static_cast<std::uint64_t>(n) << (4 * (I - 16));
        }
    }

    std::uint8_t* out_;
    std::uint8_t* at_;
    std::uint64_t low_ = 0;   // the lengths of fields 0-15, a nibble each
    std::uint64_t high_ = 0;  // and of fields 16-24
};
static_assert(kFieldCount <= 32 && kLengthBytes > sizeof(std::uint64_t));

Error corrupt(std::string message) {
    return Error(Errc::internal, "packed fields: " + std::move(message));
}

}  // namespace

std::span<const std::uint8_t> pack_record(const Measurement& m, std::vector<std::uint8_t>& buffer) {
    // Room for every value at 8 bytes: Packer stores each with one 8-byte write.
    const std::size_t room =
        kHeaderBytes + kFieldCount * sizeof(std::uint64_t) + m.response_id.size();
    if (buffer.size() < room) buffer.resize(room);
    Packer p(buffer.data());
    const std::int64_t send = m.t.send;
    p.plain<field("response_id_bytes")>(static_cast<std::int64_t>(m.response_id.size()));
    p.plain<field("received_us")>(m.received_us);
    p.plain<field("http_status")>(m.http_status);
    p.plain<field("sched_offset_ns")>(minus(m.t.sched, send));
    p.stamp<field("headers_ns")>(m.t.headers, send);
    p.stamp<field("first_chunk_ns")>(m.t.first_chunk, send);
    p.stamp<field("first_token_ns")>(m.t.first_token, send);
    p.stamp<field("first_answer_ns")>(m.t.first_answer, send);
    p.stamp<field("last_token_ns")>(m.t.last_token, send);
    p.stamp<field("done_ns")>(m.t.done, send);
    p.plain<field("connect_ns")>(m.connect_ns);
    p.plain<field("tls_ns")>(m.tls_ns);
    p.optional<field("prompt_tokens")>(m.prompt_tokens);
    p.optional<field("cached_prompt_tokens")>(m.cached_prompt_tokens);
    p.optional<field("cache_creation_tokens")>(m.cache_creation_tokens);
    p.optional<field("output_tokens")>(m.output_tokens);
    p.optional<field("reasoning_tokens")>(m.reasoning_tokens);
    p.plain<field("token_source")>(m.token_source == TokenSource::estimate ? 1 : 0);
    p.plain<field("output_events")>(m.output_events);
    p.optional<field("chunk_gap_p50_ns")>(m.chunk_gap_p50_ns);
    p.optional<field("chunk_gap_p99_ns")>(m.chunk_gap_p99_ns);
    p.optional<field("chunk_gap_max_ns")>(m.chunk_gap_max_ns);
    p.optional<field("overhead_ns")>(m.overhead_ns);
    p.optional<field("relay_p50_ns")>(m.relay_p50_ns);
    p.optional<field("relay_max_ns")>(m.relay_max_ns);
    return {buffer.data(), p.finish(m.response_id)};
}

Result<void> unpack_record(std::span<const std::uint8_t> bytes, Measurement& m) {
    if (bytes.size() < kHeaderBytes) {
        return corrupt(
            fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(), kHeaderBytes));
    }
    if (bytes[0] != kPackedVersion) {
        return corrupt(fmt::format("format version {} is unknown (this tokenradar reads {})",
                                   bytes[0], kPackedVersion));
    }
    if ((bytes[kLengthBytes] >> 4) != 0) return corrupt("the unused last length is not 0");

    // Every value, checked for its length and shortest form; 0 when absent.
    std::array<std::uint64_t, kFieldCount> values{};
    std::uint32_t present = 0;
    std::size_t at = kHeaderBytes;
    for (std::size_t i = 0; i < kFieldCount; ++i) {
        const std::size_t n = (bytes[1 + i / 2] >> (4 * (i % 2))) & 0xFU;
        if (n == 0) continue;
        if (n > sizeof(std::uint64_t)) {
            return corrupt(
                fmt::format("field {} ({}) is {} bytes long, more than 8", i, kPackedFields[i], n));
        }
        if (bytes.size() - at < n) {
            return corrupt(fmt::format("field {} ({}) ends past the {} bytes", i, kPackedFields[i],
                                       bytes.size()));
        }
        std::memcpy(&values[i], bytes.data() + at, n);
        // The top byte is never 0, but for an optional field's present 0 (one zero byte).
        if (bytes[at + n - 1] == 0 && !(n == 1 && optional_field(i))) {
            return corrupt(
                fmt::format("field {} ({}) is not in its shortest form", i, kPackedFields[i]));
        }
        present |= 1U << i;
        at += n;
    }
    const std::size_t rest = bytes.size() - at;
    if (values[field("response_id_bytes")] != zigzag(static_cast<std::int64_t>(rest))) {
        return corrupt(fmt::format("{} bytes after the values, but the response id has {}", rest,
                                   unzigzag(values[field("response_id_bytes")])));
    }
    const std::int64_t http_status = unzigzag(values[field("http_status")]);
    if (http_status < INT_MIN || http_status > INT_MAX) {
        return corrupt(fmt::format("http_status {} is not an int", http_status));
    }
    if (const std::uint64_t source = values[field("token_source")];
        source > zigzag(1) || source == zigzag(-1)) {
        return corrupt(fmt::format("token_source {} is not 0 or 1", unzigzag(source)));
    }

    std::size_t next = field("received_us");  // the response id's length was read above
    const auto plain = [&] { return unzigzag(values[next++]); };
    const auto optional = [&]() -> std::optional<std::int64_t> {
        const std::size_t i = next++;
        if ((present & (1U << i)) == 0) return std::nullopt;
        return unzigzag(values[i]);
    };
    m.response_id.assign(reinterpret_cast<const char*>(bytes.data() + at), rest);
    m.received_us = plain();
    m.http_status = static_cast<int>(plain());
    m.t.send = 0;
    m.t.sched = plain();
    for (auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                        &m.t.last_token, &m.t.done}) {
        *stamp = optional();
    }
    m.connect_ns = plain();
    m.tls_ns = plain();
    for (auto* tokens : {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                         &m.output_tokens, &m.reasoning_tokens}) {
        *tokens = optional();
    }
    m.token_source = plain() == 1 ? TokenSource::estimate : TokenSource::usage;
    m.output_events = plain();
    for (auto* ns : {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns, &m.overhead_ns,
                     &m.relay_p50_ns, &m.relay_max_ns}) {
        *ns = optional();
    }
    assert(next == kFieldCount);
    return {};
}

}  // namespace tokenradar::store
