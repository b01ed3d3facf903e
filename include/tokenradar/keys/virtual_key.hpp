#pragma once
// Virtual client keys (README "Keys, limits and budgets"): keys created, rotated and revoked at
// run time through the admin API, each with the models it may use, its request and token rates
// and a token budget per day or month. Only a key's SHA-256 digest is ever stored; the key
// itself is shown once, when it is created or rotated.

#include <tokenradar/core/error.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::keys {

enum class BudgetPeriod : std::uint8_t { none, day, month };

std::string_view to_string(BudgetPeriod p) noexcept;  // "", "day", "month"
// "day" or "month"; Errc::bad_request otherwise.
Result<BudgetPeriod> parse_budget_period(std::string_view text);

// What an admin asks for when creating a key (parsed from the admin API's body: key_spec.hpp).
struct KeySpec {
    std::string name;                 // the dashboard's and metrics' label (a simple name)
    std::vector<std::string> models;  // virtual models it may use; empty = all
    std::int64_t rpm = 0;             // requests per minute; 0 = no limit
    std::int64_t tpm = 0;             // tokens (prompt + output) per minute; 0 = no limit
    std::int64_t budget_tokens = 0;   // tokens per budget period; 0 = no budget
    BudgetPeriod budget_period = BudgetPeriod::none;  // none exactly when budget_tokens is 0

    friend bool operator==(const KeySpec&, const KeySpec&) = default;
};

struct VirtualKey {
    std::string id;      // "key_" + 16 hex digits; stays the same across rotations
    std::string sha256;  // lowercase hex digest of the current key
    KeySpec spec;
    std::int64_t created_us = 0;  // wall clock, UTC microseconds
    std::int64_t rotated_us = 0;  // the last rotation; 0 = never
    std::int64_t revoked_us = 0;  // 0 = active

    [[nodiscard]] bool active() const noexcept { return revoked_us == 0; }
    friend bool operator==(const VirtualKey&, const VirtualKey&) = default;
};

// Requests and tokens of one key in one period (the key's budget period, or the UTC day for
// a key without a budget), summed over every node that shares the registry.
struct KeyUsage {
    std::string key_id;
    std::int64_t period_start_us = 0;
    std::int64_t requests = 0;
    std::int64_t tokens = 0;

    friend bool operator==(const KeyUsage&, const KeyUsage&) = default;
};

// One admin action. Never holds a key or its digest.
struct AuditEntry {
    std::int64_t ts_us = 0;
    std::string actor;   // the admin key's name
    std::string action;  // "create", "rotate", "revoke"
    std::string key_id;
    std::string detail;  // JSON: what was set (name, models, limits)

    friend bool operator==(const AuditEntry&, const AuditEntry&) = default;
};

// The period a key's usage is counted in: its budget period, a UTC day without one.
BudgetPeriod usage_period(const KeySpec& spec) noexcept;
// Start and end (exclusive) of the UTC day or month holding `now_us`.
std::int64_t period_start_us(BudgetPeriod period, std::int64_t now_us) noexcept;
std::int64_t period_end_us(BudgetPeriod period, std::int64_t now_us) noexcept;

// `models` as every registry stores them: a JSON array of names, and back (anything that is
// not an array of strings reads as no names: all models).
std::string models_to_json(const std::vector<std::string>& models);
std::vector<std::string> models_from_json(std::string_view text);
// What every registry answers for a second active key of one name (Errc::bad_request).
Error name_taken(std::string_view name);

// A new key: "trk_" and 43 base64url characters (256 random bits from OpenSSL's CSPRNG).
std::string new_secret();
// A new key id: "key_" and 16 hex digits (64 random bits).
std::string new_key_id();
// Whether `id` looks like new_key_id()'s output (the admin API's path check).
bool is_key_id(std::string_view id) noexcept;

}  // namespace tokenradar::keys
