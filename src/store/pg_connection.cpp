#include "pg_connection.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <endian.h>

#include <array>
#include <cstring>

namespace tokenradar::store {
namespace {

constexpr std::string_view kRedacted = "[redacted]";

// libpq's messages end in a newline and may carry a second, tab-indented line ("Is the server
// running on that host...?"): one line for logs.
std::string one_line(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == '\n' || c == '\t' || c == '\r') {
            if (!out.empty() && out.back() != ' ') out += ' ';
        } else {
            out += c;
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

Errc errc_of_sqlstate(std::string_view state) {
    if (state.starts_with("08") || state == "57P01" || state == "57P02" || state == "57P03") {
        return Errc::connection_error;  // connection exceptions; the server shutting down
    }
    if (state == "40001" || state == "40P01" || state == "55P03" || state == "57014" ||
        state.starts_with("53")) {
        return Errc::overloaded;  // serialization, deadlock, lock timeout, cancel, resources
    }
    return Errc::internal;
}

// Server notices ("relation ... already exists, skipping") would go to stderr by default.
void log_notice(void* /*arg*/, const char* message) {
    spdlog::debug("postgresql: {}", one_line(message));
}

}  // namespace

std::string redact_postgres_url(std::string_view url) {
    std::string out(url);
    if (const auto scheme = out.find("://"); scheme != std::string::npos) {
        const std::size_t authority = scheme + 3;
        const std::size_t end = out.find_first_of("/?", authority);
        const std::size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
        if (at != std::string::npos && at >= authority) {
            const std::size_t colon = out.find(':', authority);
            if (colon != std::string::npos && colon < at) {
                out.replace(colon + 1, at - colon - 1, kRedacted);
            }
        }
    }
    // Query parameters (URL) or key=value pairs (conninfo) named password or sslpassword.
    for (std::size_t at = 0; (at = out.find("password=", at)) != std::string::npos;) {
        const std::size_t value = at + std::strlen("password=");
        const std::size_t end = out.find_first_of("& ", value);
        out.replace(value, (end == std::string::npos ? out.size() : end) - value, kRedacted);
        at = value + kRedacted.size();
    }
    return out;
}

void PgParams::clear() noexcept {
    bytes_.clear();
    types_.clear();
    offsets_.clear();
    lengths_.clear();
    formats_.clear();
}

void PgParams::add(Oid type, const void* bytes, std::size_t n) {
    types_.push_back(type);
    offsets_.push_back(bytes_.size());
    lengths_.push_back(static_cast<int>(n));
    formats_.push_back(1);
    bytes_.append(static_cast<const char*>(bytes), n);
}

void PgParams::int8(std::int64_t v) {
    const std::uint64_t be = htobe64(static_cast<std::uint64_t>(v));
    add(kInt8Oid, &be, sizeof be);
}

void PgParams::int4(std::int32_t v) {
    const std::uint32_t be = htobe32(static_cast<std::uint32_t>(v));
    add(kInt4Oid, &be, sizeof be);
}

void PgParams::boolean(bool v) {
    const char b = v ? 1 : 0;
    add(kBoolOid, &b, 1);
}

void PgParams::text(std::string_view v) { add(kTextOid, v.data(), v.size()); }

void PgParams::bytea(std::span<const std::uint8_t> v) { add(kByteaOid, v.data(), v.size()); }

void PgParams::null(Oid type) {
    types_.push_back(type);
    offsets_.push_back(std::string::npos);
    lengths_.push_back(0);
    formats_.push_back(1);
}

const char* const* PgParams::values() {
    values_.clear();
    for (const std::size_t offset : offsets_) {
        values_.push_back(offset == std::string::npos ? nullptr : bytes_.data() + offset);
    }
    return values_.data();
}

std::int64_t pg_int8(const PGresult* r, int row, int column) noexcept {
    std::uint64_t be = 0;
    if (PQgetlength(r, row, column) == sizeof be) {
        std::memcpy(&be, PQgetvalue(r, row, column), sizeof be);
    }
    return static_cast<std::int64_t>(be64toh(be));
}

std::int32_t pg_int4(const PGresult* r, int row, int column) noexcept {
    std::uint32_t be = 0;
    if (PQgetlength(r, row, column) == sizeof be) {
        std::memcpy(&be, PQgetvalue(r, row, column), sizeof be);
    }
    return static_cast<std::int32_t>(be32toh(be));
}

bool pg_bool(const PGresult* r, int row, int column) noexcept {
    return PQgetlength(r, row, column) == 1 && PQgetvalue(r, row, column)[0] != 0;
}

std::string_view pg_text(const PGresult* r, int row, int column) noexcept {
    return {PQgetvalue(r, row, column), static_cast<std::size_t>(PQgetlength(r, row, column))};
}

std::span<const std::uint8_t> pg_bytes(const PGresult* r, int row, int column) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(PQgetvalue(r, row, column)),
            static_cast<std::size_t>(PQgetlength(r, row, column))};
}

PgConnection::PgConnection(std::string url, std::string name, Secret password)
    : url_(std::move(url)), name_(std::move(name)), password_(std::move(password)) {}

Result<PgConnection> PgConnection::parse(const std::string& url) {
    const std::string name = redact_postgres_url(url);
    if (!url.starts_with("postgresql://") && !url.starts_with("postgres://")) {
        return Error(Errc::bad_request,
                     fmt::format("{}: expected a postgresql://[user[:password]@]host[:port]/"
                                 "database URL",
                                 name));
    }
    char* message = nullptr;
    PQconninfoOption* options = PQconninfoParse(url.c_str(), &message);
    if (options == nullptr) {
        std::string reason = message != nullptr ? one_line(message) : "out of memory";
        PQfreemem(message);
        Secret(url).redact_in(reason);
        return Error(Errc::bad_request, fmt::format("{}: {}", name, reason));
    }
    Secret password;
    for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
        if (o->val != nullptr && std::strcmp(o->keyword, "password") == 0) {
            password = Secret(o->val);
        }
    }
    PQconninfoFree(options);
    return PgConnection(url, name, std::move(password));
}

Result<void> PgConnection::connect(std::chrono::milliseconds timeout) {
    conn_.reset();
    // libpq counts whole seconds and treats 1 as 2.
    const std::string seconds =
        std::to_string(std::max<std::int64_t>(2, (timeout.count() + 999) / 1000));
    // Defaults first: what the URL says overrides them (expand_dbname). Keepalives notice a
    // server that vanished without closing (a dead host), so the writer does not wait forever.
    const std::array<const char*, 8> keywords = {
        "connect_timeout",  "application_name", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "dbname",           nullptr,           nullptr};
    const std::array<const char*, 8> values = {seconds.c_str(), "tokenradar", "10",   "5", "3",
                                               url_.c_str(),    nullptr,      nullptr};
    conn_.reset(PQconnectdbParams(keywords.data(), values.data(), 1));
    if (conn_ == nullptr) return Error(Errc::connect_failed, name_ + ": cannot connect: no memory");
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
        Error e = error("cannot connect");
        e.code = make_error_code(Errc::connect_failed);
        conn_.reset();
        return e;
    }
    PQsetNoticeProcessor(conn_.get(), &log_notice, nullptr);
    return {};
}

bool PgConnection::connected() const noexcept {
    return conn_ != nullptr && PQstatus(conn_.get()) == CONNECTION_OK;
}

Error PgConnection::error(std::string_view what, const PGresult* result) const {
    const char* raw = result != nullptr ? PQresultErrorMessage(result) : nullptr;
    if ((raw == nullptr || *raw == '\0') && conn_ != nullptr) raw = PQerrorMessage(conn_.get());
    std::string reason = one_line(raw != nullptr && *raw != '\0' ? raw : "unknown error");
    password_.redact_in(reason);
    Errc code = Errc::internal;
    if (!connected()) {
        code = Errc::connection_error;
    } else if (result != nullptr) {
        if (const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE)) {
            code = errc_of_sqlstate(state);
        }
    }
    return Error(code, fmt::format("{}: {}: {}", name_, what, reason));
}

Result<PgResult> PgConnection::check(std::string_view what, PGresult* raw,
                                     ExecStatusType expect) const {
    PgResult result(raw);
    if (result == nullptr || PQresultStatus(result.get()) != expect) {
        return error(what, result.get());
    }
    return result;
}

Result<PgResult> PgConnection::exec(std::string_view what, const std::string& sql,
                                    ExecStatusType expect) {
    if (conn_ == nullptr) return Error(Errc::connection_error, name_ + ": not connected");
    return check(what, PQexec(conn_.get(), sql.c_str()), expect);
}

Result<PgResult> PgConnection::exec_params(std::string_view what, const std::string& sql,
                                           PgParams& params, ExecStatusType expect) {
    if (conn_ == nullptr) return Error(Errc::connection_error, name_ + ": not connected");
    return check(what,
                 PQexecParams(conn_.get(), sql.c_str(), params.size(), params.types(),
                              params.values(), params.lengths(), params.formats(), 1),
                 expect);
}

Result<PgResult> PgConnection::exec_prepared(std::string_view what, const std::string& name,
                                             PgParams& params, ExecStatusType expect) {
    if (conn_ == nullptr) return Error(Errc::connection_error, name_ + ": not connected");
    return check(what,
                 PQexecPrepared(conn_.get(), name.c_str(), params.size(), params.values(),
                                params.lengths(), params.formats(), 1),
                 expect);
}

Result<void> PgConnection::prepare(std::string_view what, const std::string& name,
                                   const std::string& sql, const PgParams& params) {
    if (conn_ == nullptr) return Error(Errc::connection_error, name_ + ": not connected");
    auto prepared = check(
        what, PQprepare(conn_.get(), name.c_str(), sql.c_str(), params.size(), params.types()),
        PGRES_COMMAND_OK);
    if (!prepared) return prepared.error();
    return {};
}

Result<void> PgConnection::commit(std::string_view what) {
    auto committed = exec(fmt::format("{}: commit", what), "COMMIT");
    if (!committed) return committed.error();
    if (std::string_view(PQcmdStatus(committed->get())) != "COMMIT") {
        return Error(Errc::internal, fmt::format("{}: {}: rolled back", name_, what));
    }
    return {};
}

void PgConnection::rollback(std::string_view what) {
    if (connected()) (void)exec(what, "ROLLBACK");
}

}  // namespace tokenradar::store
