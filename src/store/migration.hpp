#pragma once
// A numbered schema migration as embedded into the library at build time
// (embed_migrations.cmake): SQLite's (migrations/, sqlite_migrations.hpp) and PostgreSQL's
// (migrations_pg/, pg_migrations.hpp) are each a list of these, numbered 1, 2, 3, ...

#include <string_view>

namespace tokenradar::store {

struct Migration {
    int version = 0;  // 1, 2, 3, ... in order
    std::string_view name;
    std::string_view sql;
};

}  // namespace tokenradar::store
