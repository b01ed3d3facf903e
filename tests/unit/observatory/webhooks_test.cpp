// Incident webhooks against a bare-socket server (tests/support/raw_http_server.hpp): 5xx
// and 429 are retried with the same body, other answers end a delivery, a full queue drops
// and counts, and stop() does not sit out a retry's backoff.

#include "../../support/raw_http_server.hpp"

#include <tokenradar/observatory/webhooks.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::observatory {
namespace {

using ::testing::HasSubstr;
using testing::RawHttpServer;
using testing::RawRequest;
using testing::RawResponse;

RawResponse answer(int status) {
    const std::string reason = status == 200 ? "OK" : "Scripted";
    return {"HTTP/1.1 " + std::to_string(status) + " " + reason +
                "\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}",
            false};
}

WebhookOptions fast_retries(int attempts) {
    WebhookOptions options;
    options.max_attempts = attempts;
    options.first_backoff = std::chrono::milliseconds(10);
    options.max_backoff = std::chrono::milliseconds(40);
    return options;
}

net::Url url_of(const std::string& base) { return *net::parse_url(base + "/hook"); }

// Polls until `done` or 10 s.
template <typename Done>
bool eventually(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

// Answers the scripted statuses in turn (the last one for ever) and keeps what it received.
class HookServer {
  public:
    explicit HookServer(std::vector<int> statuses)
        : statuses_(std::move(statuses)), server_({}, [this](const RawRequest& r) {
              std::lock_guard lock(mu_);
              received_.push_back(r);
              const std::size_t i = std::min(received_.size(), statuses_.size()) - 1;
              return answer(statuses_[i]);
          }) {}

    [[nodiscard]] std::string base_url() const { return server_.base_url(); }
    [[nodiscard]] std::vector<RawRequest> received() const {
        std::lock_guard lock(mu_);
        return received_;
    }

  private:
    std::vector<int> statuses_;
    mutable std::mutex mu_;
    std::vector<RawRequest> received_;
    RawHttpServer server_;
};

TEST(Webhooks, ServerErrorsAndTooManyRequestsAreRetriedWithTheSameBody) {
    HookServer hook({503, 429, 200});
    Webhooks webhooks({url_of(hook.base_url())}, fast_retries(5));
    const std::string event = R"({"event":"opened","incident":{"id":1}})";
    ASSERT_TRUE(webhooks.push(event));
    ASSERT_TRUE(eventually([&] { return webhooks.counters().delivered == 1; }));
    const Webhooks::Counters c = webhooks.counters();
    EXPECT_EQ(c.retries, 2U);
    EXPECT_EQ(c.failed, 0U);
    const std::vector<RawRequest> got = hook.received();
    ASSERT_EQ(got.size(), 3U);
    for (const RawRequest& r : got) {
        EXPECT_TRUE(r.is("POST", "/hook")) << r.head;
        EXPECT_THAT(r.head, HasSubstr("content-type: application/json"));
        EXPECT_EQ(r.body, event);
    }
}

TEST(Webhooks, AClientErrorEndsTheDeliveryAndTheNextEventStillGoes) {
    HookServer hook({400, 200});
    Webhooks webhooks({url_of(hook.base_url())}, fast_retries(5));
    ASSERT_TRUE(webhooks.push(R"({"event":"opened"})"));
    ASSERT_TRUE(webhooks.push(R"({"event":"closed"})"));
    ASSERT_TRUE(eventually([&] { return webhooks.counters().delivered == 1; }));
    const Webhooks::Counters c = webhooks.counters();
    EXPECT_EQ(c.failed, 1U);
    EXPECT_EQ(c.retries, 0U);
    const std::vector<RawRequest> got = hook.received();
    ASSERT_EQ(got.size(), 2U);
    EXPECT_EQ(got[0].body, R"({"event":"opened"})");
    EXPECT_EQ(got[1].body, R"({"event":"closed"})");
}

TEST(Webhooks, EveryUrlGetsEachEventAndGivingUpIsCounted) {
    HookServer up({200});
    HookServer down({500});
    Webhooks webhooks({url_of(down.base_url()), url_of(up.base_url())}, fast_retries(3));
    ASSERT_TRUE(webhooks.push("{}"));
    ASSERT_TRUE(eventually([&] { return webhooks.counters().delivered == 1; }));
    const Webhooks::Counters c = webhooks.counters();
    EXPECT_EQ(c.failed, 1U);
    EXPECT_EQ(c.retries, 2U);  // 3 attempts at the failing URL
    EXPECT_EQ(down.received().size(), 3U);
    EXPECT_EQ(up.received().size(), 1U);
}

TEST(Webhooks, AFullQueueDropsAndCountsInsteadOfBlocking) {
    HookServer slow({503});
    WebhookOptions options = fast_retries(20);
    options.first_backoff = options.max_backoff = std::chrono::milliseconds(200);
    options.queue_capacity = 2;
    Webhooks webhooks({url_of(slow.base_url())}, options);
    int refused = 0;
    for (int i = 0; i < 10; ++i) refused += webhooks.push("{}") ? 0 : 1;
    // One event may be taken off the queue already: 2 or 3 are held, the rest dropped.
    EXPECT_GE(refused, 7);
    EXPECT_LE(refused, 8);
    EXPECT_EQ(webhooks.counters().dropped, static_cast<std::uint64_t>(refused));
}

TEST(Webhooks, StopEndsARetryInItsBackoffAndLaterPushesAreDropped) {
    HookServer down({503});
    WebhookOptions options = fast_retries(20);
    options.first_backoff = options.max_backoff = std::chrono::seconds(30);
    Webhooks webhooks({url_of(down.base_url())}, options);
    ASSERT_TRUE(webhooks.push("{}"));
    ASSERT_TRUE(eventually([&] { return webhooks.counters().retries == 1; }));  // in backoff
    const auto t0 = std::chrono::steady_clock::now();
    webhooks.stop();
    // A 30 s backoff not sat out (shutdown of serve waits on this).
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    EXPECT_EQ(webhooks.counters().failed, 1U);
    EXPECT_FALSE(webhooks.push("{}"));
    EXPECT_EQ(webhooks.counters().dropped, 1U);
}

}  // namespace
}  // namespace tokenradar::observatory
