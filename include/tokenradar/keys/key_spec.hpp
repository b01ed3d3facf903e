#pragma once
// The admin API's body for a new key (POST /admin/v1/keys), parsed strictly: a JSON object of
// known fields only, each of its type and range, so a typo is a 400 naming the field rather
// than a key without the limit its admin meant. Sans-IO; fuzzed by fuzz_key_spec.
//
//   {"name": "team-a", "models": ["fast"], "rpm": 60, "tpm": 100000,
//    "budget_tokens": 5000000, "budget_period": "month"}
//
// `name` is required (1-64 letters, digits, '-', '_', '.'); `models` (at most kMaxModels
// names, each 1-128 bytes, distinct; empty or absent = every model), `rpm`, `tpm`,
// `budget_tokens` (integers 0 to kMaxLimit; 0 = none) and `budget_period` ("day" or
// "month", required with a budget and refused without one) are optional.

#include <tokenradar/core/error.hpp>
#include <tokenradar/keys/virtual_key.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tokenradar::keys {

inline constexpr std::size_t kMaxModels = 256;
inline constexpr std::int64_t kMaxLimit = 1'000'000'000'000;  // 10^12

// Errc::bad_request with a message naming the field and what it expects.
Result<KeySpec> parse_key_spec(std::string_view body);

// The spec as the JSON object parse_key_spec reads back (the audit log's detail, the CLI's
// request): every field, budget_period only with a budget.
std::string key_spec_json(const KeySpec& spec);

}  // namespace tokenradar::keys
