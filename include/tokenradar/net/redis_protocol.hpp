#pragma once
// Redis's wire protocol (RESP2) without I/O, for RedisClient (redis_client.hpp): the
// `redis://` URL, command encoding and a bounded reply reader. hiredis encodes the commands
// (redisFormatCommandArgv) and parses the replies (redisReader); this adds our reply type
// and the limits a peer's bytes must not exceed. Fuzzed by fuzz_redis_reply.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/secret.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;  // hiredis/read.h, kept out of this header

namespace tokenradar::net {

// redis://[[user]:password@]host[:port][/db]
struct RedisUrl {
    std::string host;  // without brackets for IPv6 literals
    std::uint16_t port = 6379;
    std::string user;  // empty: AUTH with the password alone (Redis before ACLs, "default")
    Secret password;   // empty: no AUTH
    unsigned db = 0;   // SELECT on connect when not 0

    // "host:port" for messages and logs; never the user info.
    std::string authority() const;
};

// Errc::bad_request saying what is wrong and what is expected ("redis url
// 'redis://[redacted]@h:1/x': the path must be a database number, /0 to /15..."). The URL in
// messages has its user info replaced by "[redacted]".
Result<RedisUrl> parse_redis_url(std::string_view text);

// Appends one command in RESP (an array of bulk strings: binary-safe) to `out`.
void append_redis_command(std::string& out, std::span<const std::string_view> argv);

struct RedisReply {
    enum class Type : std::uint8_t { string, status, error, integer, nil, array };
    Type type = Type::nil;
    std::string str;        // string, status, error (without the leading '-')
    long long integer = 0;  // integer
    std::vector<std::unique_ptr<RedisReply>> elements;  // array
};

struct RedisReaderLimits {
    // A reply's string bytes plus its bytes still buffered unparsed: larger is refused
    // before it is all read.
    std::size_t max_reply_bytes = std::size_t{16} << 20;
    std::size_t max_array_elements = std::size_t{1} << 16;  // per array
};

// Replies, in order, from the bytes a connection received. After an error it stays failed:
// the connection's stream position is lost, close it.
class RedisReplyReader {
  public:
    explicit RedisReplyReader(RedisReaderLimits limits = {});
    ~RedisReplyReader();
    RedisReplyReader(const RedisReplyReader&) = delete;
    RedisReplyReader& operator=(const RedisReplyReader&) = delete;

    // Appends received bytes (copied). Feed, then call next() until it returns nullopt.
    void feed(std::string_view bytes);
    // The next complete reply; nullopt when more bytes are needed. Errc::protocol_error for
    // bytes that are not RESP, a reply over the limits, or arrays nested more than 8 deep.
    Result<std::optional<RedisReply>> next();
    bool failed() const noexcept { return failed_; }

    // For hiredis's reply callbacks (redis_protocol.cpp).
    struct Callbacks;

  private:
    Error fail(std::string message);

    RedisReaderLimits limits_;
    redisReader* reader_ = nullptr;
    std::size_t reply_bytes_ = 0;  // string bytes of the reply being parsed
    std::string refusal_;          // why a callback refused an object (a limit)
    bool failed_ = false;
    Error error_;
};

}  // namespace tokenradar::net
