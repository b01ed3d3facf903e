#pragma once
// libpq plumbing for PostgresStore: one connection with its URL shown only redacted, binary
// statement parameters, binary result values, and errors that name the (redacted) URL.
//
// Threads: one per object, as a libpq connection.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/store/postgres_store.hpp>  // redact_postgres_url

#include <libpq-fe.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::store {

// Type OIDs of PostgreSQL's built-in types (catalog/pg_type.dat; the server headers that
// name them are not libpq's).
inline constexpr Oid kBoolOid = 16;
inline constexpr Oid kByteaOid = 17;
inline constexpr Oid kInt8Oid = 20;
inline constexpr Oid kInt4Oid = 23;
inline constexpr Oid kTextOid = 25;

struct PgResultDeleter {
    void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

// One statement's parameters, every one in binary format (integers big-endian, text and bytea
// as their bytes): no escaping, no number printing. Reused from statement to statement.
class PgParams {
  public:
    void clear() noexcept;
    void int8(std::int64_t v);
    void int4(std::int32_t v);
    void boolean(bool v);
    void text(std::string_view v);
    void bytea(std::span<const std::uint8_t> v);
    void null(Oid type);

    [[nodiscard]] int size() const noexcept { return static_cast<int>(types_.size()); }
    [[nodiscard]] const Oid* types() const noexcept { return types_.data(); }
    // Pointers into this object's buffer: valid until the next change.
    const char* const* values();
    [[nodiscard]] const int* lengths() const noexcept { return lengths_.data(); }
    [[nodiscard]] const int* formats() const noexcept { return formats_.data(); }

  private:
    void add(Oid type, const void* bytes, std::size_t n);

    std::string bytes_;
    std::vector<Oid> types_;
    std::vector<std::size_t> offsets_;  // into bytes_; npos for NULL
    std::vector<int> lengths_;
    std::vector<int> formats_;
    std::vector<const char*> values_;
};

// Values of a binary-format result (resultFormat 1), by row and column. The caller checks
// the column types (the store's own queries only).
std::int64_t pg_int8(const PGresult* r, int row, int column) noexcept;
std::int32_t pg_int4(const PGresult* r, int row, int column) noexcept;
bool pg_bool(const PGresult* r, int row, int column) noexcept;
// Valid while `r` lives.
std::string_view pg_text(const PGresult* r, int row, int column) noexcept;
std::span<const std::uint8_t> pg_bytes(const PGresult* r, int row, int column) noexcept;

class PgConnection {
  public:
    // Checks `url` with libpq's own parser; Errc::bad_request naming the redacted URL when it
    // is not a postgresql:// or postgres:// URL libpq accepts. Does not connect.
    static Result<PgConnection> parse(const std::string& url);

    PgConnection(PgConnection&&) noexcept = default;
    PgConnection& operator=(PgConnection&&) noexcept = default;
    ~PgConnection() = default;

    // Opens a new connection (closing any previous one), waiting at most `timeout` per
    // address. Errc::connect_failed naming the redacted URL and libpq's reason.
    Result<void> connect(std::chrono::milliseconds timeout);
    void close() noexcept { conn_.reset(); }
    // Open and not broken: false once libpq saw the server go away.
    [[nodiscard]] bool connected() const noexcept;
    [[nodiscard]] PGconn* get() const noexcept { return conn_.get(); }
    // The URL with its password redacted: how errors and logs name the database.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }

    // "<name>: <what>: <libpq's message>" (one line, passwords redacted) with a code by the
    // error's SQLSTATE: Errc::connection_error when the connection is gone, Errc::overloaded
    // for lock and deadlock timeouts, serialization failures and a server out of resources,
    // Errc::internal otherwise. `result` is the failed statement's, if any.
    [[nodiscard]] Error error(std::string_view what, const PGresult* result = nullptr) const;

    // Runs `sql` (several statements separated by ';' allowed; the last one's result) and
    // checks that it ended with `expect`.
    Result<PgResult> exec(std::string_view what, const std::string& sql,
                          ExecStatusType expect = PGRES_COMMAND_OK);
    // One statement with binary parameters, results in binary format.
    Result<PgResult> exec_params(std::string_view what, const std::string& sql, PgParams& params,
                                 ExecStatusType expect);
    // A statement prepared by prepare() on this connection.
    Result<PgResult> exec_prepared(std::string_view what, const std::string& name, PgParams& params,
                                   ExecStatusType expect);
    Result<void> prepare(std::string_view what, const std::string& name, const std::string& sql,
                         const PgParams& params);
    // COMMIT of the open transaction. One that failed earlier answers ROLLBACK without an
    // error: Errc::internal ("rolled back") then.
    Result<void> commit(std::string_view what);
    // ROLLBACK of the open transaction, if still connected (errors are moot: the transaction
    // is over either way).
    void rollback(std::string_view what);

  private:
    struct ConnDeleter {
        void operator()(PGconn* c) const noexcept { PQfinish(c); }
    };
    PgConnection(std::string url, std::string name, Secret password);
    Result<PgResult> check(std::string_view what, PGresult* raw, ExecStatusType expect) const;

    std::string url_;
    std::string name_;
    Secret password_;  // redacted from every message, in case one quotes it
    std::unique_ptr<PGconn, ConnDeleter> conn_;
};

}  // namespace tokenradar::store
