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

net::asio::awaitable<void> heartbeat(std::shared_ptr<ClientStream> s, std::chrono::milliseconds interval) {
    while (!s->stopped) {
        s->heartbeat_timer.expires_at(SteadyClock::time_point(Nanos(s->last_write_ns)) + interval);
        co_await s->heartbeat_timer.async_wait(net::use_nothrow);
        if (s->stopped) break;
        // Woken early (a write moved last_write_ns) or the relay is writing: wait again.
        if (s->writing || steady_now_ns() - s->last_write_ns < Nanos(interval).count()) continue;
        s->writing = true;
        const auto ec = co_await s->writer->write_chunk(kHeartbeat);
        s->writing = false;
        s->last_write_ns = steady_now_ns();
        s->write_done.cancel();
        if (ec) break;
    }
}

}  // namespace

ClientStream::ClientStream(net::asio::any_io_executor ex, net::ResponseWriter& w)
    : writer(&w), heartbeat_timer(ex), write_done(ex), last_write_ns(steady_now_ns()) {}

net::asio::awaitable<boost::system::error_code> write_client(ClientStream& s, std::string_view bytes) {
    co_await wait_for_heartbeat_write(s);
    s.writing = true;
    const auto ec = co_await s.writer->write_chunk(bytes);
    s.writing = false;
    s.last_write_ns = steady_now_ns();
    co_return ec;
}

void start_heartbeat(const std::shared_ptr<ClientStream>& stream, std::chrono::milliseconds interval) {
    if (interval.count() <= 0) return;
    net::asio::co_spawn(stream->heartbeat_timer.get_executor(), heartbeat(stream, interval),
                        [](const std::exception_ptr& e) {
                            if (e) spdlog::error("stream heartbeat failed");
                        });
}

net::asio::awaitable<void> stop_heartbeat(ClientStream& s) {
    s.stopped = true;
    s.heartbeat_timer.cancel();
    co_await wait_for_heartbeat_write(s);
}

}  // namespace tokenradar::gateway
