#include <tokenradar/net/redis_protocol.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::net {
namespace {

using Type = RedisReply::Type;

TEST(ParseRedisUrl, HostPortAndDefaults) {
    auto u = parse_redis_url("redis://127.0.0.1:6380");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->host, "127.0.0.1");
    EXPECT_EQ(u->port, 6380);
    EXPECT_EQ(u->db, 0u);
    EXPECT_TRUE(u->password.empty());
    EXPECT_TRUE(u->user.empty());
    EXPECT_EQ(u->authority(), "127.0.0.1:6380");

    auto d = parse_redis_url("REDIS://cache.internal");
    ASSERT_TRUE(d) << d.error().message;
    EXPECT_EQ(d->host, "cache.internal");
    EXPECT_EQ(d->port, 6379);

    auto slash = parse_redis_url("redis://h:1/");
    ASSERT_TRUE(slash) << slash.error().message;
    EXPECT_EQ(slash->db, 0u);
}

TEST(ParseRedisUrl, PasswordUserAndDatabase) {
    auto u = parse_redis_url("redis://:p%40ss@[::1]:7000/3");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->authority(), "[::1]:7000");
    EXPECT_EQ(u->password.reveal(), "p@ss");  // percent-decoded
    EXPECT_TRUE(u->user.empty());
    EXPECT_EQ(u->db, 3u);

    auto acl = parse_redis_url("redis://gateway:pw@h:1/0");
    ASSERT_TRUE(acl) << acl.error().message;
    EXPECT_EQ(acl->user, "gateway");
    EXPECT_EQ(acl->password.reveal(), "pw");
}

TEST(ParseRedisUrl, RejectsWithReasonsAndNeverShowsThePassword) {
    struct Case {
        const char* text;
        const char* why;
    };
    for (auto c :
         {Case{"http://h:1", "scheme must be redis"}, Case{"rediss://:topsecret@h:1", "TLS"},
          Case{"redis://", "missing host"}, Case{"redis://:topsecret@h:0", "port must be 1-65535"},
          Case{"redis://:topsecret@h:99999", "port must be 1-65535"},
          Case{"redis://:topsecret@h:1/db1", "database number"},
          Case{"redis://:topsecret@h:1/1/2", "database number"},
          Case{"redis://:topsecret@h:1/-1", "database number"},
          Case{"redis://:topsecret@h:1/?timeout=1", "query"},
          Case{"redis://user@h:1", "needs a password"},
          Case{"redis://user:@h:1", "needs a password"}, Case{"h:1", "scheme must be redis"},
          Case{"not a url", "not an absolute URL"}}) {
        auto u = parse_redis_url(c.text);
        ASSERT_FALSE(u) << c.text;
        EXPECT_EQ(u.error().code, make_error_code(Errc::bad_request));
        EXPECT_NE(u.error().message.find(c.why), std::string::npos) << u.error().message;
        EXPECT_NE(u.error().message.find("redis://[[user]:password@]host"), std::string::npos)
            << u.error().message;
        EXPECT_EQ(u.error().message.find("topsecret"), std::string::npos) << u.error().message;
    }
}

TEST(AppendRedisCommand, BinarySafeArrayOfBulkStrings) {
    std::string out;
    const std::string value("a\0b\r\n", 5);
    const std::array<std::string_view, 3> argv{"SET", "k", value};
    append_redis_command(out, argv);
    const char expected[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\0b\r\n\r\n";
    EXPECT_EQ(out, std::string(expected, sizeof expected - 1));

    // Many arguments (past the inline array) and an empty one.
    std::vector<std::string_view> many(20, "x");
    many[7] = "";
    std::string more;
    append_redis_command(more, many);
    RedisReplyReader reader;
    reader.feed(more);
    auto parsed = reader.next();
    ASSERT_TRUE(parsed) << parsed.error().message;
    ASSERT_TRUE(parsed->has_value());
    const RedisReply& array = **parsed;
    ASSERT_EQ(array.type, Type::array);
    ASSERT_EQ(array.elements.size(), 20u);
    EXPECT_EQ(array.elements[7]->str, "");
    EXPECT_EQ(array.elements[19]->str, "x");
}

TEST(RedisReplyReader, EveryTypeFedByteByByte) {
    const std::string bytes =
        "+OK\r\n-ERR wrong\r\n:-42\r\n$-1\r\n$0\r\n\r\n$5\r\nab\r\nc\r\n*-1\r\n"
        "*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n+s\r\n*0\r\n";
    RedisReplyReader reader;
    std::vector<RedisReply> replies;
    for (char c : bytes) {
        reader.feed(std::string_view(&c, 1));
        for (;;) {
            auto next = reader.next();
            ASSERT_TRUE(next) << next.error().message;
            if (!next->has_value()) break;
            replies.push_back(std::move(**next));
        }
    }
    ASSERT_EQ(replies.size(), 9u);
    EXPECT_EQ(replies[0].type, Type::status);
    EXPECT_EQ(replies[0].str, "OK");
    EXPECT_EQ(replies[1].type, Type::error);
    EXPECT_EQ(replies[1].str, "ERR wrong");
    EXPECT_EQ(replies[2].type, Type::integer);
    EXPECT_EQ(replies[2].integer, -42);
    EXPECT_EQ(replies[3].type, Type::nil);
    EXPECT_EQ(replies[4].type, Type::string);
    EXPECT_EQ(replies[4].str, "");
    EXPECT_EQ(replies[5].str, "ab\r\nc");
    EXPECT_EQ(replies[6].type, Type::nil);
    ASSERT_EQ(replies[7].type, Type::array);
    ASSERT_EQ(replies[7].elements.size(), 3u);
    EXPECT_EQ(replies[7].elements[0]->integer, 1);
    ASSERT_EQ(replies[7].elements[1]->elements.size(), 2u);
    EXPECT_EQ(replies[7].elements[1]->elements[0]->str, "x");
    EXPECT_EQ(replies[7].elements[1]->elements[1]->type, Type::nil);
    EXPECT_EQ(replies[7].elements[2]->str, "s");
    EXPECT_EQ(replies[8].type, Type::array);
    EXPECT_TRUE(replies[8].elements.empty());
    EXPECT_FALSE(reader.failed());
}

TEST(RedisReplyReader, GarbageIsAProtocolErrorAndStaysOne) {
    RedisReplyReader reader;
    reader.feed("HTTP/1.1 400 Bad Request\r\n");
    auto next = reader.next();
    ASSERT_FALSE(next);
    EXPECT_EQ(next.error().code, make_error_code(Errc::protocol_error));
    EXPECT_TRUE(reader.failed());
    reader.feed("+OK\r\n");
    EXPECT_FALSE(reader.next());
}

TEST(RedisReplyReader, RefusesABulkOverTheLimitBeforeItIsAllThere) {
    RedisReplyReader reader(RedisReaderLimits{.max_reply_bytes = 1000});
    reader.feed("$5000\r\n");
    auto header = reader.next();
    ASSERT_TRUE(header) << header.error().message;
    EXPECT_FALSE(header->has_value());
    reader.feed(std::string(1200, 'x'));
    auto over = reader.next();
    ASSERT_FALSE(over);
    EXPECT_NE(over.error().message.find("over 1000 bytes"), std::string::npos)
        << over.error().message;

    // Split over array elements that each fit.
    RedisReplyReader elements(RedisReaderLimits{.max_reply_bytes = 1000});
    std::string bytes = "*3\r\n";
    for (int i = 0; i < 3; ++i) bytes += "$400\r\n" + std::string(400, 'y') + "\r\n";
    elements.feed(bytes);
    auto refused = elements.next();
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("over 1000 bytes"), std::string::npos)
        << refused.error().message;

    // At the limit is fine.
    RedisReplyReader exact(RedisReaderLimits{.max_reply_bytes = 1000});
    exact.feed("$1000\r\n" + std::string(1000, 'z') + "\r\n");
    auto fits = exact.next();
    ASSERT_TRUE(fits) << fits.error().message;
    ASSERT_TRUE(fits->has_value());
    EXPECT_EQ((*fits)->str.size(), 1000u);
}

TEST(RedisReplyReader, RefusesLongArraysAndDeepNesting) {
    RedisReplyReader reader(RedisReaderLimits{.max_array_elements = 4});
    reader.feed("*5\r\n");
    auto next = reader.next();
    ASSERT_FALSE(next);
    EXPECT_NE(next.error().message.find("array of 5 elements"), std::string::npos)
        << next.error().message;

    RedisReplyReader deep;
    deep.feed("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n");
    auto nested = deep.next();
    ASSERT_FALSE(nested);
    EXPECT_EQ(nested.error().code, make_error_code(Errc::protocol_error));

    RedisReplyReader huge;
    huge.feed("*99999999999\r\n");
    EXPECT_FALSE(huge.next());
}

}  // namespace
}  // namespace tokenradar::net
