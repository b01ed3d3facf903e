#include "sqlite_migrations.hpp"

#include "packed_record.hpp"
#include "sqlite_util.hpp"

#include <fmt/format.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::store {
namespace {

Error too_new(std::string_view path, std::int64_t found, int known) {
    return Error(Errc::unsupported,
                 fmt::format("{}: database schema version {} is newer than this tokenradar "
                             "(it knows versions up to {}): use a newer tokenradar",
                             path, found, known));
}

// tokenradar_pack(): see add_migration_functions. A C callback: nothing may throw out of it.
void pack_function(sqlite3_context* context, int argc, sqlite3_value** argv) noexcept {
    if (argc != static_cast<int>(kPackedFields.size())) {
        sqlite3_result_error(context, "tokenradar_pack: wrong number of arguments", -1);
        return;
    }
    int i = 0;
    const auto integer = [&] { return sqlite3_value_int64(argv[i++]); };
    const auto optional = [&]() -> std::optional<std::int64_t> {
        sqlite3_value* v = argv[i++];
        if (sqlite3_value_type(v) == SQLITE_NULL) return std::nullopt;
        return sqlite3_value_int64(v);
    };
    const auto text = [&] {
        sqlite3_value* v = argv[i++];
        const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
        return p == nullptr ? std::string_view()
                            : std::string_view(p, static_cast<std::size_t>(sqlite3_value_bytes(v)));
    };
    try {
        Measurement m;
        m.response_id = text();
        m.received_us = optional().value_or(0);
        m.http_status = static_cast<int>(integer());
        m.t.send = 0;  // version 2 stored stamps relative to send already
        m.t.sched = integer();
        for (auto* stamp : {&m.t.headers, &m.t.first_chunk, &m.t.first_token, &m.t.first_answer,
                            &m.t.last_token, &m.t.done}) {
            *stamp = optional();
        }
        m.connect_ns = integer();
        m.tls_ns = integer();
        for (auto* tokens : {&m.prompt_tokens, &m.cached_prompt_tokens, &m.cache_creation_tokens,
                             &m.output_tokens, &m.reasoning_tokens}) {
            *tokens = optional();
        }
        m.token_source = text() == "estimate" ? TokenSource::estimate : TokenSource::usage;
        m.output_events = integer();
        for (auto* ns : {&m.chunk_gap_p50_ns, &m.chunk_gap_p99_ns, &m.chunk_gap_max_ns,
                         &m.overhead_ns, &m.relay_p50_ns, &m.relay_max_ns}) {
            *ns = optional();
        }
        std::vector<std::uint8_t> buffer;
        const auto packed = pack_record(m, buffer);
        sqlite3_result_blob(context, packed.data(), static_cast<int>(packed.size()),
                            SQLITE_TRANSIENT);
    } catch (const std::exception&) {
        sqlite3_result_error_nomem(context);
    }
}

}  // namespace

Result<void> add_migration_functions(sqlite3* db, std::string_view path) {
    // DIRECTONLY: for the migration's own statements, never from a view or trigger of the file.
    if (sqlite3_create_function_v2(db, "tokenradar_pack", static_cast<int>(kPackedFields.size()),
                                   SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY, nullptr,
                                   &pack_function, nullptr, nullptr, nullptr) != SQLITE_OK) {
        return sqlite_error(path, db, "register tokenradar_pack");
    }
    return {};
}

Result<int> migrate(sqlite3* db, std::string_view path, std::span<const Migration> migrations) {
    const int latest = migrations.empty() ? 0 : migrations.back().version;
    auto version = query_integer(db, path, "PRAGMA user_version");
    if (!version) return version.error();
    if (*version > latest) return too_new(path, *version, latest);

    for (const Migration& m : migrations) {
        if (m.version <= *version) continue;
        // IMMEDIATE takes the write lock now (waiting up to busy_timeout), so the version read
        // below cannot change before COMMIT.
        if (auto begun = exec(db, path, "BEGIN IMMEDIATE", "migration"); !begun)
            return begun.error();
        const auto rollback = [&] { sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr); };
        version = query_integer(db, path, "PRAGMA user_version");
        if (!version) {
            rollback();
            return version.error();
        }
        if (*version > latest) {
            rollback();
            return too_new(path, *version, latest);
        }
        if (m.version <= *version) {  // another process applied it meanwhile
            rollback();
            continue;
        }
        const std::string what = fmt::format("migration {}", m.name);
        const std::string sql = fmt::format("{}\n;PRAGMA user_version = {};", m.sql, m.version);
        if (auto applied = exec(db, path, sql.c_str(), what); !applied) {
            rollback();
            return applied.error();
        }
        if (auto committed = exec(db, path, "COMMIT", what); !committed) {
            rollback();
            return committed.error();
        }
        *version = m.version;
    }
    return static_cast<int>(*version);
}

}  // namespace tokenradar::store
