// Streams with a hedge or a TTFT deadline. The client hears nothing until one attempt has its
// first token: each attempt runs as its own coroutine (a contender) that opens its upstream
// and reads up to the first token, keeping what it read. The race coroutine waits for the
// first contender with a token, for the hedge delay (then a second upstream gets the same
// request) and for the TTFT deadline (then the attempts so far are given up and the next
// upstream is tried). The winner's stream is relayed from its kept pieces on; every other
// contender is cancelled at once (its socket closed, so the provider stops generating) and
// recorded as `cancelled` (or `timeout_first_token` when the deadline gave it up).
//
// Everything runs on the connection's executor (one thread), so the contenders' state needs
// no locks: the race looks at it and starts its wait without suspending in between, so no
// wake-up (the timer cancelled by a contender that ended) is lost.

#include "relay_attempt.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/dialect/stream_meter.hpp>
#include <tokenradar/net/response_watchdog.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <fmt/format.h>

#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace tokenradar::gateway {
namespace {

namespace asio = net::asio;

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
// A contender keeps at most this much of its stream before its first token (a stream that
// sends that much without a token is answered as it is).
constexpr std::size_t kMaxEarlyBytes = 1024 * 1024;

enum class Outcome { running, first_token, failed, cancelled };

// One attempt of the race; owned by the race until its coroutine has ended.
struct Contender {
    Contender(Gateway::Impl& gw, const RaceRequest& request, route::Pick chosen, int number,
              std::int64_t now, dialect::HttpCall http_call, const net::HeaderList& base)
        : pick(chosen),
          ref(Routing::member(request.model, chosen.member)),
          lease(gw.routing->router(request.model).member(chosen.member),
                request.query.prompt_tokens, now),
          attempt{gw.config.providers[ref.provider],
                  ref.model,
                  gw.client(ref.provider),
                  number,
                  now,
                  request.lookup,
                  chosen.route,
                  lease,
                  request.client_region,
                  request.key},
          call(std::move(http_call)),
          m(start_record(attempt, request.request_id, request.task, true)),
          headers(base) {}

    route::Pick pick;
    const UpstreamRef& ref;
    AttemptLease lease;
    Attempt attempt;
    dialect::HttpCall call;
    Measurement m;
    std::unique_ptr<net::StreamingResponse> response;
    std::vector<EarlyPiece> early;
    net::HeaderList headers;  // the client's base headers, then the upstream's own
    ClientReply reply;        // failed: what the client would get
    bool may_fall_back = true;
    Outcome outcome = Outcome::running;
    bool given_up = false;  // cancelled by the race: neither a winner nor worth waiting for
    RequestStatus give_up_status = RequestStatus::cancelled;
    asio::cancellation_signal signal;
};

void record_cancelled(Gateway::Impl& gw, Contender& c) {
    c.m.status = c.give_up_status;
    if (!c.m.t.done) c.m.t.done = steady_now_ns();
    record_attempt(gw, c.attempt, std::move(c.m));
    c.outcome = Outcome::cancelled;
}

// Opens the contender's upstream and reads up to its first token (or the end of a stream
// that has none). Its outcome says how it went; a failure is recorded here, a winner's
// record is finished by answer_stream.
awaitable<void> contend(Gateway::Impl* gw, Contender* c) {
    // A spawned coroutine starts with Asio's throw_if_cancelled(true): a give_up() landing
    // while a completion is queued would throw at the next co_await and lose the record.
    co_await asio::this_coro::throw_if_cancelled(false);
    auto opened = co_await open_attempt(c->attempt, c->call, c->m);
    if (!opened) {
        const Error error = opened.error();
        if (error.code == Errc::cancelled) {
            record_cancelled(*gw, *c);
            co_return;
        }
        c->may_fall_back =
            open_failed(*gw, c->attempt, std::move(c->m), error, c->headers, c->reply);
        c->outcome = Outcome::failed;
        co_return;
    }
    c->response = std::move(*opened);
    add_upstream_headers(c->attempt, *c->response, c->headers);
    if (c->response->status() != 200) {
        c->may_fall_back = co_await error_status(*gw, c->attempt, std::move(c->m), *c->response,
                                                 c->headers, c->reply);
        c->outcome = Outcome::failed;
        co_return;
    }
    auto executor = co_await asio::this_coro::executor;
    net::ResponseWatchdog watchdog(
        executor, *c->response,
        SteadyClock::time_point(Nanos(c->m.t.send)) + c->attempt.provider.first_token_timeout);
    dialect::StreamMeter probe(c->attempt.provider.api);
    std::size_t kept = 0;
    while (true) {
        auto piece = co_await c->response->read_some();
        const std::int64_t now = steady_now_ns();
        if (!piece) {
            watchdog.disarm();
            if (piece.error().code == Errc::cancelled && !watchdog.fired()) {
                record_cancelled(*gw, *c);
                co_return;
            }
            const Error error = watchdog.fired() ? Error(Errc::timeout_first_token,
                                                         "no token before the first-token timeout")
                                                 : piece.error();
            c->m.status = status_of(error.code);
            c->m.t.done = now;
            c->reply = reply_for(errc_of(error, Errc::connection_error), error.message, c->attempt);
            c->reply.headers = c->headers;
            record_attempt(*gw, c->attempt, std::move(c->m));
            c->outcome = Outcome::failed;
            co_return;
        }
        // The end of the body, or a token, the terminal event, an error event or bytes that
        // do not parse: this stream is ready to be answered (relay_stream handles each).
        bool ready = piece->empty();
        if (!ready) {
            c->early.push_back({std::string(*piece), now});
            kept += piece->size();
            const auto fed = probe.feed(*piece, now);
            const dialect::StreamAccumulator& acc = probe.accumulator();
            ready = !fed || acc.times().first_token || acc.saw_done() || acc.error() ||
                    kept > kMaxEarlyBytes;
        }
        if (ready) {
            watchdog.disarm();
            if (c->given_up) {  // the race let it go while this piece was on its way
                c->response->cancel();
                record_cancelled(*gw, *c);
                co_return;
            }
            c->outcome = Outcome::first_token;
            co_return;
        }
    }
}

// The race's state and its moves.
class Race {
  public:
    Race(Gateway::Impl& gw, const RaceRequest& request, const asio::any_io_executor& executor,
         const net::HeaderList& base)
        : gw_(gw),
          request_(request),
          router_(gw.routing->router(request.model)),
          query_(request.query),
          base_(base),
          waker_(executor) {}

    // Starts an attempt at `pick`'s upstream; an error when the request cannot be sent there.
    std::optional<Error> launch(route::Pick pick) {
        query_.tried |= std::uint64_t{1} << pick.member;
        const UpstreamRef& ref = Routing::member(request_.model, pick.member);
        const ProviderConfig& provider = gw_.config.providers[ref.provider];
        auto call = dialect::make_upstream_call(request_.chat, provider.api, provider.base.target,
                                                ref.model, provider.key, request_.client_body,
                                                request_.model.prompt_cache);
        if (!call) return call.error();
        const std::int64_t now = steady_now_ns();
        gw_.routing->picked(request_.model, pick.member, now);
        contenders_.push_back(std::make_unique<Contender>(gw_, request_, pick, ++launched_, now,
                                                          std::move(*call), base_));
        Contender* c = contenders_.back().get();
        ++live_;
        asio::co_spawn(
            waker_.get_executor(), contend(&gw_, c),
            asio::bind_cancellation_slot(c->signal.slot(), [this, c](const std::exception_ptr& e) {
                if (e && c->outcome == Outcome::running) {
                    // Never left waiting for: it failed, without its record.
                    spdlog::error("a raced upstream attempt failed to run");
                    c->reply =
                        reply_for(Errc::connection_error, "the attempt failed to run", c->attempt);
                    c->reply.headers = c->headers;
                    c->outcome = Outcome::failed;
                }
                --live_;
                waker_.cancel();
            }));
        return std::nullopt;
    }

    // The next upstream by the routing strategy, after the ones tried.
    std::optional<route::Pick> next(Route route) {
        query_.now_ns = steady_now_ns();
        auto pick = router_.pick(query_);
        if (pick) pick->route = route;
        return pick;
    }

    void give_up(Contender& c, RequestStatus status) {
        c.given_up = true;
        c.give_up_status = status;
        c.signal.emit(asio::cancellation_type::terminal);
    }

    Contender* winner() const {
        for (const auto& c : contenders_) {
            if (!c->given_up && c->outcome == Outcome::first_token) return c.get();
        }
        return nullptr;
    }

    std::vector<Contender*> running() const {
        std::vector<Contender*> out;
        for (const auto& c : contenders_) {
            if (!c->given_up && c->outcome == Outcome::running) out.push_back(c.get());
        }
        return out;
    }

    // The last failed attempt (what the client hears when nobody answers).
    Contender* last_failed() const {
        for (auto it = contenders_.rbegin(); it != contenders_.rend(); ++it) {
            if ((*it)->outcome == Outcome::failed) return it->get();
        }
        return nullptr;
    }

    awaitable<void> wait_until(std::int64_t at_ns) {
        waker_.expires_at(at_ns == kNever ? SteadyClock::time_point::max()
                                          : SteadyClock::time_point(Nanos(at_ns)));
        co_await waker_.async_wait(net::use_nothrow);
    }

    // Waits for every contender's coroutine to end (they point into this race).
    awaitable<void> drain() {
        while (live_ > 0) co_await wait_until(kNever);
    }

    void settle_hedges(const Contender& winner) {
        for (const auto& c : contenders_) {
            if (c.get() == &winner || c->given_up) continue;
            if (c->outcome == Outcome::running) {
                give_up(*c, RequestStatus::cancelled);
            } else if (c->outcome == Outcome::first_token) {
                // Its token came in the same turn as the winner's: its coroutine has ended,
                // so the race closes its stream and records it here.
                c->given_up = true;
                c->response->cancel();
                record_cancelled(gw_, *c);
            } else {
                continue;
            }
            gw_.routing->hedge_cancelled();
            if (c->pick.route == Route::hedge) router_.member(c->pick.member).hedge_lost();
        }
        if (winner.pick.route == Route::hedge) router_.member(winner.pick.member).hedge_won();
    }

    route::Router& router() { return router_; }

  private:
    Gateway::Impl& gw_;
    const RaceRequest& request_;
    route::Router& router_;
    route::RouteQuery query_;
    const net::HeaderList& base_;
    asio::steady_timer waker_;
    std::vector<std::unique_ptr<Contender>> contenders_;
    std::size_t live_ = 0;
    int launched_ = 0;
};

}  // namespace

awaitable<void> race_first_token(Gateway::Impl& gw, const RaceRequest& request,
                                 net::ResponseWriter& writer, route::Pick first,
                                 net::HeaderList& headers) {
    auto executor = co_await asio::this_coro::executor;
    Race race(gw, request, executor, headers);
    const route::RoutingPolicy& policy = race.router().policy();
    if (auto refused = race.launch(first)) {
        co_await send_error(gw, writer, Errc::unsupported, refused->message, headers);
        co_return;
    }
    const auto deadline_after = [&policy](std::int64_t now) {
        return policy.ttft_deadline_ns > 0 ? now + policy.ttft_deadline_ns : kNever;
    };
    const std::int64_t t_start = steady_now_ns();
    const auto delay = race.router().hedge_delay(first.member, request.query.prompt_tokens,
                                                 !request.chat.tools.empty());
    std::int64_t hedge_at = delay ? t_start + *delay : kNever;
    std::int64_t deadline_at = deadline_after(t_start);
    Contender* winner = nullptr;
    Contender* final_failure = nullptr;  // nobody answered: its reply goes to the client
    bool client_gone = false;
    while (true) {
        winner = race.winner();
        if (winner != nullptr) break;
        const auto cancelled = (co_await asio::this_coro::cancellation_state).cancelled();
        if (cancelled != asio::cancellation_type::none || writer.client_gone()) {
            client_gone = true;
            break;
        }
        const std::int64_t now = steady_now_ns();
        if (race.running().empty()) {
            // Every attempt so far failed before its first token.
            Contender* failed = race.last_failed();
            std::optional<route::Pick> next;
            if (failed == nullptr || failed->may_fall_back) next = race.next(Route::fallback);
            if (!next || race.launch(*next)) {
                final_failure = failed;
                break;
            }
            deadline_at = deadline_after(now);
            continue;
        }
        if (now >= deadline_at) {
            // No token in time: give the attempts up and try the next upstream.
            for (Contender* c : race.running())
                race.give_up(*c, RequestStatus::timeout_first_token);
            deadline_at = deadline_after(now);
            bool launched = false;
            // An upstream that cannot take the request (make_upstream_call) is skipped.
            for (auto next = race.next(Route::fallback); next && !launched;
                 next = race.next(Route::fallback)) {
                launched = !race.launch(*next);
            }
            if (launched) continue;
            final_failure = nullptr;
            break;
        }
        if (now >= hedge_at) {
            hedge_at = kNever;  // one hedge per request
            // The budget pays only for a hedge that goes out.
            if (auto hedge = race.next(Route::hedge); hedge && race.router().take_hedge()) {
                if (race.launch(*hedge)) {
                    race.router().refund_hedge();  // the request cannot be sent there
                } else {
                    race.router().member(hedge->member).hedge_sent();
                }
            }
            continue;
        }
        co_await race.wait_until(std::min(hedge_at, deadline_at));
    }

    if (winner != nullptr) {
        race.settle_hedges(*winner);
        race.router().served(request.prefix, winner->pick.member);
        const std::span<EarlyPiece> early(winner->early);
        co_await answer_stream(gw, request.chat, writer, winner->attempt, std::move(winner->m),
                               *winner->response, winner->headers, early);
    } else if (client_gone) {
        for (Contender* c : race.running()) race.give_up(*c, RequestStatus::cancelled);
    } else if (final_failure != nullptr) {
        co_await send_reply(gw, writer, final_failure->reply);
    } else {
        ClientReply reply;
        reply.status = boost::beast::http::status::gateway_timeout;
        reply.body = openai_error_body(
            Errc::timeout_first_token,
            fmt::format("no upstream gave a first token within the {} ms deadline",
                        policy.ttft_deadline_ns / 1'000'000));
        reply.headers = headers;
        reply.record_status = RequestStatus::timeout_first_token;
        co_await send_reply(gw, writer, reply);
    }
    co_await race.drain();
}

}  // namespace tokenradar::gateway
