#pragma once
// Private to net: the synchronous first step of a read or write that often needs no waiting.
// An Asio operation that completes at once (bytes already buffered, a send the kernel takes
// whole) still posts its completion: one more trip through the scheduler, which also polls
// epoll (epoll_wait) between handlers, plus a coroutine suspend and resume. On this VM a
// small gateway request made 5 such trips; these helpers do the work inline and leave only
// what must wait to the asynchronous operation, which continues where they stopped.
//
// Sockets must be in non-blocking mode (socket.non_blocking(true)): a write then stops with
// would_block instead of blocking the thread.

#include <tokenradar/net/asio.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>

namespace tokenradar::net::detail {

enum class ParseUntil { header, message };

// Feeds the bytes `buffer` holds to `parser` until it has its header (or whole message),
// needs more bytes, or fails. Returns true when no read is needed now: done, or failed with
// `ec` set (what Beast's read would have reported for the same bytes); false with `ec` clear
// when more bytes must be read (the bytes used so far are consumed from `buffer`).
template <bool isRequest>
bool parse_buffered(beast::http::basic_parser<isRequest>& parser, beast::flat_buffer& buffer,
                    ParseUntil until, boost::system::error_code& ec) {
    ec = {};
    for (;;) {
        if (until == ParseUntil::header ? parser.is_header_done() : parser.is_done()) return true;
        if (buffer.size() == 0) return false;
        const std::size_t used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == beast::http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec) return true;
        if (used == 0) return false;
    }
}

inline bool would_block(const boost::system::error_code& ec) {
    return ec == asio::error::would_block || ec == asio::error::try_again;
}

// Writes what the non-blocking socket takes of a buffer sequence now: true when all of it
// was written or the write failed; false when `rest` (consumed by what was written) must go
// through asio::async_write.
template <class SyncStream, class Buffers>
bool write_now(SyncStream& stream, beast::buffers_suffix<Buffers>& rest,
               boost::system::error_code& ec) {
    const std::size_t n = asio::write(stream, rest, ec);
    rest.consume(n);
    if (!would_block(ec)) return true;
    ec = {};
    return false;
}

// Reads more of a message into `buffer`, straight from the socket: Beast's async_read and
// async_read_header run two layers of composed operations (three over a beast::tcp_stream,
// as the client's plain connections were), each copying the executor and tracking work:
// ~3% of the gateway's CPU at c=64. Reads
// as much as Beast would: the buffer's free capacity, at least 512 bytes, at most 64 KiB,
// within its max_size (buffer_overflow when full). EOF is what Beast makes of it:
// end_of_stream before any byte of the message, else the parser's put_eof() (which ends a
// body delimited by the close, or reports partial_message).
template <bool isRequest>
asio::awaitable<boost::system::error_code> read_more(asio::ip::tcp::socket& socket,
                                                     beast::flat_buffer& buffer,
                                                     beast::http::basic_parser<isRequest>& parser) {
    constexpr std::size_t kMinRead = 512;
    constexpr std::size_t kMaxRead = 64 * 1024;
    const std::size_t room =
        std::min(std::clamp(buffer.capacity() - buffer.size(), kMinRead, kMaxRead),
                 buffer.max_size() - buffer.size());
    if (room == 0) co_return beast::http::error::buffer_overflow;
    auto [ec, n] = co_await socket.async_read_some(buffer.prepare(room), use_nothrow);
    buffer.commit(n);
    if (ec == asio::error::eof) {
        if (!parser.got_some()) co_return beast::http::error::end_of_stream;
        ec = {};
        parser.put_eof(ec);
    }
    co_return ec;
}

// Reads and parses until the parser has its header (or whole message), as Beast's
// async_read_header (async_read) would: what `buffer` holds first, then read_more().
template <bool isRequest>
asio::awaitable<boost::system::error_code> read_until(asio::ip::tcp::socket& socket,
                                                      beast::flat_buffer& buffer,
                                                      beast::http::basic_parser<isRequest>& parser,
                                                      ParseUntil until) {
    boost::system::error_code ec;
    while (!parse_buffered(parser, buffer, until, ec)) {
        ec = co_await read_more(socket, buffer, parser);
        if (ec) co_return ec;
    }
    co_return ec;
}

}  // namespace tokenradar::net::detail
