#include "client_stream.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>

#include <boost/asio/co_spawn.hpp>

namespace tokenradar::gateway {
namespace {

constexpr std::string_view kHeartbeat = ": keep-alive\n\n";

net::asio::awaitable<void> wait_for_heartbeat_write(ClientStream& s) {
    while (s.writing) {
        s.write_done.expires_at(net::asio::steady_timer::time_point::max());
        co_await s.write_done.async_wait(net::use_nothrow);
    }
}

void arm_heartbeat(const std::shared_ptr<ClientStream>& s, std::chrono::milliseconds interval);

net::asio::awaitable<void> write_heartbeat(std::shared_ptr<ClientStream> s,
                                           std::chrono::milliseconds interval) {
    // Checked again: the relay may have stopped (the writer is then gone) or started a write
    // between the timer's callback and this coroutine's start.
    if (s->stopped) co_return;
    if (s->writing) {
        arm_heartbeat(s, interval);
        co_return;
    }
    s->writing = true;
    const auto ec = co_await s->writer->write_chunk(kHeartbeat);
    s->writing = false;
    s->last_write_ns = steady_now_ns();
    s->write_done.cancel();
    if (!ec && !s->stopped) arm_heartbeat(s, interval);
}

// The heartbeat is a timer with a plain callback; a coroutine is spawned only when a
// heartbeat is due (the upstream has been silent for `interval`), not for every stream.
void arm_heartbeat(const std::shared_ptr<ClientStream>& s, std::chrono::milliseconds interval) {
    s->heartbeat_timer.expires_at(SteadyClock::time_point(Nanos(s->last_write_ns)) + interval);
    s->heartbeat_timer.async_wait([s, interval](const boost::system::error_code&) {
        if (s->stopped) return;
        // Woken early (a write moved last_write_ns) or the relay is writing: wait again.
        if (s->writing || steady_now_ns() - s->last_write_ns < Nanos(interval).count()) {
            arm_heartbeat(s, interval);
            return;
        }
        net::asio::co_spawn(s->heartbeat_timer.get_executor(), write_heartbeat(s, interval),
                            [](const std::exception_ptr& e) {
                                if (e) spdlog::error("stream heartbeat failed");
                            });
    });
}

}  // namespace

ClientStream::ClientStream(const net::asio::any_io_executor& ex, net::ResponseWriter& w)
    : writer(&w), heartbeat_timer(ex), write_done(ex), last_write_ns(steady_now_ns()) {}

net::asio::awaitable<boost::system::error_code> start_client(ClientStream& s,
                                                             const net::HeaderList& headers,
                                                             std::string_view first) {
    co_await wait_for_heartbeat_write(s);
    s.writing = true;
    const auto ec = co_await s.writer->start_stream(boost::beast::http::status::ok,
                                                    "text/event-stream", headers, first);
    s.writing = false;
    s.last_write_ns = steady_now_ns();
    co_return ec;
}

net::asio::awaitable<boost::system::error_code> write_client(ClientStream& s,
                                                             std::string_view bytes) {
    co_await wait_for_heartbeat_write(s);
    s.writing = true;
    const auto ec = co_await s.writer->write_chunk(bytes);
    s.writing = false;
    s.last_write_ns = steady_now_ns();
    co_return ec;
}

void start_heartbeat(const std::shared_ptr<ClientStream>& stream,
                     std::chrono::milliseconds interval) {
    if (interval.count() <= 0) return;
    arm_heartbeat(stream, interval);
}

net::asio::awaitable<void> stop_heartbeat(ClientStream& s) {
    s.stopped = true;
    s.heartbeat_timer.cancel();
    co_await wait_for_heartbeat_write(s);
}

}  // namespace tokenradar::gateway
