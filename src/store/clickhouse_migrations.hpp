#pragma once
// ClickHouse's numbered schema migrations (migrations_ch/NNNN_name.sql, embedded at build
// time). Applied versions are rows of `tokenradar_migrations`.

#include "migration.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace tokenradar::store {

// The migrations compiled into this binary (generated migrations_ch.cpp).
std::span<const Migration> builtin_ch_migrations() noexcept;

// The statements of a migration: each ends with ';' at the end of a line; lines starting with
// "--" are comments. (ClickHouse's HTTP interface runs one statement per request.)
std::vector<std::string_view> split_statements(std::string_view sql);

}  // namespace tokenradar::store
