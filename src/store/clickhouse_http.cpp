#include "clickhouse_http.hpp"

#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/parser.hpp>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace tokenradar::store {
namespace {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

// The server closes a keep-alive connection after 3-10 s idle (keep_alive_timeout): one idle
// for longer is replaced before use instead of failing the first write.
constexpr auto kMaxIdle = std::chrono::seconds(2);
constexpr std::size_t kMaxHeader = 64U << 10U;
constexpr std::size_t kMaxErrorBody = AnswerReader::kMaxErrorBody;

// The body of a parsed answer: each piece goes to the sink (a 200) or, up to kMaxErrorBody,
// into `error_text` (any other status). Beast's Body concept names its members.
// NOLINTBEGIN(readability-identifier-naming)
struct SinkBody {
    struct value_type {
        const AnswerSink* sink = nullptr;
        bool ok = true;
        std::string error_text;
        Error sink_error;
        bool sink_failed = false;
    };
    class reader {
      public:
        template <bool IsRequest, class Fields>
        reader(http::header<IsRequest, Fields>& /*header*/, value_type& body) : body_(body) {}
        void init(const boost::optional<std::uint64_t>& /*length*/, boost::beast::error_code& ec) {
            ec = {};
        }
        template <class ConstBufferSequence>
        std::size_t put(const ConstBufferSequence& buffers, boost::beast::error_code& ec) {
            ec = {};
            std::size_t n = 0;
            for (const auto b : boost::beast::buffers_range_ref(buffers)) {
                const std::string_view bytes(static_cast<const char*>(b.data()), b.size());
                n += b.size();
                if (!body_.ok) {
                    const std::size_t room = kMaxErrorBody - body_.error_text.size();
                    body_.error_text.append(bytes.substr(0, room));
                } else if (auto sunk = (*body_.sink)(bytes); !sunk) {
                    body_.sink_error = sunk.error();
                    body_.sink_failed = true;
                    ec = http::error::body_limit;  // stops the parser
                    return n;
                }
            }
            return n;
        }
        void finish(boost::beast::error_code& ec) { ec = {}; }

      private:
        value_type& body_;
    };
};
// NOLINTEND(readability-identifier-naming)

std::string base64(std::string_view in) {
    static constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16U) |
                           (static_cast<unsigned char>(in[i + 1]) << 8U) |
                           static_cast<unsigned char>(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> static_cast<unsigned>(s)) & 63U];
    }
    if (i < in.size()) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16U;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8U;
        out += kAlphabet[(v >> 18U) & 63U];
        out += kAlphabet[(v >> 12U) & 63U];
        out += i + 1 < in.size() ? kAlphabet[(v >> 6U) & 63U] : '=';
        out += '=';
    }
    return out;
}

std::string url_encode(std::string_view in) {
    std::string out;
    for (const char c : in) {
        const auto u = static_cast<unsigned char>(c);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out += c;
        } else {
            out += fmt::format("%{:02X}", u);
        }
    }
    return out;
}

// OpenSSL's queued errors as one line ("" when there is none); the queue is emptied.
std::string openssl_errors() {
    std::string out;
    for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
        std::array<char, 256> text{};
        ERR_error_string_n(e, text.data(), text.size());
        if (!out.empty()) out += "; ";
        out += text.data();
    }
    return out;
}

bool is_ip_address(const std::string& host) {
    std::array<unsigned char, sizeof(in6_addr)> addr{};
    return ::inet_pton(AF_INET, host.c_str(), addr.data()) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), addr.data()) == 1;
}

// Waits until `fd` is ready for `events` or the deadline passes (false).
bool wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1'000'000)));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return true;  // the next call reports the error
    }
}

}  // namespace

struct AnswerReader::Impl {
    http::response_parser<SinkBody> parser;
    bool header_seen = false;
};

AnswerReader::AnswerReader(const AnswerSink& sink) : impl_(std::make_unique<Impl>()) {
    http::response_parser<SinkBody>& p = impl_->parser;
    p.header_limit(static_cast<std::uint32_t>(kMaxHeader));
    p.body_limit(boost::none);  // a 200's body goes to the sink; an error's is cut at its limit
    p.eager(false);             // stop after the header: where its body goes depends on the status
    p.get().body().sink = &sink;
}

AnswerReader::~AnswerReader() = default;

Result<std::size_t> AnswerReader::feed(std::string_view bytes) {
    http::response_parser<SinkBody>& p = impl_->parser;
    std::size_t used = 0;
    while (used < bytes.size() && !p.is_done()) {
        boost::beast::error_code ec;
        const std::size_t took =
            p.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
        used += took;
        if (ec == http::error::need_more) break;
        if (ec) {
            auto& body = p.get().body();
            if (body.sink_failed) return body.sink_error;
            return Error(Errc::protocol_error, fmt::format("not an HTTP answer: {}", ec.message()));
        }
        if (!impl_->header_seen && p.is_header_done()) {
            impl_->header_seen = true;
            p.get().body().ok = p.get().result_int() == 200;
            p.eager(true);
        }
        if (took == 0) break;
    }
    return used;
}

Result<void> AnswerReader::feed_eof() {
    boost::beast::error_code ec;
    impl_->parser.put_eof(ec);
    if (!ec && impl_->parser.is_done()) return {};
    return Error(Errc::connection_error, impl_->header_seen
                                             ? "the connection closed in the middle of the answer"
                                             : "the connection closed before an answer");
}

bool AnswerReader::done() const noexcept { return impl_->parser.is_done(); }
unsigned AnswerReader::status() const noexcept {
    return impl_->header_seen ? impl_->parser.get().result_int() : 0;
}
bool AnswerReader::keep_alive() const noexcept { return impl_->parser.get().keep_alive(); }
const std::string& AnswerReader::error_text() const noexcept {
    return impl_->parser.get().body().error_text;
}

// The client context of a secure URL (made once: the CA file is read then) and the session
// of the current connection.
struct ClickHouseHttp::Tls {
    Tls() = default;
    Tls(const Tls&) = delete;
    Tls& operator=(const Tls&) = delete;
    ~Tls() {
        end_session();
        if (context != nullptr) SSL_CTX_free(context);
    }
    void end_session() noexcept {
        if (session != nullptr) SSL_free(session);
        session = nullptr;
    }

    SSL_CTX* context = nullptr;
    std::string context_error;  // why there is no context (every connect reports it)
    SSL* session = nullptr;
};

ClickHouseHttp::ClickHouseHttp(ClickHouseUrl url, std::string name,
                               std::chrono::milliseconds connect_timeout,
                               std::chrono::milliseconds io_timeout)
    : url_(std::move(url)),
      name_(std::move(name)),
      authorization_("Basic " + base64(url_.user + ":" + url_.password)),
      connect_timeout_(connect_timeout),
      io_timeout_(io_timeout) {
    if (!url_.secure) return;
    tls_ = std::make_unique<Tls>();
    ERR_clear_error();
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    if (context == nullptr) {
        tls_->context_error = "no TLS context: " + openssl_errors();
        return;
    }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nullptr);
    // A send may go out in pieces, each retried from where it stopped.
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE);
    const bool trusted = url_.ca_file.empty() ? SSL_CTX_set_default_verify_paths(context) == 1
                                              : SSL_CTX_load_verify_locations(
                                                    context, url_.ca_file.c_str(), nullptr) == 1;
    if (!trusted) {
        tls_->context_error =
            url_.ca_file.empty()
                ? "the system's CA certificates could not be read: " + openssl_errors()
                : fmt::format("ca_file {}: not a readable PEM file of CA certificates ({})",
                              url_.ca_file, openssl_errors());
        SSL_CTX_free(context);
        return;
    }
    tls_->context = context;
}

ClickHouseHttp::~ClickHouseHttp() { close(); }

void ClickHouseHttp::close() noexcept {
    if (tls_) tls_->end_session();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

Result<void> ClickHouseHttp::start_tls(std::string_view what, Clock::time_point deadline) {
    if (tls_->context == nullptr) return fail(Errc::tls_failed, what, tls_->context_error);
    SSL* session = SSL_new(tls_->context);
    if (session == nullptr) {
        return fail(Errc::tls_failed, what, "no TLS session: " + openssl_errors());
    }
    tls_->session = session;
    SSL_set_fd(session, fd_);
    // The certificate's subjectAltName must name the URL's host: an address as an IP entry, a
    // name as a DNS one (also sent as SNI, which ClickHouse Cloud routes by). Its subject's CN
    // is not read, as browsers and Go's TLS do not.
    X509_VERIFY_PARAM* check = SSL_get0_param(session);
    X509_VERIFY_PARAM_set_hostflags(check, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (is_ip_address(url_.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(check, url_.host.c_str());
    } else {
        // SSL_set_tlsext_host_name without its C-style cast.
        ::SSL_ctrl(session, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   const_cast<char*>(url_.host.c_str()));  // NOLINT: OpenSSL reads it
        SSL_set1_host(session, url_.host.c_str());
    }
    for (;;) {
        ERR_clear_error();
        const int rc = SSL_connect(session);
        if (rc == 1) return {};
        const int err = SSL_get_error(session, rc);
        const auto events = static_cast<short>(err == SSL_ERROR_WANT_READ    ? POLLIN
                                               : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                                             : 0);
        if (events != 0) {
            if (!wait_for(fd_, events, deadline)) {
                return fail(Errc::tls_failed, what,
                            fmt::format("no TLS handshake with {}:{} within {} ms", url_.host,
                                        url_.port, connect_timeout_.count()));
            }
            continue;
        }
        const long verified = SSL_get_verify_result(session);
        std::string reason = verified != X509_V_OK
                                 ? fmt::format("certificate verify failed: {}",
                                               X509_verify_cert_error_string(verified))
                                 : openssl_errors();
        if (reason.empty()) reason = "the connection closed during the handshake";
        return fail(Errc::tls_failed, what,
                    fmt::format("TLS handshake with {}:{}: {}", url_.host, url_.port, reason));
    }
}

long ClickHouseHttp::transfer(std::string_view out, short& wait, std::string& error) {
    return step(false, out.data(), nullptr, out.size(), wait, error);
}

long ClickHouseHttp::transfer(std::span<char> in, short& wait, std::string& error) {
    return step(true, nullptr, in.data(), in.size(), wait, error);
}

long ClickHouseHttp::step(bool reading, const char* out, char* in, std::size_t size, short& wait,
                          std::string& error) {
    wait = 0;
    const char* verb = reading ? "recv" : "send";
    if (!tls_) {
        const ssize_t n = reading ? ::recv(fd_, in, size, 0) : ::send(fd_, out, size, MSG_NOSIGNAL);
        if (n > 0 || (reading && n == 0)) return n;
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            wait = reading ? POLLIN : POLLOUT;
        } else {
            error = fmt::format("{}: {}", verb, std::strerror(errno));
        }
        return -1;
    }
    const int chunk = static_cast<int>(std::min<std::size_t>(size, 1U << 30U));
    ERR_clear_error();
    const int n =
        reading ? SSL_read(tls_->session, in, chunk) : SSL_write(tls_->session, out, chunk);
    if (n > 0) return n;
    switch (SSL_get_error(tls_->session, n)) {
        case SSL_ERROR_WANT_READ:
            wait = POLLIN;
            return -1;
        case SSL_ERROR_WANT_WRITE:
            wait = POLLOUT;
            return -1;
        case SSL_ERROR_ZERO_RETURN:
            if (reading) return 0;  // the peer's close_notify
            break;
        default:
            break;
    }
    // A close without close_notify reads as the end too: the HTTP parser knows whether the
    // answer was whole.
    const std::string reasons = openssl_errors();
    if (reading && (reasons.empty() || reasons.find("unexpected eof") != std::string::npos)) {
        return 0;
    }
    error = fmt::format("TLS {}: {}", verb, reasons.empty() ? "the connection closed" : reasons);
    return -1;
}

Error ClickHouseHttp::fail(Errc code, std::string_view what, std::string_view detail) {
    close();
    return Error(code, fmt::format("{}: {}: {}", name_, what, detail));
}

Result<void> ClickHouseHttp::connect(std::string_view what) {
    close();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(url_.port);
    if (const int rc = ::getaddrinfo(url_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        return fail(Errc::connect_failed, what,
                    fmt::format("cannot resolve {}: {}", url_.host, ::gai_strerror(rc)));
    }
    std::string reason = "no address";
    const auto deadline = Clock::now() + connect_timeout_;
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd =
            ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            reason = std::strerror(errno);
            continue;
        }
        int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            if (!wait_for(fd, POLLOUT, deadline)) {
                reason = fmt::format("no answer within {} ms", connect_timeout_.count());
                ::close(fd);
                continue;
            }
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
        if (rc != 0) {
            reason = std::strerror(errno);
            ::close(fd);
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
        break;
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) {
        return fail(Errc::connect_failed, what,
                    fmt::format("cannot connect to {}:{}: {}", url_.host, url_.port, reason));
    }
    return tls_ ? start_tls(what, deadline) : Result<void>{};
}

Result<void> ClickHouseHttp::run(std::string_view what, std::string_view sql, const Sink& sink) {
    return request(what, {}, {}, sql, sink);
}

Result<std::string> ClickHouseHttp::text(std::string_view what, std::string_view sql,
                                         std::size_t limit) {
    std::string out;
    auto done = request(what, {}, {}, sql, [&](std::string_view bytes) -> Result<void> {
        if (out.size() + bytes.size() > limit) {
            return Error(Errc::payload_too_large,
                         fmt::format("{}: {}: an answer over {} bytes", name_, what, limit));
        }
        out.append(bytes);
        return {};
    });
    if (!done) return done.error();
    return out;
}

Result<void> ClickHouseHttp::insert(std::string_view what, std::string_view statement,
                                    std::string_view data) {
    // An INSERT's whole body is one block (one part per partition), so a batch is stored all
    // or nothing; ClickHouse cuts blocks at 1,048,576 rows by default. (18.16 takes no
    // SETTINGS clause in an INSERT: a URL parameter.)
    const std::string params = "&max_insert_block_size=100000000&query=" + url_encode(statement);
    return request(what, params, {}, data, [](std::string_view) -> Result<void> { return {}; });
}

Result<void> ClickHouseHttp::run_with_table(std::string_view what, std::string_view sql,
                                            std::string_view table, std::string_view structure,
                                            std::string_view rows, const Sink& sink) {
    // A boundary that the rows do not contain (RowBinary may hold any bytes).
    std::string boundary = "tokenradar-7f3a9c1e5b";
    for (int n = 0; rows.find(boundary) != std::string_view::npos; ++n) {
        boundary = fmt::format("tokenradar-7f3a9c1e5b-{}", n);
    }
    std::string body = fmt::format(
        "--{}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n",
        boundary, table, table);
    body.append(rows);
    body += fmt::format("\r\n--{}--\r\n", boundary);
    const std::string params = fmt::format("&query={}&{}_structure={}&{}_format=RowBinary",
                                           url_encode(sql), table, url_encode(structure), table);
    return request(what, params, "multipart/form-data; boundary=" + boundary, body, sink);
}

Result<void> ClickHouseHttp::request(std::string_view what, std::string_view params,
                                     std::string_view content_type, std::string_view body,
                                     const Sink& sink) {
    const std::string target =
        "/?database=" + url_encode(url_.database) + "&wait_end_of_query=1" + std::string(params);
    const std::string type =
        content_type.empty() ? std::string() : fmt::format("Content-Type: {}\r\n", content_type);
    const std::string head = fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nAuthorization: {}\r\n{}Content-Length: {}\r\n"
        "Connection: keep-alive\r\n\r\n",
        target, url_.host, url_.port, authorization_, type, body.size());
    // A kept connection the server closed while idle fails before any answer: once, on a
    // fresh connection. (Not when the answer had begun: the statement ran.)
    const bool reused = fd_ >= 0 && Clock::now() - last_used_ < kMaxIdle;
    if (!reused) {
        if (auto c = connect(what); !c) return c.error();
    }
    bool answered = false;
    auto done = exchange(what, head, body, sink, answered);
    if (!done && reused && !answered &&
        errc_of(done.error(), Errc::internal) == Errc::connection_error) {
        if (auto c = connect(what); !c) return c.error();
        done = exchange(what, head, body, sink, answered);
    }
    last_used_ = Clock::now();
    return done;
}

Result<void> ClickHouseHttp::exchange(std::string_view what, const std::string& head,
                                      std::string_view body, const Sink& sink, bool& answered) {
    // Write the head and the body.
    std::array<std::string_view, 2> parts = {head, body};
    short wait = 0;
    std::string error;
    for (std::string_view part : parts) {
        while (!part.empty()) {
            const long n = transfer(part, wait, error);
            if (n > 0) {
                part.remove_prefix(static_cast<std::size_t>(n));
                continue;
            }
            if (wait != 0) {
                if (!wait_for(fd_, wait, Clock::now() + io_timeout_)) {
                    return fail(Errc::connection_error, what,
                                fmt::format("could not send within {} ms", io_timeout_.count()));
                }
                continue;
            }
            return fail(Errc::connection_error, what, error);
        }
    }
    // Read the answer.
    AnswerReader reader(sink);
    std::array<char, 64U << 10U> buffer{};
    std::size_t have = 0;  // unparsed bytes at the start of `buffer`
    while (!reader.done()) {
        if (have == buffer.size()) {
            return fail(Errc::protocol_error, what, "an answer line longer than 64 KiB");
        }
        const long n = transfer(std::span(buffer.data() + have, buffer.size() - have), wait, error);
        if (n < 0 && wait != 0) {
            if (!wait_for(fd_, wait, Clock::now() + io_timeout_)) {
                return fail(Errc::connection_error, what,
                            fmt::format("no answer within {} ms", io_timeout_.count()));
            }
            continue;
        }
        if (n < 0) return fail(Errc::connection_error, what, error);
        if (n == 0) {
            if (auto ended = reader.feed_eof(); !ended) {
                return fail(Errc::connection_error, what, ended.error().message);
            }
            break;
        }
        answered = true;
        have += static_cast<std::size_t>(n);
        auto used = reader.feed(std::string_view(buffer.data(), have));
        if (!used) {
            close();
            if (used.error().code == make_error_code(Errc::protocol_error) &&
                used.error().message.starts_with("not an HTTP answer")) {
                return Error(Errc::protocol_error,
                             fmt::format("{}: {}: {}", name_, what, used.error().message));
            }
            return used.error();  // the sink's, which names the store
        }
        std::memmove(buffer.data(), buffer.data() + *used, have - *used);
        have -= *used;
    }
    if (!reader.keep_alive()) close();
    if (reader.status() != 200) {
        const std::string& error_body = reader.error_text();
        const int code = clickhouse_error_code(error_body);
        // 192 unknown user, 193 wrong password (18.16 answers them with 500).
        const bool login = reader.status() == 401 || reader.status() == 403 || code == 192 ||
                           code == 193 || code == 516;
        return Error(login ? Errc::connect_failed : Errc::internal,
                     fmt::format("{}: {}: {}", name_, what, clickhouse_error_message(error_body)));
    }
    return {};
}

}  // namespace tokenradar::store
