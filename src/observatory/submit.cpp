#include <tokenradar/observatory/submit.hpp>

#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/observatory/ingest.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace tokenradar::observatory {
namespace {

namespace http = net::beast::http;
using net::asio::awaitable;

constexpr std::size_t kServerBatchLimit = 10'000;
constexpr std::string_view kEndpoint = "/api/v1/measurements";

// The retry-after header in seconds, if the server sent a number.
std::optional<std::chrono::milliseconds> retry_after(const http::fields& headers) {
    const auto it = headers.find(http::field::retry_after);
    if (it == headers.end()) return std::nullopt;
    try {
        return std::chrono::seconds(std::stoll(std::string(it->value())));
    } catch (const std::exception&) {
        return std::nullopt;  // an HTTP date: use our own backoff
    }
}

}  // namespace

Result<net::Url> measurements_url(std::string_view text, std::string_view what) {
    auto url = net::parse_url(text);
    if (!url) {
        return Error(Errc::bad_request,
                     fmt::format("{}: expected an http(s) URL of an observatory, got '{}': {}",
                                 what, text, url.error().message));
    }
    if (url->target == "/" || url->target.empty()) {
        url->target = std::string(kEndpoint);
    } else if (url->target.find(kEndpoint) == std::string::npos) {
        return Error(
            Errc::bad_request,
            fmt::format("{}: expected the observatory's base URL or its {} endpoint, got '{}'",
                        what, kEndpoint, text));
    }
    return url;
}

awaitable<Result<SubmitOutcome>> submit_records(net::HttpClient& client, SubmitTarget target,
                                                std::vector<Measurement> records,
                                                SubmitOptions options) {
    SubmitOutcome out;
    const std::size_t batch = std::clamp<std::size_t>(options.batch, 1, kServerBatchLimit);
    std::vector<std::pair<std::string, std::string>> headers = {
        {"content-type", "application/x-ndjson"}, {"content-encoding", "gzip"}};
    if (!target.key.empty()) headers.emplace_back("authorization", "Bearer " + target.key.reveal());
    auto timer = net::asio::steady_timer(co_await net::asio::this_coro::executor);
    for (std::size_t from = 0; from < records.size(); from += batch) {
        const std::size_t to = std::min(records.size(), from + batch);
        std::string ndjson;
        for (std::size_t i = from; i < to; ++i) {
            ndjson += boost::json::serialize(to_json(records[i]));
            ndjson += '\n';
        }
        const std::string body = gzip(ndjson);
        auto backoff = options.first_backoff;
        for (int attempt = 1;; ++attempt) {
            std::string request_body = body;
            auto response = co_await client.request(http::verb::post, target.url, headers,
                                                    std::move(request_body));
            std::optional<std::chrono::milliseconds> wait;
            Error failure;
            bool retryable = true;
            if (response && response->status == 200) {
                if (auto added = add_outcome(out, response->body, from); !added)
                    co_return added.error();
                break;
            }
            if (response) {
                retryable = response->status == 429 || response->status >= 500;
                wait = retry_after(response->headers);
                failure =
                    Error(Errc::upstream_http_error,
                          fmt::format("observatory {} answered {}: {}", target.url.authority(),
                                      response->status, response->body.substr(0, 300)));
            } else {
                failure = response.error();
            }
            if (!retryable || attempt >= options.max_attempts) co_return failure;
            timer.expires_after(std::min(wait.value_or(backoff), options.max_backoff));
            co_await timer.async_wait(net::use_nothrow);
            backoff = std::min(backoff * 2, options.max_backoff);
        }
    }
    co_return out;
}

struct Forwarder::State {
    SubmitTarget target;
    ForwarderOptions options;
    std::mutex mutex;
    std::condition_variable wake;
    std::vector<Measurement> queue;
    bool stopping = false;
    std::atomic<std::uint64_t> accepted{0}, duplicates{0}, rejected{0}, dropped{0}, failed{0};
};

Result<SubmitOutcome> submit_records_blocking(net::asio::io_context& io, net::HttpClient& client,
                                              SubmitTarget target, std::vector<Measurement> records,
                                              SubmitOptions options) {
    Result<SubmitOutcome> result = Error(Errc::internal, "submission did not finish");
    net::asio::co_spawn(io, submit_records(client, std::move(target), std::move(records), options),
                        [&result](const std::exception_ptr& e, Result<SubmitOutcome> r) {
                            if (!e) result = std::move(r);
                        });
    io.run();
    io.restart();
    return result;
}

namespace {

void forward_loop(Forwarder::State& s) {
    net::asio::io_context io;
    net::HttpClient client(io.get_executor(), s.options.client);
    std::chrono::steady_clock::time_point last_warning{};
    for (;;) {
        std::vector<Measurement> batch;
        bool stop = false;
        {
            std::unique_lock lock(s.mutex);
            s.wake.wait_for(lock, s.options.interval,
                            [&] { return s.stopping || s.queue.size() >= s.options.submit.batch; });
            batch.swap(s.queue);
            stop = s.stopping;
        }
        if (!batch.empty()) {
            const std::size_t n = batch.size();
            SubmitOptions submit = s.options.submit;
            if (stop) submit.max_attempts = 1;  // do not hold shutdown up for minutes
            Result<SubmitOutcome> result =
                submit_records_blocking(io, client, s.target, std::move(batch), submit);
            if (result) {
                s.accepted += result->accepted;
                s.duplicates += result->duplicates;
                s.rejected += result->rejected;
            } else {
                s.failed += n;
                if (std::chrono::steady_clock::now() - last_warning > std::chrono::seconds(10)) {
                    spdlog::warn("observatory forwarding: {} records not delivered to {}: {}", n,
                                 s.target.url.authority(), result.error().message);
                    last_warning = std::chrono::steady_clock::now();
                }
            }
        }
        if (stop) return;
    }
}

}  // namespace

Forwarder::Forwarder(SubmitTarget target, ForwarderOptions options)
    : state_(std::make_shared<State>()) {
    state_->target = std::move(target);
    state_->options = std::move(options);
    thread_ = std::thread([s = state_] {
        name_this_thread("tr-forward");
        forward_loop(*s);
    });
}

Forwarder::~Forwarder() { stop(); }

bool Forwarder::push(const Measurement& m) noexcept {
    {
        std::lock_guard lock(state_->mutex);
        if (state_->stopping || state_->queue.size() >= state_->options.queue_capacity) {
            ++state_->dropped;
            return false;
        }
        try {
            state_->queue.push_back(m);
        } catch (const std::exception&) {
            ++state_->dropped;
            return false;
        }
        if (state_->queue.size() < state_->options.submit.batch) return true;
    }
    state_->wake.notify_one();
    return true;
}

void Forwarder::stop() {
    {
        std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->wake.notify_one();
    if (thread_.joinable()) thread_.join();
}

Forwarder::Counters Forwarder::counters() const noexcept {
    const State& s = *state_;
    return {s.accepted.load(), s.duplicates.load(), s.rejected.load(), s.dropped.load(),
            s.failed.load()};
}

}  // namespace tokenradar::observatory
