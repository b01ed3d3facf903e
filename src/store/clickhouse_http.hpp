#pragma once
// A small blocking HTTP/1.1 client for ClickHouse's HTTP interface: one keep-alive connection
// (POSIX socket, poll() for every wait, so each one has a deadline; OpenSSL over it when the
// URL says secure=true: the certificate checked against the system's CAs or ca_file, and for
// the URL's host), requests written by hand, answers read by Beast's parser into a callback. The
// store calls it from its writer thread or a command-line tool, never from an I/O thread.
//
// Every query goes with wait_end_of_query=1: the server runs it to its end before answering,
// so its status is the query's (without it an exception in the middle of a streamed answer
// arrives as text appended to a 200's body).

#include "clickhouse_wire.hpp"

#include <tokenradar/core/error.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace tokenradar::store {

// Body bytes of a 200 answer as they come; an error stops the read (the connection is then
// closed) and is returned by the call.
using AnswerSink = std::function<Result<void>(std::string_view bytes)>;

// One HTTP/1.1 answer read from bytes as they arrive (sans-IO: ClickHouseHttp feeds it from
// its socket, the fuzzer from its input): Beast's parser, the header at most 64 KiB, the body
// of a 200 passed to the sink piece by piece (never kept), that of any other status kept up to
// kMaxErrorBody bytes for its message.
class AnswerReader {
  public:
    static constexpr std::size_t kMaxErrorBody = 64U << 10U;

    explicit AnswerReader(const AnswerSink& sink);
    ~AnswerReader();
    AnswerReader(const AnswerReader&) = delete;
    AnswerReader& operator=(const AnswerReader&) = delete;

    // Parses `bytes` (all of them, or up to the answer's end: how many is returned). Errors:
    // Errc::protocol_error "not an HTTP answer: ..." (its detail), or the sink's own.
    Result<std::size_t> feed(std::string_view bytes);
    // The peer closed: the end of an answer without a length, else Errc::connection_error.
    Result<void> feed_eof();
    [[nodiscard]] bool done() const noexcept;
    [[nodiscard]] unsigned status() const noexcept;  // 0 before the header
    [[nodiscard]] bool keep_alive() const noexcept;
    [[nodiscard]] const std::string& error_text() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class ClickHouseHttp {
  public:
    using Sink = AnswerSink;

    ClickHouseHttp(ClickHouseUrl url, std::string name, std::chrono::milliseconds connect_timeout,
                   std::chrono::milliseconds io_timeout);
    ~ClickHouseHttp();
    ClickHouseHttp(const ClickHouseHttp&) = delete;
    ClickHouseHttp& operator=(const ClickHouseHttp&) = delete;

    // Runs `sql` (sent as the request body), its answer streamed to `sink`. Errors start with
    // `what`: Errc::connect_failed, Errc::connection_error (reset, timeout, truncated
    // answer), Errc::protocol_error (not HTTP), Errc::internal (the server's exception, its
    // message: clickhouse_error_message).
    Result<void> run(std::string_view what, std::string_view sql, const Sink& sink);
    // Runs `sql`; its answer (at most `limit` bytes, else Errc::payload_too_large).
    Result<std::string> text(std::string_view what, std::string_view sql,
                             std::size_t limit = 1U << 20U);
    // Runs `sql` with one external table (ClickHouse's "external data": a multipart body)
    // named `table`, of `structure` ("c String, r String"), holding `rows` in RowBinary: how
    // a large IN set travels without the 256 KiB query size limit.
    Result<void> run_with_table(std::string_view what, std::string_view sql, std::string_view table,
                                std::string_view structure, std::string_view rows,
                                const Sink& sink);
    // An INSERT: `statement` ("INSERT INTO t (a, b) FORMAT RowBinary") in the URL, `data` as
    // the body. The server parses the whole body before it writes a block of it.
    Result<void> insert(std::string_view what, std::string_view statement, std::string_view data);

    // The URL with its password redacted (every error starts with it).
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] const ClickHouseUrl& url() const noexcept { return url_; }

  private:
    // POSTs `body` with `params` ("&name=value..." after the database) and a Content-Type
    // when not empty.
    Result<void> request(std::string_view what, std::string_view params,
                         std::string_view content_type, std::string_view body, const Sink& sink);
    Result<void> exchange(std::string_view what, const std::string& head, std::string_view body,
                          const Sink& sink, bool& answered);
    Result<void> connect(std::string_view what);
    // The TLS handshake on the connected socket (secure URLs), within the connect deadline.
    Result<void> start_tls(std::string_view what, std::chrono::steady_clock::time_point deadline);
    // One send of `out` / one recv into `in`, through TLS when it is on: the bytes moved (0:
    // the peer closed, recv only), or -1 with `wait` the poll() events to wait for before
    // trying again, or -1 with `wait` 0 and `error` saying why.
    long transfer(std::string_view out, short& wait, std::string& error);
    long transfer(std::span<char> in, short& wait, std::string& error);
    // Both of them: from `out` when sending, into `in` when `reading`.
    long step(bool reading, const char* out, char* in, std::size_t size, short& wait,
              std::string& error);
    void close() noexcept;
    Error fail(Errc code, std::string_view what, std::string_view detail);

    ClickHouseUrl url_;
    std::string name_;
    std::string authorization_;
    std::chrono::milliseconds connect_timeout_;
    std::chrono::milliseconds io_timeout_;
    int fd_ = -1;
    struct Tls;
    std::unique_ptr<Tls> tls_;  // secure URLs: the context, and the connection's session
    std::chrono::steady_clock::time_point last_used_{};
};

}  // namespace tokenradar::store
