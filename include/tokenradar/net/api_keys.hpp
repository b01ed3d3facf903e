#pragma once
// API keys held as SHA-256 digests (never in clear): the gateway's client keys and the
// observatory's ingest keys. Keys come as `Authorization: Bearer KEY` and are compared by
// digest in constant time.

#include <tokenradar/core/config.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::net {

struct ApiKey {
    std::string name;    // shown in logs, metrics and records instead of the key
    std::string sha256;  // lowercase hex digest of the key
};

// Lowercase hex SHA-256 of a key, as a key table's sha256 expects.
std::string hash_api_key(std::string_view key);

// Index of the key presented in an Authorization header value ("Bearer KEY"); nullopt when
// the value is not a bearer key or no key matches.
std::optional<std::size_t> find_bearer_key(std::string_view authorization,
                                           std::span<const ApiKey> keys);

// Index of the key given bare (an `x-api-key` header value); nullopt when empty or unknown.
std::optional<std::size_t> find_api_key(std::string_view key, std::span<const ApiKey> keys);

// The WWW-Authenticate value of a 401 from a key check (RFC 9110 11.6.1: a 401 must carry a
// challenge), so clients and proxies learn the scheme.
inline constexpr std::string_view kBearerChallenge = "Bearer realm=\"tokenradar\"";

// Reads an array of tables with `name` (1-64 letters, digits, '-', '_', '.') and `sha256`
// (64 hex digits) each, names distinct. Throws ConfigError naming file:line and key.
std::vector<ApiKey> load_api_keys(const std::vector<ConfigTable>& tables);

}  // namespace tokenradar::net
