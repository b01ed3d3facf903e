#include <tokenradar/net/redis_protocol.hpp>

#include "url_parts.hpp"

#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <new>
#include <utility>

namespace tokenradar::net {

std::string RedisUrl::authority() const {
    if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
    return fmt::format("{}:{}", host, port);
}

namespace {

// The URL as messages may show it: everything between "//" and the last '@' may be user
// info, which may hold the password (even in a URL too malformed to parse).
std::string redacted_url(std::string_view text) {
    const std::size_t at = text.rfind('@');
    if (at == std::string_view::npos) return std::string(text);
    const std::size_t slashes = text.find("//");
    const std::size_t from = slashes != std::string_view::npos && slashes < at ? slashes + 2 : 0;
    std::string out(text.substr(0, from));
    out += "[redacted]";
    out += text.substr(at);
    return out;
}

}  // namespace

Result<RedisUrl> parse_redis_url(std::string_view text) {
    auto fail = [&](std::string_view why) {
        return Error(Errc::bad_request, fmt::format("redis url '{}': {} (expected "
                                                    "redis://[[user]:password@]host[:port][/db])",
                                                    redacted_url(text), why));
    };
    auto parsed = boost::urls::parse_uri(text);
    if (!parsed) return fail(fmt::format("not an absolute URL ({})", parsed.error().message()));
    const boost::urls::url_view& u = *parsed;

    const std::string scheme = detail::lowercase_scheme(u);
    if (scheme == "rediss") return fail("TLS (rediss://) is not supported");
    if (scheme != "redis") return fail("the scheme must be redis");
    if (!u.has_authority() || u.encoded_host().empty()) return fail("missing host");

    RedisUrl out;
    out.host = detail::url_host(u);
    const auto port = detail::url_port(u, out.port);
    if (!port) return fail("the port must be 1-65535");
    out.port = *port;
    if (u.has_userinfo()) {
        out.user = u.user();
        if (!u.has_password() || u.password().empty()) {
            return fail("a user name needs a password (user:password@)");
        }
        out.password = Secret(std::string(u.password()));
    }
    const std::string path = u.path();
    if (!path.empty() && path != "/") {
        const std::string_view digits = std::string_view(path).substr(1);
        unsigned db = 0;
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
        if (path[0] != '/' || digits.empty() || ec != std::errc() ||
            ptr != digits.data() + digits.size() || digits.size() > 9) {
            return fail("the path must be a database number such as /0 or /1");
        }
        out.db = db;
    }
    if (u.has_query() || u.has_fragment()) return fail("query and fragment are not supported");
    return out;
}

void append_redis_command(std::string& out, std::span<const std::string_view> argv) {
    constexpr std::size_t kInline = 8;
    std::array<const char*, kInline> inline_args{};
    std::array<std::size_t, kInline> inline_lengths{};
    std::vector<const char*> args;
    std::vector<std::size_t> lengths;
    const char** arg_ptr = inline_args.data();
    std::size_t* length_ptr = inline_lengths.data();
    if (argv.size() > kInline) {
        args.resize(argv.size());
        lengths.resize(argv.size());
        arg_ptr = args.data();
        length_ptr = lengths.data();
    }
    for (std::size_t i = 0; i < argv.size(); ++i) {
        arg_ptr[i] = argv[i].data();
        length_ptr[i] = argv[i].size();
    }
    char* command = nullptr;
    const int n =
        redisFormatCommandArgv(&command, static_cast<int>(argv.size()), arg_ptr, length_ptr);
    if (n < 0 || command == nullptr) throw std::bad_alloc();  // hiredis's only failure
    out.append(command, static_cast<std::size_t>(n));
    redisFreeCommand(command);
}

// ---------------------------------------------------------------------------------------
// RedisReplyReader: hiredis calls these to build each reply object. A child is owned by its
// parent array from the start; a root is heap-allocated and owned by hiredis until
// redisReaderGetReply hands it over (freeObject is called on roots only). A nullptr return is
// reported by hiredis as "Out of memory": refusal_ says which limit it was.

struct RedisReplyReader::Callbacks {
    static RedisReplyReader& self(const redisReadTask* task) {
        return *static_cast<RedisReplyReader*>(task->privdata);
    }

    static void* adopt(const redisReadTask* task, std::unique_ptr<RedisReply> object) {
        RedisReply* raw = object.get();
        if (task->parent == nullptr) return object.release();
        auto* parent = static_cast<RedisReply*>(task->parent->obj);
        // hiredis fills an array's elements in order, each exactly once.
        if (parent->elements.size() != static_cast<std::size_t>(task->idx)) return nullptr;
        parent->elements.push_back(std::move(object));
        return raw;
    }

    static void* create_string(const redisReadTask* task, char* str, std::size_t len) {
        RedisReplyReader& r = self(task);
        r.reply_bytes_ += len;
        if (r.reply_bytes_ > r.limits_.max_reply_bytes) {
            r.refusal_ = fmt::format("reply over {} bytes", r.limits_.max_reply_bytes);
            return nullptr;
        }
        auto object = std::make_unique<RedisReply>();
        switch (task->type) {
            case REDIS_REPLY_STATUS:
                object->type = RedisReply::Type::status;
                break;
            case REDIS_REPLY_ERROR:
                object->type = RedisReply::Type::error;
                break;
            default:
                object->type = RedisReply::Type::string;
                break;
        }
        object->str.assign(str, len);
        return adopt(task, std::move(object));
    }

    static void* create_array(const redisReadTask* task, int elements) {
        RedisReplyReader& r = self(task);
        if (elements < 0 || static_cast<std::size_t>(elements) > r.limits_.max_array_elements) {
            r.refusal_ = fmt::format("array of {} elements (at most {})", elements,
                                     r.limits_.max_array_elements);
            return nullptr;
        }
        auto object = std::make_unique<RedisReply>();
        object->type = RedisReply::Type::array;
        // Reserved up to a bound: the count is the peer's word, the elements are not here yet.
        object->elements.reserve(std::min<std::size_t>(static_cast<std::size_t>(elements), 64));
        return adopt(task, std::move(object));
    }

    static void* create_integer(const redisReadTask* task, long long value) {
        auto object = std::make_unique<RedisReply>();
        object->type = RedisReply::Type::integer;
        object->integer = value;
        return adopt(task, std::move(object));
    }

    static void* create_nil(const redisReadTask* task) {
        return adopt(task, std::make_unique<RedisReply>());
    }

    static void free_object(void* object) { delete static_cast<RedisReply*>(object); }
};

namespace {

// hiredis takes a non-const pointer and never writes through it.
redisReplyObjectFunctions reply_functions = {
    RedisReplyReader::Callbacks::create_string, RedisReplyReader::Callbacks::create_array,
    RedisReplyReader::Callbacks::create_integer, RedisReplyReader::Callbacks::create_nil,
    RedisReplyReader::Callbacks::free_object};

}  // namespace

RedisReplyReader::RedisReplyReader(RedisReaderLimits limits)
    : limits_(limits), reader_(redisReaderCreateWithFunctions(&reply_functions)) {
    if (reader_ == nullptr) throw std::bad_alloc();
    reader_->privdata = this;
}

RedisReplyReader::~RedisReplyReader() { redisReaderFree(reader_); }

Error RedisReplyReader::fail(std::string message) {
    failed_ = true;
    error_ = Error(Errc::protocol_error, std::move(message));
    return error_;
}

void RedisReplyReader::feed(std::string_view bytes) {
    if (failed_ || bytes.empty()) return;
    if (redisReaderFeed(reader_, bytes.data(), bytes.size()) != REDIS_OK) {
        fail(fmt::format("malformed reply: {}", reader_->errstr));
    }
}

Result<std::optional<RedisReply>> RedisReplyReader::next() {
    if (failed_) return error_;
    void* object = nullptr;
    if (redisReaderGetReply(reader_, &object) != REDIS_OK) {
        if (!refusal_.empty()) return fail(refusal_);
        return fail(fmt::format("malformed reply: {}", reader_->errstr));
    }
    if (object == nullptr) {
        // Everything still buffered belongs to the reply being parsed.
        if (reply_bytes_ + (reader_->len - reader_->pos) > limits_.max_reply_bytes) {
            return fail(fmt::format("reply over {} bytes", limits_.max_reply_bytes));
        }
        return std::optional<RedisReply>();
    }
    reply_bytes_ = 0;
    std::unique_ptr<RedisReply> root(static_cast<RedisReply*>(object));
    return std::optional<RedisReply>(std::move(*root));
}

}  // namespace tokenradar::net
