// Feeds arbitrary bytes to RedisReplyReader, as a connection would receive them: in pieces
// whose size the first byte picks, and all at once. Splitting must never change a reply;
// every reply must respect the limits; failures are protocol errors and stay failures. Then
// the bytes, cut into arguments at each '|', go through append_redis_command and must read
// back as the same arguments.

#include <tokenradar/net/redis_protocol.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using tokenradar::Errc;
using tokenradar::make_error_code;
using tokenradar::net::RedisReaderLimits;
using tokenradar::net::RedisReply;
using tokenradar::net::RedisReplyReader;

constexpr RedisReaderLimits kLimits{.max_reply_bytes = 4096, .max_array_elements = 16};

void check(bool ok) {
    if (!ok) std::abort();
}

// Depth and the limits; the string bytes it holds.
std::size_t check_reply(const RedisReply& r, int depth) {
    check(depth <= 9);  // hiredis: at most 8 levels of arrays, then a leaf
    std::size_t bytes = r.str.size();
    if (r.type != RedisReply::Type::array) {
        check(r.elements.empty());
        return bytes;
    }
    check(r.elements.size() <= kLimits.max_array_elements);
    for (const auto& e : r.elements) {
        check(e != nullptr);
        bytes += check_reply(*e, depth + 1);
    }
    return bytes;
}

bool same(const RedisReply& a, const RedisReply& b) {
    if (a.type != b.type || a.str != b.str || a.integer != b.integer ||
        a.elements.size() != b.elements.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.elements.size(); ++i) {
        if (!same(*a.elements[i], *b.elements[i])) return false;
    }
    return true;
}

struct Outcome {
    std::vector<RedisReply> replies;
    bool failed = false;
};

Outcome read_all(std::string_view bytes, std::size_t piece) {
    RedisReplyReader reader(kLimits);
    Outcome out;
    for (std::size_t at = 0; at < bytes.size() && !out.failed; at += piece) {
        reader.feed(bytes.substr(at, piece));
        for (;;) {
            auto next = reader.next();
            if (!next) {
                check(next.error().code == make_error_code(Errc::protocol_error));
                check(reader.failed());
                out.failed = true;
                break;
            }
            if (!next->has_value()) break;
            check(check_reply(**next, 1) <= kLimits.max_reply_bytes);
            out.replies.push_back(std::move(**next));
        }
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t piece = 1 + data[0] % 64;
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

    const Outcome split = read_all(bytes, piece);
    const Outcome whole = read_all(bytes, bytes.size() + 1);
    // The limit is checked on what has arrived, so a split feed may fail sooner; the replies
    // both produced must be the same, and without a failure both produced all of them.
    const std::size_t common = std::min(split.replies.size(), whole.replies.size());
    for (std::size_t i = 0; i < common; ++i) check(same(split.replies[i], whole.replies[i]));
    if (!split.failed && !whole.failed) check(split.replies.size() == whole.replies.size());

    std::vector<std::string_view> argv;
    for (std::size_t from = 0;;) {
        const std::size_t bar = bytes.find('|', from);
        argv.push_back(bytes.substr(from, bar - from));
        if (bar == std::string_view::npos) break;
        from = bar + 1;
    }
    std::string encoded;
    tokenradar::net::append_redis_command(encoded, argv);
    RedisReplyReader reader(
        RedisReaderLimits{.max_reply_bytes = encoded.size(), .max_array_elements = argv.size()});
    reader.feed(encoded);
    auto back = reader.next();
    check(back && back->has_value() && (*back)->type == RedisReply::Type::array);
    check((*back)->elements.size() == argv.size());
    for (std::size_t i = 0; i < argv.size(); ++i) {
        check((*back)->elements[i]->type == RedisReply::Type::string);
        check((*back)->elements[i]->str == argv[i]);
    }
    return 0;
}
