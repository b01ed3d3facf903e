#pragma once
// Incident webhooks ([incidents] webhooks): every opened and closed incident as a JSON POST
// (event_json(), incident_monitor.hpp) to each configured URL, from a thread of its own.
// push() never blocks: a full queue drops the event and counts it. A delivery is retried on
// connection errors, 429 and 5xx with doubling backoff from `first_backoff` (retry-after is
// not read: the queue must keep moving), at most `max_attempts` times per URL; any other
// answer ends it. stop() ends the retries under way, gives what is queued one attempt each and
// joins. Answers' bodies are read (bounded) and ignored.

#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/url.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::observatory {

struct WebhookOptions {
    std::size_t queue_capacity = 256;
    int max_attempts = 5;
    std::chrono::milliseconds first_backoff{1'000};
    std::chrono::milliseconds max_backoff{60'000};
    net::ClientOptions client;
};

class Webhooks {
  public:
    struct Counters {
        std::uint64_t delivered = 0;  // (event, URL) pairs answered 2xx
        std::uint64_t failed = 0;     // pairs given up on
        std::uint64_t retries = 0;
        std::uint64_t dropped = 0;  // events not queued (queue full or stopping)
    };

    explicit Webhooks(std::vector<net::Url> urls, WebhookOptions options = {});
    ~Webhooks();  // stop()
    Webhooks(const Webhooks&) = delete;
    Webhooks& operator=(const Webhooks&) = delete;

    bool push(std::string json) noexcept;
    void stop();
    [[nodiscard]] Counters counters() const noexcept;

    struct State;

  private:
    std::shared_ptr<State> state_;
    std::thread thread_;
};

}  // namespace tokenradar::observatory
