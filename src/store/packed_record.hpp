#pragma once
// The `packed` column of `measurements`: every field of a record that SQL does not filter or
// group by (timings, token counts, the response id...) in one BLOB, so a row is a few columns
// instead of fifty. SQLite's cost of an INSERT grows with its columns (a bind and several
// VDBE opcodes each), not with the bytes of a BLOB: bench/README.md "The measurement store".
//
// Format version 1 (the first byte), then 13 bytes of 4-bit lengths, one per field of
// kPackedFields in that order (low nibble first; the 26th nibble is 0), then each field's value
// in as many little-endian bytes as its length says (0-8) of its zigzag form (a signed value
// v as 2v, or -2v - 1 when negative, so small magnitudes are short either way), then the
// response id's bytes (as many as the field `response_id_bytes` says). A length of 0 means
// absent: an optional field that is nullopt, or a plain field that is 0. A present 0 of an
// optional field is one zero byte. Every value is written in as few bytes as it needs, so one
// record has exactly one encoding and `unpack_record` refuses any other.
//
// To change the layout, add a format version: the decoder keeps reading the old ones, so no
// migration has to rewrite rows.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tokenradar::store {

inline constexpr std::uint8_t kPackedVersion = 1;

// The fields of format 1, in order (names as the JSONL form and metrics.md spell them).
inline constexpr std::array<std::string_view, 25> kPackedFields = {
    "response_id_bytes", "received_us",          "http_status",
    "sched_offset_ns",   "headers_ns",           "first_chunk_ns",
    "first_token_ns",    "first_answer_ns",      "last_token_ns",
    "done_ns",           "connect_ns",           "tls_ns",
    "prompt_tokens",     "cached_prompt_tokens", "cache_creation_tokens",
    "output_tokens",     "reasoning_tokens",     "token_source",
    "output_events",     "chunk_gap_p50_ns",     "chunk_gap_p99_ns",
    "chunk_gap_max_ns",  "overhead_ns",          "relay_p50_ns",
    "relay_max_ns",
};

// Writes the packed fields of `m` into `buffer` and returns them: the buffer's first bytes.
// The buffer only grows (a reused one allocates and clears nothing once it is large enough);
// the bytes are valid until its next use. Steady-clock stamps are written relative to
// m.t.send; token_source as 0 (usage) or 1 (estimate).
std::span<const std::uint8_t> pack_record(const Measurement& m, std::vector<std::uint8_t>& buffer);

// Reads what pack_record wrote into `m`: the packed fields, with m.t.send = 0 and the other
// stamps relative to it, as the store gives records back. Fields that are columns (ts_us,
// labels, status, request_id, client_id, attempt) are left as they are. Bytes that
// pack_record cannot have written (another version, a wrong length, a non-minimal value,
// trailing bytes) are an Errc::internal error saying what is wrong; `m` is then partly
// written. Never reads outside `bytes`.
Result<void> unpack_record(std::span<const std::uint8_t> bytes, Measurement& m);

}  // namespace tokenradar::store
