#include <tokenradar/observatory/webhooks.hpp>

#include <tokenradar/core/thread_name.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace tokenradar::observatory {
namespace {

namespace http = net::beast::http;
using net::asio::awaitable;

constexpr std::size_t kMaxAnswerBytes = 64 * 1024;
constexpr std::chrono::milliseconds kBackoffStep{50};

}  // namespace

struct Webhooks::State {
    std::vector<net::Url> urls;
    WebhookOptions options;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::string> queue;
    bool stopping = false;
    std::atomic<bool> stop_retrying{false};  // set by stop(): a delivery in backoff gives up
    std::atomic<std::uint64_t> delivered{0}, failed{0}, retries{0}, dropped{0};
};

namespace {

// One event to one URL, with retries; true when a 2xx answered.
awaitable<bool> deliver(net::HttpClient& client, Webhooks::State& s, net::Url url, std::string body,
                        int max_attempts) {
    const net::RequestHeaders headers = {{"content-type", "application/json"},
                                         {"user-agent", "tokenradar-incidents"}};
    auto timer = net::asio::steady_timer(co_await net::asio::this_coro::executor);
    auto backoff = s.options.first_backoff;
    for (int attempt = 1;; ++attempt) {
        std::string request_body = body;
        auto response = co_await client.request(http::verb::post, url, headers,
                                                std::move(request_body), kMaxAnswerBytes);
        if (response && response->status >= 200 && response->status < 300) co_return true;
        const bool retryable = !response || response->status == 429 || response->status >= 500;
        if (!retryable || attempt >= max_attempts || s.stop_retrying.load()) {
            spdlog::warn(
                "incident webhook {}: {}", url.authority(),
                response ? fmt::format("answered {}", response->status) : response.error().message);
            co_return false;
        }
        ++s.retries;
        // The backoff in short steps: stop() waits for one step, not for the whole backoff.
        for (auto left = backoff; left.count() > 0 && !s.stop_retrying.load();
             left -= kBackoffStep) {
            timer.expires_after(std::min(left, kBackoffStep));
            co_await timer.async_wait(net::use_nothrow);
        }
        backoff = std::min(backoff * 2, s.options.max_backoff);
    }
}

void webhook_loop(Webhooks::State& s) {
    net::asio::io_context io(1);
    net::HttpClient client(io.get_executor(), s.options.client);
    for (;;) {
        std::string event;
        bool stop = false;
        {
            std::unique_lock lock(s.mutex);
            s.wake.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
            stop = s.stopping;
            if (s.queue.empty()) return;
            event = std::move(s.queue.front());
            s.queue.pop_front();
        }
        const int attempts = stop ? 1 : s.options.max_attempts;  // do not hold shutdown up
        for (const net::Url& url : s.urls) {
            bool ok = false;
            net::asio::co_spawn(io, deliver(client, s, url, event, attempts),
                                [&ok](const std::exception_ptr& e, bool delivered) {
                                    if (e) {
                                        spdlog::error("incident webhook: delivery threw");
                                        return;
                                    }
                                    ok = delivered;
                                });
            io.run();
            io.restart();
            ++(ok ? s.delivered : s.failed);
        }
    }
}

}  // namespace

Webhooks::Webhooks(std::vector<net::Url> urls, WebhookOptions options)
    : state_(std::make_shared<State>()) {
    state_->urls = std::move(urls);
    state_->options = std::move(options);
    thread_ = std::thread([s = state_] {
        name_this_thread("tr-webhooks");
        webhook_loop(*s);
    });
}

Webhooks::~Webhooks() { stop(); }

bool Webhooks::push(std::string json) noexcept {
    {
        std::lock_guard lock(state_->mutex);
        if (state_->stopping || state_->queue.size() >= state_->options.queue_capacity) {
            ++state_->dropped;
            return false;
        }
        try {
            state_->queue.push_back(std::move(json));
        } catch (const std::exception&) {
            ++state_->dropped;
            return false;
        }
    }
    state_->wake.notify_one();
    return true;
}

void Webhooks::stop() {
    {
        std::lock_guard lock(state_->mutex);
        state_->stopping = true;
    }
    state_->stop_retrying.store(true);
    state_->wake.notify_one();
    if (thread_.joinable()) thread_.join();
}

Webhooks::Counters Webhooks::counters() const noexcept {
    const State& s = *state_;
    return {s.delivered.load(), s.failed.load(), s.retries.load(), s.dropped.load()};
}

}  // namespace tokenradar::observatory
