#include <tokenradar/net/redis_client.hpp>

#include "lazy_deadline.hpp"

#include <tokenradar/net/log_completion.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <exception>
#include <utility>

namespace tokenradar::net {
namespace detail {

using Clock = std::chrono::steady_clock;
using tcp = asio::ip::tcp;
using ReplyHandler = asio::any_completion_handler<void(Result<RedisReply>)>;

// One command awaiting its reply, in the order it was written.
struct RedisWaiter {
    std::uint64_t seq = 0;
    std::string_view what;                             // a literal: "GET", "SET"...
    Clock::time_point deadline = LazyDeadline::kNone;  // set once the connection is up
    // Emplaced, moved out and reset, never assigned: Boost 1.81's any_completion_handler move
    // assignment wraps the handler in another one.
    std::optional<ReplyHandler> handler;
    bool abandoned = false;  // its caller was cancelled; the reply is dropped
};

struct RedisConn;

struct RedisState {
    RedisState(asio::any_io_executor executor, RedisUrl u, RedisOptions o)
        : ex(std::move(executor)),
          url(std::move(u)),
          options(o),
          name(fmt::format("redis {}", url.authority())) {}

    asio::any_io_executor ex;
    RedisUrl url;
    RedisOptions options;
    std::string name;  // "redis host:port", the start of every message

    RedisConn* conn = nullptr;             // the current connection; owned by its coroutine
    Clock::time_point retry_at{};          // no new connection before this
    std::chrono::milliseconds backoff{0};  // of the last failure; 0 after a reply
    std::string last_failure;              // why the last connection ended
    bool closed = false;                   // the client is being destroyed

    std::atomic<std::uint64_t> commands{0};
    std::atomic<std::uint64_t> errors{0};
    std::atomic<std::uint64_t> timeouts{0};
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::uint64_t> connect_failures{0};
    std::atomic<bool> up{false};
};

enum class Phase { connecting, up };

// One TCP connection: its coroutine (run_connection) connects, sends AUTH/SELECT, then reads
// replies until the connection fails, and owns it; callers and write completions hold
// shared_ptrs while they need it.
struct RedisConn : std::enable_shared_from_this<RedisConn> {
    explicit RedisConn(std::shared_ptr<RedisState> s)
        : state(std::move(s)),
          socket(state->ex),
          deadline(std::make_shared<LazyDeadline>(state->ex, [this] { on_deadline(); })),
          reader(state->options.limits) {}
    ~RedisConn() {
        if (state->conn == this) state->conn = nullptr;
    }
    RedisConn(const RedisConn&) = delete;
    RedisConn& operator=(const RedisConn&) = delete;

    // The first reason wins; closing the socket fails whatever operation is pending, and the
    // connection's coroutine then ends it (finish()).
    void close_with(Error error) {
        if (!failure) failure = std::move(error);
        boost::system::error_code ec;
        socket.close(ec);
        if (resolver) resolver->cancel();
    }

    void on_deadline() {
        state->timeouts.fetch_add(1, std::memory_order_relaxed);
        if (phase == Phase::connecting) {
            close_with(Error(Errc::timeout_connect,
                             fmt::format("{}: connect: no answer within {} ms", state->name,
                                         state->options.connect_timeout.count())));
            return;
        }
        const std::string_view what = waiters.empty() ? "command" : waiters.front().what;
        close_with(
            Error(Errc::timeout_total, fmt::format("{}: {}: no reply within {} ms", state->name,
                                                   what, state->options.command_timeout.count())));
    }

    RedisWaiter* find(std::uint64_t seq) {
        const std::uint64_t front = next_seq - waiters.size();
        if (seq < front || seq >= next_seq) return nullptr;
        return &waiters[static_cast<std::size_t>(seq - front)];
    }

    // The deadline follows the oldest command; none while nothing waits (release_soon lets an
    // idle io_context's timer go).
    void follow_front() {
        if (waiters.empty()) {
            deadline->set(LazyDeadline::kNone);
            deadline->release_soon();
        } else {
            deadline->set(waiters.front().deadline);
        }
    }

    std::shared_ptr<RedisState> state;
    tcp::socket socket;
    std::optional<tcp::resolver> resolver;  // while resolving a host name
    std::shared_ptr<LazyDeadline> deadline;
    RedisReplyReader reader;
    std::vector<char> read_buffer;
    std::string out;      // encoded commands not yet handed to the socket
    std::string writing;  // the bytes of the asynchronous write in flight
    bool write_in_flight = false;
    bool flush_posted = false;
    std::deque<RedisWaiter> waiters;
    std::uint64_t next_seq = 0;
    Phase phase = Phase::connecting;
    std::optional<Error> failure;
};

}  // namespace detail

namespace {

using detail::Clock;
using detail::Phase;
using detail::RedisConn;
using detail::RedisState;
using detail::RedisWaiter;
using detail::ReplyHandler;
using detail::tcp;

// What a socket read asks for: a GET of a few KB in one read, a large value in few.
constexpr std::size_t kReadSize = 64 * 1024;

// Completions are posted, never run inside the reader's loop: a caller that resumed there
// could queue commands or destroy the client under it.
void complete(RedisConn& c, RedisWaiter& w, Result<RedisReply> result) {
    if (w.abandoned || !w.handler) return;
    ReplyHandler handler(std::move(*w.handler));
    w.handler.reset();
    asio::post(c.state->ex, asio::append(std::move(handler), std::move(result)));
}

void cancel_waiter(const std::weak_ptr<RedisConn>& weak, std::uint64_t seq) {
    const auto conn = weak.lock();
    if (!conn) return;
    RedisWaiter* w = conn->find(seq);
    if (w == nullptr || w->abandoned) return;
    Error error(Errc::cancelled, fmt::format("{}: {}: cancelled", conn->state->name, w->what));
    complete(*conn, *w, std::move(error));
    w->abandoned = true;
}

// Hands the socket what it takes now; the rest goes out by one asynchronous write at a time.
void write_out(RedisConn& c) {
    if (c.write_in_flight || c.out.empty() || c.failure) return;
    boost::system::error_code ec;
    const std::size_t n = c.socket.write_some(asio::buffer(c.out), ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
        c.close_with(Error(Errc::connection_error,
                           fmt::format("{}: write: {}", c.state->name, ec.message())));
        return;
    }
    c.out.erase(0, n);
    if (c.out.empty()) return;
    c.writing.swap(c.out);
    c.out.clear();
    c.write_in_flight = true;
    asio::async_write(
        c.socket, asio::buffer(c.writing),
        [conn = c.shared_from_this()](const boost::system::error_code& wec, std::size_t) {
            conn->write_in_flight = false;
            conn->writing.clear();
            if (wec) {
                conn->close_with(
                    Error(Errc::connection_error,
                          fmt::format("{}: write: {}", conn->state->name, wec.message())));
                return;
            }
            write_out(*conn);
        });
}

// A command issued while earlier ones await their replies waits for the end of this
// scheduler round, so those issued together leave in one write; alone, it leaves at once.
void flush(RedisConn& c) {
    if (c.waiters.size() <= 1 && !c.write_in_flight) {
        write_out(c);
        return;
    }
    if (c.flush_posted) return;
    c.flush_posted = true;
    asio::post(c.state->ex, [conn = c.shared_from_this()] {
        conn->flush_posted = false;
        write_out(*conn);
    });
}

Error io_failure(const RedisConn& c, const boost::system::error_code& ec, std::string_view what) {
    if (c.failure) return *c.failure;
    if (ec == asio::error::eof) {
        return Error(Errc::connection_error,
                     fmt::format("{}: {}: the server closed the connection", c.state->name, what));
    }
    return Error(Errc::connection_error,
                 fmt::format("{}: {}: {}", c.state->name, what, ec.message()));
}

// The next reply during the handshake, reading as needed.
asio::awaitable<Result<RedisReply>> read_reply(std::shared_ptr<RedisConn> conn) {
    RedisConn& c = *conn;
    for (;;) {
        auto next = c.reader.next();
        if (!next) {
            co_return Error(Errc::protocol_error,
                            fmt::format("{}: {}", c.state->name, next.error().message));
        }
        if (next->has_value()) co_return std::move(**next);
        auto [ec, n] = co_await c.socket.async_read_some(asio::buffer(c.read_buffer), use_nothrow);
        if (ec) co_return io_failure(c, ec, "connect");
        c.reader.feed(std::string_view(c.read_buffer.data(), n));
    }
}

// TCP connect, then AUTH and SELECT (their replies awaited before any queued command is
// written: a command must never run on the wrong database). Within connect_timeout.
asio::awaitable<Result<void>> open(std::shared_ptr<RedisConn> conn) {
    RedisConn& c = *conn;
    const RedisState& s = *c.state;
    if (c.failure) co_return *c.failure;  // the client was destroyed before this ran
    c.deadline->set(Clock::now() + s.options.connect_timeout);
    c.read_buffer.resize(kReadSize);

    // IP literals skip the resolver. Its getaddrinfo thread is not bounded by the timeout
    // (the deadline cancels the wait, not the lookup).
    std::vector<tcp::endpoint> endpoints;
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(s.url.host, ec);
    if (!ec) {
        endpoints.emplace_back(address, s.url.port);
    } else {
        c.resolver.emplace(s.ex);
        const std::string port = std::to_string(s.url.port);
        auto [rec, results] = co_await c.resolver->async_resolve(s.url.host, port, use_nothrow);
        c.resolver.reset();
        if (rec) co_return io_failure(c, rec, "resolve");
        for (const auto& r : results) endpoints.push_back(r.endpoint());
    }
    auto [cec, endpoint] = co_await asio::async_connect(c.socket, endpoints, use_nothrow);
    if (cec) {
        if (c.failure) co_return *c.failure;
        co_return Error(Errc::connect_failed,
                        fmt::format("{}: connect: {}", s.name, cec.message()));
    }
    c.socket.set_option(tcp::no_delay(true), ec);
    c.socket.non_blocking(true, ec);  // commands are written inline (write_out)

    std::string hello;
    if (!s.url.password.empty()) {
        if (s.url.user.empty()) {
            const std::array<std::string_view, 2> argv{"AUTH", s.url.password.reveal()};
            append_redis_command(hello, argv);
        } else {
            const std::array<std::string_view, 3> argv{"AUTH", s.url.user, s.url.password.reveal()};
            append_redis_command(hello, argv);
        }
    }
    if (s.url.db != 0) {
        const std::string db = std::to_string(s.url.db);
        const std::array<std::string_view, 2> argv{"SELECT", db};
        append_redis_command(hello, argv);
    }
    if (hello.empty()) co_return Result<void>();
    auto [wec, written] = co_await asio::async_write(c.socket, asio::buffer(hello), use_nothrow);
    if (wec) co_return io_failure(c, wec, "connect");

    if (!s.url.password.empty()) {
        auto reply = co_await read_reply(conn);
        if (!reply) co_return reply.error();
        if (reply->type == RedisReply::Type::error) {
            std::string why = std::move(reply->str);
            s.url.password.redact_in(why);
            co_return Error(Errc::unauthorized, fmt::format("{}: AUTH refused: {}", s.name, why));
        }
    }
    if (s.url.db != 0) {
        auto reply = co_await read_reply(conn);
        if (!reply) co_return reply.error();
        if (reply->type == RedisReply::Type::error) {
            co_return Error(Errc::connection_error,
                            fmt::format("{}: SELECT {} refused: {}", s.name, s.url.db, reply->str));
        }
    }
    co_return Result<void>();
}

// Replies, matched to the oldest waiter, until the connection fails; returns why.
asio::awaitable<Error> read_replies(std::shared_ptr<RedisConn> conn) {
    RedisConn& c = *conn;
    RedisState& s = *c.state;
    for (;;) {
        auto [ec, n] = co_await c.socket.async_read_some(asio::buffer(c.read_buffer), use_nothrow);
        if (ec) co_return io_failure(c, ec, "read");
        c.reader.feed(std::string_view(c.read_buffer.data(), n));
        for (;;) {
            auto next = c.reader.next();
            if (!next) {
                co_return Error(Errc::protocol_error,
                                fmt::format("{}: {}", s.name, next.error().message));
            }
            if (!next->has_value()) break;
            if (c.waiters.empty()) {
                co_return Error(Errc::protocol_error,
                                fmt::format("{}: a reply to no command", s.name));
            }
            s.backoff = std::chrono::milliseconds(0);  // the server answers: it is healthy
            complete(c, c.waiters.front(), std::move(**next));
            c.waiters.pop_front();
        }
        c.follow_front();
    }
}

// The connection is over: every waiter gets `error`, and unless an idle connection was
// closed by the server (a restart, Redis's idle timeout) the next attempt waits a backoff.
void finish(RedisConn& c, const Error& error) {
    RedisState& s = *c.state;
    c.close_with(error);
    c.deadline->clear();
    if (s.conn == &c) s.conn = nullptr;
    const bool was_up = c.phase == Phase::up;
    if (was_up) s.up.store(false, std::memory_order_relaxed);
    if (!was_up) s.connect_failures.fetch_add(1, std::memory_order_relaxed);
    s.last_failure = error.message;
    if (s.closed) {
        for (RedisWaiter& w : c.waiters) complete(c, w, error);
        c.waiters.clear();
        return;
    }
    const bool idle_close =
        was_up && c.waiters.empty() && error.code == make_error_code(Errc::connection_error);
    if (idle_close) {
        spdlog::info("net: {}; reconnecting at the next command", error.message);
    } else {
        s.backoff = s.backoff.count() == 0 ? s.options.backoff_initial
                                           : std::min(s.backoff * 2, s.options.backoff_max);
        s.retry_at = Clock::now() + s.backoff;
        spdlog::warn("net: {}; next attempt in {} ms", error.message, s.backoff.count());
    }
    for (RedisWaiter& w : c.waiters) {
        if (!w.abandoned) s.errors.fetch_add(1, std::memory_order_relaxed);
        complete(c, w, error);
    }
    c.waiters.clear();
}

asio::awaitable<void> run_connection(std::shared_ptr<RedisConn> conn) {
    RedisConn& c = *conn;
    RedisState& s = *c.state;
    auto opened = co_await open(conn);
    if (!opened) {
        finish(c, opened.error());
        co_return;
    }
    if (c.failure) {  // closed (the client went away) as the handshake ended
        finish(c, *c.failure);
        co_return;
    }
    c.phase = Phase::up;
    s.up.store(true, std::memory_order_relaxed);
    s.connects.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = Clock::now() + s.options.command_timeout;
    for (RedisWaiter& w : c.waiters) w.deadline = deadline;
    c.follow_front();
    write_out(c);
    const Error error = co_await read_replies(conn);
    finish(c, error);
}

struct Ticket {
    std::shared_ptr<RedisConn> conn;
    std::uint64_t seq = 0;
};

// The part of a call that does not suspend: fail fast, or connect if needed and queue.
Result<Ticket> enqueue(const std::shared_ptr<RedisState>& state,
                       std::span<const std::string_view> argv, std::string_view what) {
    RedisState& s = *state;
    RedisConn* c = s.conn;
    if (c != nullptr && c->failure) {
        s.errors.fetch_add(1, std::memory_order_relaxed);
        return *c->failure;
    }
    if (c == nullptr) {
        const auto now = Clock::now();
        if (now < s.retry_at) {
            s.errors.fetch_add(1, std::memory_order_relaxed);
            const auto left =
                std::chrono::ceil<std::chrono::milliseconds>(s.retry_at - now).count();
            return Error(Errc::connection_error,
                         fmt::format("{}: unavailable, next attempt in {} ms (last failure: {})",
                                     s.name, left, s.last_failure));
        }
        auto conn = std::make_shared<RedisConn>(state);
        s.conn = conn.get();
        c = conn.get();
        asio::co_spawn(s.ex, run_connection(std::move(conn)),
                       LogCompletion{"net: redis connection"});
    }
    if (c->waiters.size() >= s.options.max_pending) {
        s.errors.fetch_add(1, std::memory_order_relaxed);
        return Error(Errc::overloaded, fmt::format("{}: {}: {} commands already waiting", s.name,
                                                   what, s.options.max_pending));
    }
    append_redis_command(c->out, argv);
    RedisWaiter& w = c->waiters.emplace_back();
    w.seq = c->next_seq++;
    w.what = what;
    s.commands.fetch_add(1, std::memory_order_relaxed);
    if (c->phase == Phase::up) {
        w.deadline = Clock::now() + s.options.command_timeout;
        if (c->waiters.size() == 1) c->deadline->set(w.deadline);
        flush(*c);
    }
    return Ticket{c->shared_from_this(), w.seq};
}

// Suspends until the reply to `seq`: the handler waits in the command's RedisWaiter.
template <class Token>
auto async_wait_reply(const std::shared_ptr<RedisConn>& conn, std::uint64_t seq, Token&& token) {
    return asio::async_initiate<Token, void(Result<RedisReply>)>(
        [](auto handler, const std::shared_ptr<RedisConn>& c, std::uint64_t s) {
            RedisWaiter* w = c->find(s);
            if (w == nullptr) {  // nothing runs between enqueue() and here
                Result<RedisReply> lost =
                    Error(Errc::internal, fmt::format("{}: command lost", c->state->name));
                asio::post(c->state->ex, asio::append(std::move(handler), std::move(lost)));
                return;
            }
            // The type-erased handler chains its own cancellation state onto the caller's
            // slot (replacing whatever was assigned there): listen on the chained slot.
            ReplyHandler& erased = w->handler.emplace(std::move(handler));
            auto slot = erased.get_cancellation_slot();
            if (slot.is_connected()) {
                slot.assign([weak = std::weak_ptr<RedisConn>(c), s](asio::cancellation_type type) {
                    if (type != asio::cancellation_type::none) cancel_waiter(weak, s);
                });
            }
        },
        token, conn, seq);
}

Error error_reply(const RedisState& s, std::string_view what, const RedisReply& reply) {
    return Error(Errc::upstream_http_error, fmt::format("{}: {}: {}", s.name, what, reply.str));
}

Error unexpected_reply(const RedisState& s, std::string_view what) {
    return Error(Errc::protocol_error, fmt::format("{}: {}: unexpected reply type", s.name, what));
}

}  // namespace

RedisClient::RedisClient(asio::any_io_executor ex, RedisUrl url, RedisOptions options)
    : state_(std::make_shared<RedisState>(std::move(ex), std::move(url), options)) {}

RedisClient::~RedisClient() {
    state_->closed = true;
    if (state_->conn != nullptr) {
        state_->conn->close_with(
            Error(Errc::cancelled, fmt::format("{}: the client was closed", state_->name)));
    }
}

asio::awaitable<Result<RedisReply>> RedisClient::call(std::span<const std::string_view> argv,
                                                      std::string_view what) {
    const asio::cancellation_state cancel_state = co_await asio::this_coro::cancellation_state;
    if (cancel_state.cancelled() != asio::cancellation_type::none) {
        co_return Error(Errc::cancelled, fmt::format("{}: {}: cancelled", state_->name, what));
    }
    auto ticket = enqueue(state_, argv, what);
    if (!ticket) co_return ticket.error();
    std::shared_ptr<RedisConn> conn = std::move(ticket->conn);
    const std::uint64_t seq = ticket->seq;
    auto reply = co_await async_wait_reply(conn, seq, asio::use_awaitable);
    co_return reply;
}

asio::awaitable<Result<std::optional<std::string>>> RedisClient::get(std::string key) {
    const std::array<std::string_view, 2> argv{"GET", key};
    const std::span<const std::string_view> args(argv);
    const std::string_view what = "GET";
    auto reply = co_await call(args, what);
    if (!reply) co_return reply.error();
    switch (reply->type) {
        case RedisReply::Type::string:
            co_return std::optional<std::string>(std::move(reply->str));
        case RedisReply::Type::nil:
            co_return std::optional<std::string>();
        case RedisReply::Type::error:
            co_return error_reply(*state_, what, *reply);
        default:
            co_return unexpected_reply(*state_, what);
    }
}

asio::awaitable<Result<bool>> RedisClient::set(std::string key, std::string value,
                                               std::chrono::milliseconds ttl, bool only_if_absent) {
    const std::string_view what = "SET";
    if (ttl.count() <= 0) {
        co_return Error(
            Errc::bad_request,
            fmt::format("{}: SET: the ttl must be positive, not {} ms", state_->name, ttl.count()));
    }
    const std::string px = std::to_string(ttl.count());
    const std::array<std::string_view, 6> argv{"SET", key, value, "PX", px, "NX"};
    const std::span<const std::string_view> args(argv.data(), only_if_absent ? 6 : 5);
    auto reply = co_await call(args, what);
    if (!reply) co_return reply.error();
    switch (reply->type) {
        case RedisReply::Type::status:
            co_return true;
        case RedisReply::Type::nil:
            co_return false;
        case RedisReply::Type::error:
            co_return error_reply(*state_, what, *reply);
        default:
            co_return unexpected_reply(*state_, what);
    }
}

asio::awaitable<Result<std::int64_t>> RedisClient::del(std::string key) {
    const std::array<std::string_view, 2> argv{"DEL", key};
    const std::span<const std::string_view> args(argv);
    const std::string_view what = "DEL";
    auto reply = co_await call(args, what);
    if (!reply) co_return reply.error();
    if (reply->type == RedisReply::Type::error) co_return error_reply(*state_, what, *reply);
    if (reply->type != RedisReply::Type::integer) co_return unexpected_reply(*state_, what);
    co_return static_cast<std::int64_t>(reply->integer);
}

asio::awaitable<Result<void>> RedisClient::ping() {
    const std::array<std::string_view, 1> argv{"PING"};
    const std::span<const std::string_view> args(argv);
    const std::string_view what = "PING";
    auto reply = co_await call(args, what);
    if (!reply) co_return reply.error();
    if (reply->type == RedisReply::Type::error) co_return error_reply(*state_, what, *reply);
    if (reply->type != RedisReply::Type::status) co_return unexpected_reply(*state_, what);
    co_return Result<void>();
}

asio::awaitable<Result<RedisReply>> RedisClient::command(std::vector<std::string> argv) {
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    const std::span<const std::string_view> args(views);
    const std::string_view what = "command";
    if (views.empty()) {
        co_return Error(Errc::bad_request, fmt::format("{}: an empty command", state_->name));
    }
    auto reply = co_await call(args, what);
    co_return reply;
}

RedisStats RedisClient::stats() const {
    RedisStats out;
    out.commands = state_->commands.load(std::memory_order_relaxed);
    out.errors = state_->errors.load(std::memory_order_relaxed);
    out.timeouts = state_->timeouts.load(std::memory_order_relaxed);
    out.connects = state_->connects.load(std::memory_order_relaxed);
    out.reconnects = out.connects > 0 ? out.connects - 1 : 0;
    out.connect_failures = state_->connect_failures.load(std::memory_order_relaxed);
    out.up = state_->up.load(std::memory_order_relaxed);
    return out;
}

const RedisUrl& RedisClient::url() const { return state_->url; }

}  // namespace tokenradar::net
