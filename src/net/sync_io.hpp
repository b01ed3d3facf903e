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
#include <boost/version.hpp>

// DrainingBuffer's and AwaitedBuffer's receive operation (below) replaces a class of this
// Boost's Asio.
#if BOOST_VERSION / 100 != 1081
#error "sync_io.hpp: the buffers' receive operation is written for Boost 1.81; port it"
#endif

// Not self-contained (it needs socket_base from the headers above), so kept after them.
// clang-format off
#include <boost/asio/detail/reactive_socket_recv_op.hpp>
// clang-format on

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>

namespace tokenradar::net::detail {

// One buffer for a stream socket read that counts a short read as having drained the
// socket, as nginx does. Asio (1.81) tries a read speculatively before it waits for
// readiness unless the descriptor is marked drained, and its receive marks it drained only at
// EOF; so every wait for bytes not there yet (the next request after a response) began with
// a recv() that returned EAGAIN: ~1 call per proxied request at c=64, each ~1.2 us on this
// VM. Marked drained, the next read is queued without a syscall; the edge-triggered epoll
// registration reports the next bytes, which marks the descriptor readable again. A short
// TCP read means the receive queue was empty when it returned (but at an urgent mark, which
// only a client sending MSG_OOB meets, stalling its own connection until its timeout); bytes
// that arrive after it raise a new edge, so none are missed.
//
// A FIN does not: one that came with the bytes (or before the read) raised no edge of its
// own, so a read queued after the short one sees it only at its timeout. Hence only the
// server's reads use it, where that peer is a client that half-closed: after a whole request
// its connection is closed at the idle timeout, as an idle keep-alive client's is; after a
// truncated one, at the header timeout (it used to be closed at once, unanswered either
// way); while a handler runs, the peer watch (a wait, which re-arms the registration) still
// sees the close at once. A client of an upstream must see the close at once (a body delimited by
// it, a truncated response), so its reads keep Asio's speculative receive.
struct DrainingBuffer : asio::mutable_buffer {
    explicit DrainingBuffer(asio::mutable_buffer b) noexcept : asio::mutable_buffer(b) {}
    static bool attempt() noexcept { return true; }
    bool drained_by(std::size_t received) const noexcept {
        return received == 0 || received < size();  // EOF and errors read 0 bytes
    }
};

// One buffer for the first read of a response whose request this thread has just written
// inline, on an io_context that only this thread runs. Asio tries a receive as the read
// starts; here that try mostly finds nothing (EAGAIN 0.91 times per proxied request at c=64,
// ~1.2 us each on this VM): the upstream has had no time to answer. So the read's first
// attempt, the one Asio makes as it starts, reports "not done" without a call, and the read
// waits for epoll. No byte is missed: whatever arrived since the request went out raised an
// edge that epoll still holds, since nothing has polled since (only this thread runs the
// io_context, and the write did not wait). That first attempt is the one made at the start
// as long as the descriptor is not marked drained, which a client socket never is (only EOF
// marks it, and a connection that read EOF is not reused).
//
// A FIN that came while the connection sat in the pool raised its edge then, unseen if the
// reactor polled meanwhile. After a full close the request draws the peer's reset, a new
// edge: the retry of a stale connection follows at once. After a half-close (the peer still
// reads), only the headers timeout ends the wait; HttpClient::open then marks the host, whose
// later reuses ClientPool::take peeks.
struct AwaitedBuffer : asio::mutable_buffer {
    explicit AwaitedBuffer(asio::mutable_buffer b) noexcept : asio::mutable_buffer(b) {}
    bool attempt() noexcept { return std::exchange(started, true); }  // not at the start
    static bool drained_by(std::size_t received) noexcept { return received == 0; }  // as Asio's
    bool started = false;
};

// The receive operation Asio builds for one of the buffers above: Asio's own
// (boost/asio/detail/reactive_socket_recv_op.hpp, Boost 1.81, for one buffer) but that the
// buffer says whether to try the socket (`attempt()`) and whether a receive leaves the
// descriptor drained (`drained_by()`, Asio's done_and_exhausted). No public API gets either:
// Asio 1.81 marks a descriptor drained only when a receive returns EOF, always tries a
// receive as a read starts unless so marked, and async_wait(wait_read) re-arms the
// registration with an epoll_ctl. It replaces an Asio detail class, so it is written for one
// Boost version, and any other fails the build (above; CMake asks for 1.81 exactly too). To
// port: compare that header of the new Boost with this class, then run the DrainingBuffer
// and AwaitedBuffer tests (sync_io_test.cpp).
template <class Buffer>
class BufferRecvOp : public asio::detail::reactor_op {
  public:
    BufferRecvOp(const boost::system::error_code& success_ec, asio::detail::socket_type socket,
                 asio::detail::socket_ops::state_type state, const Buffer& buffer,
                 asio::socket_base::message_flags flags, func_type complete_func)
        : reactor_op(success_ec, &BufferRecvOp::do_perform, complete_func),
          socket_(socket),
          state_(state),
          buffer_(buffer),
          flags_(flags) {}

    static status do_perform(reactor_op* base) {
        namespace socket_ops = asio::detail::socket_ops;
        auto* o = static_cast<BufferRecvOp*>(base);
        if (!o->buffer_.attempt()) return not_done;
        const bool stream = (o->state_ & socket_ops::stream_oriented) != 0;
        if (!socket_ops::non_blocking_recv1(o->socket_, o->buffer_.data(), o->buffer_.size(),
                                            o->flags_, stream, o->ec_, o->bytes_transferred_)) {
            return not_done;
        }
        BOOST_ASIO_HANDLER_REACTOR_OPERATION(
            (*o, "non_blocking_recv", o->ec_, o->bytes_transferred_));
        return stream && o->buffer_.drained_by(o->bytes_transferred_) ? done_and_exhausted : done;
    }

  private:
    asio::detail::socket_type socket_;
    asio::detail::socket_ops::state_type state_;
    Buffer buffer_;
    asio::socket_base::message_flags flags_;
};

}  // namespace tokenradar::net::detail

namespace boost::asio::detail {
template <>
class reactive_socket_recv_op_base<tokenradar::net::detail::DrainingBuffer>
    : public tokenradar::net::detail::BufferRecvOp<tokenradar::net::detail::DrainingBuffer> {
  public:
    using BufferRecvOp::BufferRecvOp;
};

template <>
class reactive_socket_recv_op_base<tokenradar::net::detail::AwaitedBuffer>
    : public tokenradar::net::detail::BufferRecvOp<tokenradar::net::detail::AwaitedBuffer> {
  public:
    using BufferRecvOp::BufferRecvOp;
};
}  // namespace boost::asio::detail
namespace tokenradar::net::detail {

enum class ParseUntil { header, message };

// Whether a short read marks the socket drained (DrainingBuffer: servers) or the next read
// tries the socket before it waits (Asio's own receive: clients).
enum class ShortRead { drains, try_again };

// Whether a read starts with a try of the socket (Asio's way) or waits for epoll first
// (AwaitedBuffer: epoll still holds the edge of any bytes there).
enum class FirstAttempt { try_socket, await_epoll };

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

// Reads more of a message into `buffer`, straight from the socket (or a TLS stream over it):
// Beast's async_read and async_read_header run two layers of composed operations (three over a
// beast::tcp_stream, as the client's plain connections were), each copying the executor and
// tracking work: ~3% of the gateway's CPU at c=64. Reads as much as Beast would: the buffer's free
// capacity, at least 512 bytes, at most 64 KiB, within its max_size (buffer_overflow when full).
// EOF is what Beast makes of it: end_of_stream before any byte of the message, else the parser's
// put_eof() (which ends a body delimited by the close, or reports partial_message).
template <bool isRequest, class Stream>
asio::awaitable<boost::system::error_code> read_more(Stream& socket, beast::flat_buffer& buffer,
                                                     beast::http::basic_parser<isRequest>& parser,
                                                     ShortRead short_read, FirstAttempt first) {
    constexpr std::size_t kMinRead = 512;
    constexpr std::size_t kMaxRead = 64 * 1024;
    const std::size_t room =
        std::min(std::clamp(buffer.capacity() - buffer.size(), kMinRead, kMaxRead),
                 buffer.max_size() - buffer.size());
    if (room == 0) co_return beast::http::error::buffer_overflow;
    const asio::mutable_buffer into = buffer.prepare(room);
    boost::system::error_code ec;
    std::size_t n = 0;
    // if/else: GCC 12 mis-compiles co_await inside ?:. A first read that awaits epoll is a
    // client's, whose short reads never drain.
    if (first == FirstAttempt::await_epoll) {
        std::tie(ec, n) = co_await socket.async_read_some(AwaitedBuffer(into), use_nothrow);
    } else if (short_read == ShortRead::drains) {
        std::tie(ec, n) = co_await socket.async_read_some(DrainingBuffer(into), use_nothrow);
    } else {
        std::tie(ec, n) = co_await socket.async_read_some(into, use_nothrow);
    }
    buffer.commit(n);
    if (ec == asio::error::eof) {
        if (!parser.got_some()) co_return beast::http::error::end_of_stream;
        ec = {};
        parser.put_eof(ec);
    }
    co_return ec;
}

// Reads and parses until the parser has its header (or whole message), as Beast's
// async_read_header (async_read) would: what `buffer` holds first, then read_more(). `first`
// applies to the first read, when `buffer` held nothing.
template <bool isRequest, class Stream>
asio::awaitable<boost::system::error_code> read_until(
    Stream& socket, beast::flat_buffer& buffer, beast::http::basic_parser<isRequest>& parser,
    ParseUntil until, ShortRead short_read, FirstAttempt first = FirstAttempt::try_socket) {
    boost::system::error_code ec;
    if (buffer.size() != 0) first = FirstAttempt::try_socket;
    while (!parse_buffered(parser, buffer, until, ec)) {
        ec = co_await read_more(socket, buffer, parser, short_read, first);
        if (ec) co_return ec;
        first = FirstAttempt::try_socket;
    }
    co_return ec;
}

}  // namespace tokenradar::net::detail
