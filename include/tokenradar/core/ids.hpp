#pragma once
// Identifiers: time-ordered request ids and a stable hash.

#include <cstdint>
#include <string>

namespace tokenradar {

// 32 lowercase hex characters: 12 of Unix milliseconds (UUIDv7's time field), then 20 from a
// per-thread generator seeded from std::random_device (80 random bits). Later ids sort after
// earlier ones whose millisecond differs.
std::string new_request_id();

// The same, with a caller-chosen prefix ("chatcmpl-", "msg_").
std::string new_request_id(std::string_view prefix);

// 64-bit FNV-1a; stable across runs and platforms (used for prompt-block hashes and seeds).
// `basis` is the FNV offset basis; pass a previous hash to chain blocks. Do not pass a small
// seed here: mix seeds into the bytes instead.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t basis = 0xcbf29ce484222325ULL) noexcept;

}  // namespace tokenradar
