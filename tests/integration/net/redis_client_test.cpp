// RedisClient against a real redis-server on a free loopback port (tests/support/
// redis_server.hpp), and against raw listeners that misbehave: one that never answers, one
// that answers garbage. Timing is only checked against generous bounds and causal ones.

#include <tokenradar/net/redis_client.hpp>

#include "../../support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::net {
namespace {

using namespace std::chrono_literals;
using testing::RedisServer;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

// Timeouts generous enough for a busy VM, for tests that are not about timeouts.
RedisOptions relaxed() {
    RedisOptions o;
    o.connect_timeout = 5s;
    o.command_timeout = 5s;
    return o;
}

RedisUrl url_of(const std::string& text) {
    auto url = parse_redis_url(text);
    if (!url) throw std::runtime_error(url.error().message);
    return *url;
}

// A listening socket on 127.0.0.1 that never accepts: the kernel completes connections,
// nobody ever answers.
class SilentListener {
  public:
    SilentListener() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            throw std::runtime_error("listener");
        }
        port_ = ntohs(addr.sin_port);
    }
    ~SilentListener() { ::close(fd_); }
    SilentListener(const SilentListener&) = delete;
    SilentListener& operator=(const SilentListener&) = delete;
    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] std::string url(std::string_view auth = "") const {
        return "redis://" + std::string(auth) + "127.0.0.1:" + std::to_string(port_);
    }

  private:
    int fd_;
    std::uint16_t port_ = 0;
};

class RedisClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!RedisServer::available()) GTEST_SKIP() << RedisServer::skip_reason();
    }

    // Runs `aw` on this thread's io_context until it completes (at most `limit`). run() would
    // not return: a connected client always has a read pending.
    template <class T>
    T run(asio::awaitable<T> aw, std::chrono::seconds limit = 20s) {
        std::optional<T> out;
        std::exception_ptr failure;
        bool done = false;
        asio::co_spawn(ioc, std::move(aw), [&](std::exception_ptr e, T value) {
            failure = e;
            if (!e) out.emplace(std::move(value));
            done = true;
        });
        run_until([&] { return done; }, limit);
        if (failure) std::rethrow_exception(failure);
        return std::move(*out);
    }

    template <class Pred>
    void run_until(Pred pred, std::chrono::seconds limit = 20s) {
        const auto deadline = Clock::now() + limit;
        ioc.restart();
        while (!pred()) {
            if (Clock::now() > deadline) throw std::runtime_error("run_until: time limit");
            ioc.run_one_for(10ms);
        }
    }

    // Runs the io_context for `d` (lets the client see what the server did meanwhile).
    void run_for(std::chrono::milliseconds d) {
        ioc.restart();
        ioc.run_for(d);
    }

    asio::io_context ioc{1};
};

TEST_F(RedisClientTest, GetSetDelRoundTrip) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());

    auto missing = run(client.get("tr:nothing"));
    ASSERT_TRUE(missing) << missing.error().message;
    EXPECT_FALSE(missing->has_value());

    auto stored = run(client.set("tr:k", "hello", 60s));
    ASSERT_TRUE(stored) << stored.error().message;
    EXPECT_TRUE(*stored);
    auto got = run(client.get("tr:k"));
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(**got, "hello");

    auto removed = run(client.del("tr:k"));
    ASSERT_TRUE(removed) << removed.error().message;
    EXPECT_EQ(*removed, 1);
    auto again = run(client.del("tr:k"));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, 0);
    auto gone = run(client.get("tr:k"));
    ASSERT_TRUE(gone);
    EXPECT_FALSE(gone->has_value());

    auto pong = run(client.ping());
    EXPECT_TRUE(pong) << pong.error().message;
    const RedisStats stats = client.stats();
    EXPECT_TRUE(stats.up);
    EXPECT_EQ(stats.connects, 1u);
    EXPECT_EQ(stats.commands, 7u);
    EXPECT_EQ(stats.errors, 0u);
}

TEST_F(RedisClientTest, BinaryKeysAndValuesAndOneMegabyte) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());

    const std::string key("tr:\0bin\r\n*1\r\n", 13);
    std::string value;
    for (int i = 0; i < 256; ++i) value += static_cast<char>(i);
    value += "\r\n$3\r\nabc\r\n\0\0-ERR\r\n+OK\r\n";
    ASSERT_TRUE(run(client.set(key, value, 60s)));
    auto got = run(client.get(key));
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(**got, value);

    std::mt19937 gen(42);
    std::string big(1 << 20, '\0');
    for (char& c : big) c = static_cast<char>(gen());
    auto stored = run(client.set("tr:big", big, 60s));
    ASSERT_TRUE(stored) << stored.error().message;
    auto big_back = run(client.get("tr:big"));
    ASSERT_TRUE(big_back) << big_back.error().message;
    ASSERT_TRUE(big_back->has_value());
    EXPECT_EQ(big_back->value().size(), big.size());
    EXPECT_TRUE(**big_back == big);
}

TEST_F(RedisClientTest, TtlExpiresTheKey) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());

    const auto t_set = Clock::now();
    ASSERT_TRUE(run(client.set("tr:ttl", "v", 500ms)));
    auto pttl = run(client.command({"PTTL", "tr:ttl"}));
    ASSERT_TRUE(pttl) << pttl.error().message;
    ASSERT_EQ(pttl->type, RedisReply::Type::integer);
    EXPECT_GT(pttl->integer, 0);
    EXPECT_LE(pttl->integer, 500);

    // Gone within a generous bound (Redis expires lazily on access and actively at 10 Hz).
    bool expired = false;
    const auto t0 = Clock::now();
    while (!expired && Clock::now() - t0 < 5s) {
        auto got = run(client.get("tr:ttl"));
        ASSERT_TRUE(got) << got.error().message;
        expired = !got->has_value();
        if (!expired) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(expired);
    EXPECT_GE(ms_since(t_set), 500.0);  // causal: it cannot vanish before its ttl

    auto zero = run(client.set("tr:ttl", "v", 0ms));
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().code, make_error_code(Errc::bad_request));
}

TEST_F(RedisClientTest, SetOnlyIfAbsent) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());
    auto first = run(client.set("tr:nx", "one", 60s, true));
    ASSERT_TRUE(first) << first.error().message;
    EXPECT_TRUE(*first);
    auto second = run(client.set("tr:nx", "two", 60s, true));
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_FALSE(*second);
    auto got = run(client.get("tr:nx"));
    ASSERT_TRUE(got && got->has_value());
    EXPECT_EQ(**got, "one");
}

// Many coroutines at once on one connection: each must get the answer to its own command.
asio::awaitable<void> set_get_del(RedisClient* client, int i, std::atomic<int>* ok,
                                  std::atomic<int>* done) {
    const std::string key = "tr:p:" + std::to_string(i);
    const std::string value = std::string(static_cast<std::size_t>(1 + (i * 37) % 3000),
                                          static_cast<char>('a' + i % 26)) +
                              std::to_string(i);
    auto stored = co_await client->set(key, value, std::chrono::seconds(60));
    auto got = co_await client->get(key);
    auto removed = co_await client->del(key);
    if (stored && *stored && got && got->has_value() && **got == value && removed &&
        *removed == 1) {
        ++*ok;
    }
    ++*done;
}

TEST_F(RedisClientTest, PipelinedConcurrentCallsGetTheirOwnAnswers) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());
    constexpr int kCoroutines = 200;
    std::atomic<int> ok{0};
    std::atomic<int> done{0};
    for (int i = 0; i < kCoroutines; ++i) {
        asio::co_spawn(ioc, set_get_del(&client, i, &ok, &done), [](std::exception_ptr e) {
            if (e) std::rethrow_exception(e);
        });
    }
    run_until([&] { return done == kCoroutines; });
    EXPECT_EQ(ok, kCoroutines);
    const RedisStats stats = client.stats();
    EXPECT_EQ(stats.connects, 1u);  // all on one connection
    EXPECT_EQ(stats.commands, 3u * kCoroutines);
    EXPECT_EQ(stats.errors, 0u);
}

TEST_F(RedisClientTest, TooManyWaitingCommandsFailAtOnce) {
    RedisServer server;
    RedisOptions options = relaxed();
    options.max_pending = 4;
    RedisClient client(ioc.get_executor(), url_of(server.url()), options);
    std::vector<std::optional<Result<std::optional<std::string>>>> results(10);
    for (auto& slot : results) {
        asio::co_spawn(ioc, client.get("tr:x"),
                       [&slot](std::exception_ptr, Result<std::optional<std::string>> r) {
                           slot.emplace(std::move(r));
                       });
    }
    run_until([&] {
        for (const auto& r : results) {
            if (!r) return false;
        }
        return true;
    });
    int ok = 0;
    int overloaded = 0;
    for (const auto& r : results) {
        const Result<std::optional<std::string>>& result = *r;
        if (result) {
            ++ok;
        } else if (result.error().code == make_error_code(Errc::overloaded)) {
            ++overloaded;
        }
    }
    EXPECT_EQ(ok, 4);
    EXPECT_EQ(overloaded, 6);
}

TEST_F(RedisClientTest, AuthWithPassword) {
    const std::string password = "s3cret-Pw";
    RedisServer server(password);

    RedisClient good(ioc.get_executor(), url_of(server.url()), relaxed());
    auto stored = run(good.set("tr:a", "1", 60s));
    EXPECT_TRUE(stored) << stored.error().message;

    // Redis 6+ ACLs: the same password as the "default" user.
    RedisClient with_user(
        ioc.get_executor(),
        url_of("redis://default:" + password + "@127.0.0.1:" + std::to_string(server.port())),
        relaxed());
    auto got = run(with_user.get("tr:a"));
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(got->value_or(""), "1");

    const std::string wrong_password = "wr0ng-Pw-guess";
    RedisClient wrong(
        ioc.get_executor(),
        url_of("redis://:" + wrong_password + "@127.0.0.1:" + std::to_string(server.port())),
        relaxed());
    auto refused = run(wrong.get("tr:a"));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, make_error_code(Errc::unauthorized));
    EXPECT_TRUE(contains(refused.error().message, "AUTH refused")) << refused.error().message;
    EXPECT_FALSE(contains(refused.error().message, wrong_password)) << refused.error().message;
    EXPECT_FALSE(contains(refused.error().message, password)) << refused.error().message;
    EXPECT_EQ(wrong.stats().connect_failures, 1u);

    RedisClient none(ioc.get_executor(),
                     url_of("redis://127.0.0.1:" + std::to_string(server.port())), relaxed());
    auto noauth = run(none.get("tr:a"));
    ASSERT_FALSE(noauth);
    EXPECT_EQ(noauth.error().code, make_error_code(Errc::upstream_http_error));
    EXPECT_TRUE(contains(noauth.error().message, "NOAUTH")) << noauth.error().message;
}

TEST_F(RedisClientTest, SelectsTheDatabase) {
    RedisServer server;
    const std::string base = "redis://127.0.0.1:" + std::to_string(server.port());
    RedisClient db2(ioc.get_executor(), url_of(base + "/2"), relaxed());
    RedisClient db0(ioc.get_executor(), url_of(base), relaxed());
    ASSERT_TRUE(run(db2.set("tr:db", "two", 60s)));
    auto in0 = run(db0.get("tr:db"));
    ASSERT_TRUE(in0);
    EXPECT_FALSE(in0->has_value());
    auto in2 = run(db2.get("tr:db"));
    ASSERT_TRUE(in2);
    EXPECT_EQ(in2->value_or(""), "two");

    RedisClient db99(ioc.get_executor(), url_of(base + "/99"), relaxed());  // 16 databases
    auto refused = run(db99.get("tr:db"));
    ASSERT_FALSE(refused);
    EXPECT_TRUE(contains(refused.error().message, "SELECT 99 refused")) << refused.error().message;
}

TEST_F(RedisClientTest, OutageFailsFastThenRecovers) {
    RedisServer server;
    RedisOptions options;  // the defaults: 100 ms connect, 50 ms per command
    options.backoff_initial = 200ms;
    RedisClient client(ioc.get_executor(), url_of(server.url()), options);
    ASSERT_TRUE(run(client.set("tr:o", "v", 60s)));

    server.kill();
    auto t0 = Clock::now();
    auto failed = run(client.get("tr:o"));
    const double first_ms = ms_since(t0);
    ASSERT_FALSE(failed);
    EXPECT_TRUE(failed.error().code == make_error_code(Errc::connection_error) ||
                failed.error().code == make_error_code(Errc::connect_failed))
        << failed.error().message;
    EXPECT_LT(first_ms, 1000.0);
    EXPECT_FALSE(client.stats().up);

    // Within the backoff: at once, and without a connection attempt.
    const RedisStats before = client.stats();
    t0 = Clock::now();
    auto fast = run(client.get("tr:o"));
    const double fast_ms = ms_since(t0);
    ASSERT_FALSE(fast);
    EXPECT_EQ(fast.error().code, make_error_code(Errc::connection_error));
    EXPECT_TRUE(contains(fast.error().message, "unavailable")) << fast.error().message;
    EXPECT_LT(fast_ms, 200.0);
    EXPECT_EQ(client.stats().connect_failures, before.connect_failures);
    EXPECT_EQ(client.stats().errors, before.errors + 1);

    server.start();
    bool recovered = false;
    const auto t1 = Clock::now();
    while (!recovered && Clock::now() - t1 < 10s) {
        auto got = run(client.get("tr:o"));
        recovered = got.has_value();
        if (recovered) {
            EXPECT_FALSE(got->has_value());  // no persistence: the key is gone
        } else {
            std::this_thread::sleep_for(50ms);
        }
    }
    EXPECT_TRUE(recovered);
    EXPECT_TRUE(client.stats().up);
    EXPECT_EQ(client.stats().connects, 2u);
    EXPECT_EQ(client.stats().reconnects, 1u);
}

TEST_F(RedisClientTest, IdleConnectionClosedByARestartReconnectsAtOnce) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());
    ASSERT_TRUE(run(client.ping()));
    server.restart();
    // The pending read sees the close while the client is idle.
    run_until([&] { return !client.stats().up; }, 5s);
    auto pong = run(client.ping());
    EXPECT_TRUE(pong) << pong.error().message;  // no backoff after an idle close
    EXPECT_EQ(client.stats().connects, 2u);
}

TEST_F(RedisClientTest, ServerThatNeverAnswersTimesOut) {
    SilentListener listener;
    RedisOptions options;  // 50 ms per command
    RedisClient client(ioc.get_executor(), url_of(listener.url()), options);
    auto t0 = Clock::now();
    auto got = run(client.get("tr:h"));
    const double elapsed = ms_since(t0);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, make_error_code(Errc::timeout_total)) << got.error().message;
    EXPECT_TRUE(contains(got.error().message, "GET: no reply within 50 ms")) << got.error().message;
    EXPECT_GE(elapsed, 45.0);  // causal: not before the timeout
    EXPECT_LT(elapsed, 2000.0);
    EXPECT_EQ(client.stats().timeouts, 1u);

    t0 = Clock::now();
    auto fast = run(client.get("tr:h"));
    ASSERT_FALSE(fast);
    EXPECT_TRUE(contains(fast.error().message, "unavailable")) << fast.error().message;
    EXPECT_LT(ms_since(t0), 200.0);
}

TEST_F(RedisClientTest, HandshakeThatNeverAnswersTimesOutConnecting) {
    SilentListener listener;
    RedisClient client(ioc.get_executor(), url_of(listener.url(":pw@")), RedisOptions{});
    auto t0 = Clock::now();
    auto got = run(client.ping());
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, make_error_code(Errc::timeout_connect)) << got.error().message;
    EXPECT_GE(ms_since(t0), 95.0);
    EXPECT_EQ(client.stats().connect_failures, 1u);
    EXPECT_EQ(client.stats().connects, 0u);
}

TEST_F(RedisClientTest, GarbageFromThePeerIsAProtocolError) {
    SilentListener listener;
    std::thread peer([fd = listener.fd()] {
        const int conn = ::accept(fd, nullptr, nullptr);
        if (conn < 0) return;
        char buf[256];
        (void)::read(conn, buf, sizeof buf);
        const char answer[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
        (void)::write(conn, answer, sizeof answer - 1);
        std::this_thread::sleep_for(200ms);
        ::close(conn);
    });
    RedisClient client(ioc.get_executor(), url_of(listener.url()), relaxed());
    auto got = run(client.get("tr:g"));
    peer.join();
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, make_error_code(Errc::protocol_error)) << got.error().message;
}

TEST_F(RedisClientTest, ReplyOverTheLimitIsAnErrorAndTheClientRecovers) {
    RedisServer server;
    RedisOptions options = relaxed();
    options.limits.max_reply_bytes = 1 << 20;
    options.backoff_initial = 10ms;
    RedisClient client(ioc.get_executor(), url_of(server.url()), options);
    ASSERT_TRUE(run(client.set("tr:huge", std::string(2 << 20, 'x'), 60s)));
    auto got = run(client.get("tr:huge"));
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code, make_error_code(Errc::protocol_error));
    EXPECT_TRUE(contains(got.error().message, "over 1048576 bytes")) << got.error().message;

    std::this_thread::sleep_for(50ms);  // past the backoff (not a timing assertion)
    auto small = run(client.set("tr:small", "s", 60s));
    EXPECT_TRUE(small) << small.error().message;
    EXPECT_EQ(client.stats().connects, 2u);
}

// A cancelled call ends at once; its reply is dropped and later calls on the connection
// still get their own.
TEST_F(RedisClientTest, CancellationEndsOnlyThatCall) {
    RedisServer server;
    RedisClient client(ioc.get_executor(), url_of(server.url()), relaxed());
    ASSERT_TRUE(run(client.set("tr:c", "after", 60s)));

    asio::cancellation_signal signal;
    std::optional<Result<RedisReply>> blocked;
    std::optional<Result<std::optional<std::string>>> next;
    asio::co_spawn(
        ioc, client.command({"BLPOP", "tr:nolist", "0.3"}),
        asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr, Result<RedisReply> r) {
            blocked.emplace(std::move(r));
        }));
    asio::co_spawn(ioc, client.get("tr:c"),
                   [&](std::exception_ptr, Result<std::optional<std::string>> r) {
                       next.emplace(std::move(r));
                   });
    run_for(30ms);
    ASSERT_FALSE(blocked.has_value());
    const auto t0 = Clock::now();
    signal.emit(asio::cancellation_type::terminal);
    run_until([&] { return blocked.has_value(); });
    EXPECT_LT(ms_since(t0), 150.0);  // not after BLPOP's 300 ms
    ASSERT_FALSE(*blocked);
    EXPECT_EQ(blocked->error().code, make_error_code(Errc::cancelled));

    run_until([&] { return next.has_value(); });
    ASSERT_TRUE(*next) << (*next).error().message;
    EXPECT_EQ((*next)->value_or(""), "after");
    EXPECT_EQ(client.stats().connects, 1u);
}

TEST_F(RedisClientTest, DestroyingTheClientCancelsWaitingCalls) {
    SilentListener listener;
    auto client =
        std::make_unique<RedisClient>(ioc.get_executor(), url_of(listener.url()), relaxed());
    std::vector<std::optional<Result<std::optional<std::string>>>> results(3);
    for (auto& slot : results) {
        asio::co_spawn(ioc, client->get("tr:d"),
                       [&slot](std::exception_ptr, Result<std::optional<std::string>> r) {
                           slot.emplace(std::move(r));
                       });
    }
    run_for(50ms);
    client.reset();
    run_until([&] {
        for (const auto& r : results) {
            if (!r) return false;
        }
        return true;
    });
    for (const auto& r : results) {
        ASSERT_FALSE(*r);
        EXPECT_EQ((*r).error().code, make_error_code(Errc::cancelled)) << (*r).error().message;
    }
}

}  // namespace
}  // namespace tokenradar::net
