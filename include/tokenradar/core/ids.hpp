#pragma once
// Identifiers: random request ids and a seedable generator for reproducible runs.

#include <cstdint>
#include <string>

namespace tokenradar {

// 32 lowercase hex characters from a per-thread generator seeded from std::random_device.
std::string new_request_id();

// The same, with a caller-chosen prefix ("chatcmpl-", "msg_").
std::string new_request_id(std::string_view prefix);

// 64-bit FNV-1a; stable across runs and platforms (used for prompt-block hashes and seeds).
// `basis` is the FNV offset basis; pass a previous hash to chain blocks. Do not pass a small
// seed here: mix seeds into the bytes instead.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t basis = 0xcbf29ce484222325ULL) noexcept;

}  // namespace tokenradar
