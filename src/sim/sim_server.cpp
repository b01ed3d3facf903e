#include <tokenradar/sim/sim_server.hpp>

#include "wire.hpp"
#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/sim/control.hpp>
#include <tokenradar/sim/pacing.hpp>
#include <tokenradar/sim/trace_record.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/serialize.hpp>

#include <unordered_map>
#include <unordered_set>

namespace tokenradar::sim {

namespace http = boost::beast::http;
namespace asio = boost::asio;
using net::use_nothrow;

// ---- TraceSink ------------------------------------------------------------------------

Result<std::shared_ptr<TraceSink>> TraceSink::open(const std::filesystem::path& path) {
    std::FILE* file = std::fopen(path.c_str(), "a");
    if (file == nullptr) {
        return Error(Errc::internal, fmt::format("--trace {}: cannot open for writing: {}",
                                                 path.string(), std::strerror(errno)));
    }
    return std::shared_ptr<TraceSink>(new TraceSink(file));
}

TraceSink::~TraceSink() { std::fclose(file_); }

void TraceSink::write(std::string_view line) {
    std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fflush(file_);
}

// ---- Server state ---------------------------------------------------------------------

struct SimServer::State {
    State(Profile p, SimServerOptions o)
        : model(std::move(p)), options(std::move(o)), control(model.profile().episodes) {}

    LatencyModel model;
    SimServerOptions options;
    SimControl control;
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> chunks{0};
    stats::LatencyHistogram lateness;

    // Queued requests wait on a timer that release() cancels to wake them.
    std::mutex waiters_mutex;
    std::unordered_map<Ticket, std::shared_ptr<asio::steady_timer>> waiters;
    std::unordered_set<Ticket> woken_before_waiting;
    std::unordered_set<Ticket> abandoned;  // gave up while release() was handing them a slot

    std::int64_t wall_now_us() const {
        return options.pinned_wall_time_us.value_or(tokenradar::wall_now_us());
    }

    void wake(Ticket ticket) {
        std::lock_guard lock(waiters_mutex);
        auto it = waiters.find(ticket);
        if (it == waiters.end()) {
            if (abandoned.erase(ticket) == 0) woken_before_waiting.insert(ticket);
            return;
        }
        auto timer = std::move(it->second);
        waiters.erase(it);
        asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    }

    SimStats snapshot() {
        SimStats s;
        s.requests = requests.load();
        s.chunks = chunks.load();
        s.running = model.gate().running();
        s.queued = model.gate().queued();
        s.lateness_p50_ns = lateness.percentile_ns(0.5);
        s.lateness_p99_ns = lateness.percentile_ns(0.99);
        s.lateness_max_ns = lateness.max_ns();
        return s;
    }

    // Called exactly once per request that held a slot.
    void release_slot() {
        if (auto next = model.gate().release()) wake(*next);
    }
};

namespace {

// Releases the capacity slot when the request ends, however it ends.
class SlotGuard {
  public:
    explicit SlotGuard(SimServer::State* state) : state_(state) {}
    ~SlotGuard() {
        if (state_ != nullptr) state_->release_slot();
    }
    SlotGuard(const SlotGuard&) = delete;
    SlotGuard& operator=(const SlotGuard&) = delete;

  private:
    SimServer::State* state_;
};

// Suspends until the slot of `ticket` is handed over (true) or the client went away
// (false; the ticket is withdrawn, or the slot released if it raced in).
asio::awaitable<bool> wait_for_slot(SimServer::State* state, Ticket ticket) {
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                      asio::steady_timer::time_point::max());
    {
        std::lock_guard lock(state->waiters_mutex);
        if (state->woken_before_waiting.erase(ticket) > 0) co_return true;
        state->waiters.emplace(ticket, timer);
    }
    co_await timer->async_wait(use_nothrow);
    bool woken = false;
    {
        std::lock_guard lock(state->waiters_mutex);
        woken = state->waiters.erase(ticket) == 0;
    }
    if (woken) co_return true;
    if (!state->model.gate().cancel(ticket)) {
        // release() handed this ticket a slot just now; its wake() may not have run yet.
        {
            std::lock_guard lock(state->waiters_mutex);
            if (state->woken_before_waiting.erase(ticket) == 0) state->abandoned.insert(ticket);
        }
        state->release_slot();
    }
    co_return false;
}

// A timer reused for every wait of one request.
class Pacer {
  public:
    Pacer(const asio::any_io_executor& ex, std::chrono::nanoseconds quantum)
        : timer_(ex), quantum_ns_(quantum.count()) {}

    // Suspends until the steady clock reaches due_ns, or the next multiple of the quantum
    // after it. False when cancelled.
    asio::awaitable<bool> until(std::int64_t due_ns) {
        if (steady_now_ns() >= due_ns) co_return true;
        timer_.expires_at(SteadyClock::time_point(Nanos(pacing_wake_ns(due_ns, quantum_ns_))));
        auto [ec] = co_await timer_.async_wait(use_nothrow);
        co_return !ec;
    }

  private:
    asio::steady_timer timer_;
    std::int64_t quantum_ns_;
};

struct Reply {
    http::status status;
    std::string content_type;
    std::string body;
    net::HeaderList headers;
};

Reply error_reply(dialect::Api api, Errc code, std::string_view message,
                  net::HeaderList headers = {}) {
    return Reply{static_cast<http::status>(dialect::error_http_status(api, code)),
                 "application/json", dialect::emit_error_body(api, code, message),
                 std::move(headers)};
}

// GCC 12 miscompiles braced initialisers of string literals inside coroutines, so the
// replies with such literals are built by these plain functions.
Reply capacity_reply(dialect::Api api) {
    Reply reply =
        error_reply(api, Errc::rate_limited, "The simulated provider is at capacity; retry later.");
    reply.headers.emplace_back("retry-after", "1");
    return reply;
}

Reply fault_reply(dialect::Api api, Errc code, int status) {
    Reply reply = error_reply(api, code, "Simulated upstream failure.");
    reply.status = static_cast<http::status>(status);
    if (code == Errc::rate_limited) reply.headers.emplace_back("retry-after", "1");
    return reply;
}

std::string truncated_body() { return R"({"id":"malformed","choices":[{"mess)"; }

net::HeaderList request_id_header(const std::string& id) {
    net::HeaderList headers;
    headers.emplace_back("x-request-id", id);
    return headers;
}

// wire.hpp decides what a request is and what bytes answer it; these coroutines only pace
// and write.

asio::awaitable<void> send_reply(net::ResponseWriter& writer, Reply reply) {
    co_await writer.send(reply.status, reply.content_type, std::move(reply.body), reply.headers);
}

// A request the sim answers with an error before admitting it, or nullopt.
std::optional<Reply> refuse(const SimServer::State& state, const WireRequest& wire,
                            const Result<Overrides>& overrides) {
    if (!overrides) return error_reply(wire.api, Errc::bad_request, overrides.error().message);
    const Profile& profile = state.model.profile();
    if (wire.api == dialect::Api::openai) {
        // n > 1 is refused rather than answered with one choice: our OpenAI codecs model
        // choice 0 only (src/dialect/README.md), so n choices could not be checked end to end.
        if (const auto* n = wire.chat.original.if_contains("n");
            n != nullptr && n->is_int64() && n->as_int64() > 1) {
            return error_reply(
                wire.api, Errc::bad_request,
                fmt::format("n: {} choices are not simulated; this sim answers n = 1 only",
                            n->as_int64()));
        }
    }
    if (!profile.serves(wire.chat.model)) {
        return error_reply(wire.api, Errc::not_found,
                           fmt::format("The model '{}' does not exist (this sim serves: {})",
                                       wire.chat.model, fmt::join(profile.models, ", ")));
    }
    return std::nullopt;
}

// Every route but a completion is answered at once.
Reply immediate_reply(SimServer::State& state, const Route& route) {
    switch (route.kind) {
        case Route::Kind::health:
            return Reply{http::status::ok, "text/plain", "ok\n", {}};
        case Route::Kind::stats:
            return Reply{http::status::ok, "application/json", stats_json(state.snapshot()), {}};
        case Route::Kind::models:
            return Reply{http::status::ok,
                         "application/json",
                         models_json(route.api, state.model.profile()),
                         {}};
        case Route::Kind::model:
            if (auto model = model_json(route.api, state.model.profile(), route.model)) {
                return Reply{http::status::ok, "application/json", std::move(*model), {}};
            }
            return error_reply(route.api, Errc::not_found,
                               fmt::format("The model '{}' does not exist", route.model));
        case Route::Kind::completion:
        case Route::Kind::count_tokens:
        case Route::Kind::control:
            break;
    }
    return error_reply(route.api, Errc::internal, "not an immediate route");
}

// POST /v1/messages/count_tokens: answered at once, without admission or latency (Anthropic's
// endpoint runs no model).
Reply count_tokens_reply(const SimServer::State& state, const net::Request& request) {
    auto counted = count_tokens_json(request.body(), state.model.profile());
    if (!counted) {
        const Errc code =
            counted.error().code == Errc::not_found ? Errc::not_found : Errc::bad_request;
        return error_reply(dialect::Api::anthropic, code, counted.error().message);
    }
    return Reply{http::status::ok, "application/json", std::move(*counted), {}};
}

// GET shows the condition, POST commands one (replacing the previous command), DELETE clears
// the command; each answers with the state after it.
Reply control_reply(SimServer::State& state, const net::Request& request) {
    const std::int64_t now = steady_now_ns();
    if (request.method() == http::verb::post) {
        auto command = parse_control_body(request.body());
        if (!command) {
            return error_reply(dialect::Api::openai, errc_of(command.error(), Errc::bad_request),
                               command.error().message);
        }
        state.control.command(*command, now);
    } else if (request.method() == http::verb::delete_) {
        state.control.clear();
    }
    return Reply{
        http::status::ok, "application/json", control_state_json(state.control.state(now)), {}};
}

void write_trace(SimServer::State* state, const TraceRecord& record) {
    if (state->options.trace) state->options.trace->write(record.to_json_line());
}

// The trace fields known once the request is planned.
TraceRecord start_trace(const SimServer::State& state, const RequestPlan& plan,
                        const WireRequest& wire, std::int64_t queue_wait_ns, std::int64_t ts_us) {
    TraceRecord trace = TraceRecord::from_plan(plan, queue_wait_ns);
    trace.replica = state.options.replica;
    trace.response_id = new_response_id(wire.api, wire.text_completion);
    trace.profile = state.model.profile().name;
    trace.model = wire.chat.model;
    trace.api = std::string(dialect::to_string(wire.api));
    trace.stream = wire.chat.stream;
    trace.ts_us = ts_us;
    return trace;
}

Errc fault_errc(const Fault& fault) {
    return fault.http_status() == 429   ? Errc::rate_limited
           : fault.http_status() == 503 ? Errc::overloaded
                                        : Errc::internal;
}

// Whether the plan's fault is `kind` and lands on chunk `chunk`.
bool fault_at(const RequestPlan& plan, FaultKind kind, std::size_t chunk) {
    return plan.fault.kind == kind && plan.chunks[chunk].first_token == plan.fault.at_token;
}

// Encodes chunk `first` and the chunks after it that are already due, as a loaded server
// writes them together; a disconnect ends the run. Returns the last chunk encoded.
std::size_t encode_due_chunks(StreamWriter& stream, const RequestPlan& plan, std::size_t first,
                              std::int64_t t_first, std::string& bytes) {
    std::size_t last = first;
    while (true) {
        stream.encode_chunk(last, fault_at(plan, FaultKind::malformed, last), bytes);
        const bool next_due = last + 1 < plan.chunks.size() &&
                              t_first + plan.chunks[last + 1].offset_ns <= steady_now_ns() &&
                              !fault_at(plan, FaultKind::disconnect, last + 1);
        if (!next_due) break;
        ++last;
    }
    return last;
}

// Writes the plan's chunks at their times (the final events with the last one). False when
// the stream ended early: the client went away, or a disconnect fault (traced) cut it.
// Awaited at once by serve_completion, whose frame holds everything passed by reference.
asio::awaitable<bool> stream_chunks(SimServer::State* state, net::ResponseWriter& writer,
                                    Pacer& pacer, StreamWriter& stream, const RequestPlan& plan,
                                    std::int64_t t_first, TraceRecord& trace) {
    std::string bytes;
    for (std::size_t chunk = 0; chunk < plan.chunks.size(); ++chunk) {
        const std::int64_t due = t_first + plan.chunks[chunk].offset_ns;
        if (!co_await pacer.until(due)) co_return false;
        if (fault_at(plan, FaultKind::disconnect, chunk)) {
            write_trace(state, trace);
            writer.abort();
            co_return false;
        }
        bytes.clear();
        const std::size_t last = encode_due_chunks(stream, plan, chunk, t_first, bytes);
        if (last + 1 == plan.chunks.size()) stream.finish(bytes);
        // Stamped as the bytes are handed to the socket: a stamp after the write returns
        // can be later than the client's read of those bytes on the other core.
        const std::int64_t handed = steady_now_ns();
        if (chunk == 0) trace.ttft_sent_ns = trace.ttft_ns + (handed - t_first);
        for (std::size_t c = chunk; c <= last; ++c) {
            state->lateness.record_ns(handed - (t_first + plan.chunks[c].offset_ns));
        }
        if (co_await writer.write_chunk(bytes)) co_return false;
        state->chunks.fetch_add(last - chunk + 1, std::memory_order_relaxed);
        chunk = last;
    }
    co_return true;
}

asio::awaitable<void> serve_completion(SimServer::State* state, net::ResponseWriter& writer,
                                       WireRequest wire) {
    const std::int64_t t_read = writer.request_read_ns();
    const dialect::Api api = wire.api;

    auto overrides = parse_overrides(wire.sim_headers);
    if (auto refusal = refuse(*state, wire, overrides)) {
        co_await send_reply(writer, std::move(*refusal));
        co_return;
    }

    // Admission: run now, wait in the FIFO queue, or 429 when the queue is full.
    const Admission admission = state->model.gate().admit();
    if (admission.kind == Admission::Kind::reject) {
        Reply reply = capacity_reply(api);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    if (admission.kind == Admission::Kind::queued) {
        if (!co_await wait_for_slot(state, admission.ticket)) co_return;
    }
    SlotGuard slot(state);
    const std::int64_t t_admitted = steady_now_ns();

    const std::string prompt = canonical_prompt(wire.chat);
    PlanInput input;
    input.prompt_text = prompt;
    input.max_tokens = wire.chat.max_tokens;
    input.wall_time_us = state->wall_now_us();
    input.overrides = *overrides;
    input.request_seed = overrides->seed;
    input.condition = state->control.condition(t_admitted);
    const RequestPlan plan = state->model.plan(input);

    const Answer answer = Answer::make(wire.chat, plan, state->model.profile().answers,
                                       overrides->tool_call, tool_call_id_prefix(api));
    TraceRecord trace = start_trace(*state, plan, wire, t_admitted - t_read, input.wall_time_us);

    Pacer pacer(co_await asio::this_coro::executor, state->options.pacing_quantum);
    const std::int64_t t_first = t_admitted + plan.ttft_ns;

    if (plan.fault.is_http_error()) {
        if (!co_await pacer.until(t_first)) co_return;
        Reply reply = fault_reply(api, fault_errc(plan.fault), plan.fault.http_status());
        trace.status = plan.fault.http_status();
        write_trace(state, trace);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }

    const net::HeaderList headers = request_id_header(trace.response_id);
    if (!wire.chat.stream) {
        const std::int64_t last_token_offset =
            plan.token_offsets_ns.empty() ? 0 : plan.token_offsets_ns.back();
        if (!co_await pacer.until(t_first + last_token_offset)) co_return;
        if (plan.fault.kind == FaultKind::disconnect) {
            write_trace(state, trace);
            writer.abort();
            co_return;
        }
        std::string body;
        if (plan.fault.kind == FaultKind::malformed) {
            body = truncated_body();
        } else {
            const dialect::ChatResponse response =
                make_response(plan, answer, trace.response_id, wire.chat.model);
            body = wire.text_completion ? dialect::emit_text_completion(response)
                                        : dialect::emit_response(api, response);
        }
        write_trace(state, trace);
        co_await writer.send(http::status::ok, "application/json", std::move(body), headers);
        co_return;
    }

    if (co_await writer.start_stream(http::status::ok, "text/event-stream", headers)) co_return;
    StreamWriter stream(api, plan, answer, trace.response_id, wire.chat.model,
                        wire.chat.include_usage, wire.text_completion);
    if (!co_await stream_chunks(state, writer, pacer, stream, plan, t_first, trace)) co_return;
    if (plan.chunks.empty()) {
        std::string bytes;
        stream.finish(bytes);
        if (co_await writer.write_chunk(bytes)) co_return;
    }
    write_trace(state, trace);
    co_await writer.finish();
}

asio::awaitable<void> handle_request(std::shared_ptr<SimServer::State> state, net::Request& request,
                                     net::ResponseWriter& writer) {
    // Replies are named before they are awaited: GCC 12 mishandles temporaries inside a
    // co_await expression's arguments.
    state->requests.fetch_add(1, std::memory_order_relaxed);
    auto route = route_request(request, state->options.api_key);
    if (!route) {
        Reply reply = error_reply(route.error().api, route.error().code, route.error().message);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    if (route->kind == Route::Kind::control) {
        Reply reply = control_reply(*state, request);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    if (route->kind == Route::Kind::count_tokens) {
        Reply reply = count_tokens_reply(*state, request);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    if (route->kind != Route::Kind::completion) {
        Reply reply = immediate_reply(*state, *route);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    auto wire = parse_wire_request(request, *route);
    if (!wire) {
        Reply reply = error_reply(route->api, Errc::bad_request, wire.error().message);
        co_await send_reply(writer, std::move(reply));
        co_return;
    }
    co_await serve_completion(state.get(), writer, std::move(*wire));
}

}  // namespace

// ---- SimServer ------------------------------------------------------------------------

SimServer::SimServer(asio::io_context& ioc, Profile profile, SimServerOptions options)
    : state_(std::make_shared<State>(std::move(profile), std::move(options))) {
    auto state = state_;
    server_ = std::make_unique<net::HttpServer>(
        ioc,
        [state](net::Request& request, net::ResponseWriter& writer) {
            return handle_request(state, request, writer);
        },
        state_->options.limits, state_->options.workers);
    // A control body over its bound is refused before it is read; completions keep the
    // server's limit.
    server_->set_head_check([max = state_->options.limits.max_body_bytes](
                                const net::Request& head, std::optional<std::uint64_t>) {
        const std::string_view target(head.target());
        const bool control = target.substr(0, target.find('?')) == "/sim/control";
        return net::HeadVerdict{control ? kMaxControlBodyBytes : max, {}, {}};
    });
}

SimServer::~SimServer() = default;

Result<std::uint16_t> SimServer::listen(std::string_view host, std::uint16_t port) {
    auto endpoint = server_->listen(host, port);
    if (!endpoint) return endpoint.error();
    return endpoint->port();
}

void SimServer::start() {
    state_->control.start(steady_now_ns());
    server_->start();
}
void SimServer::stop(std::chrono::milliseconds grace) { server_->stop(grace); }
std::uint16_t SimServer::port() const { return server_->port(); }
const Profile& SimServer::profile() const { return state_->model.profile(); }

SimStats SimServer::stats() const { return state_->snapshot(); }

}  // namespace tokenradar::sim
