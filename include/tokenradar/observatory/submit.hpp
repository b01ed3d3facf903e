#pragma once
// The client side of POST /api/v1/measurements: `tokenradar bench --submit` and a gateway's
// `[observatory] forward_to` send their records to an observatory with it. Records go as
// gzip'd NDJSON in batches (at most 10,000, the server's limit); a batch is retried with
// backoff on 429, 5xx and connection errors, honouring retry-after, a bounded number of
// times. The key travels only in the Authorization header.

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/net/http_client.hpp>
#include <tokenradar/net/url.hpp>
#include <tokenradar/observatory/ingest.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace tokenradar::observatory {

struct SubmitTarget {
    net::Url url;  // the measurements endpoint (".../api/v1/measurements")
    Secret key;    // empty: no Authorization header (a public observatory)
};

// The measurements endpoint from what a user typed: a full ".../api/v1/measurements" URL or
// the observatory's base URL ("http://host:8080"). Errc::bad_request naming `what`.
Result<net::Url> measurements_url(std::string_view text, std::string_view what);

struct SubmitOptions {
    std::size_t batch = 5'000;  // records per request, at most 10,000
    int max_attempts = 5;       // per batch
    std::chrono::milliseconds first_backoff{500};
    std::chrono::milliseconds max_backoff{30'000};
};

// Sends every record; suspends until all batches are answered. A batch that still fails
// after max_attempts ends the call with that error (what was sent before stays sent; a retry
// of the whole call is safe: the observatory ignores duplicates).
net::asio::awaitable<Result<SubmitOutcome>> submit_records(net::HttpClient& client,
                                                           SubmitTarget target,
                                                           std::vector<Measurement> records,
                                                           SubmitOptions options = {});

// submit_records() for a thread that owns `io` and does nothing else meanwhile (bench after
// its run, the Forwarder's thread): runs `io` until the call is answered, then restarts it
// for the next call. `client` must run on `io`.
Result<SubmitOutcome> submit_records_blocking(net::asio::io_context& io, net::HttpClient& client,
                                              SubmitTarget target, std::vector<Measurement> records,
                                              SubmitOptions options = {});

// Forwards a gateway's records in the background: push() never blocks (a full queue drops
// and counts), a thread of its own sends batches every `interval` or when `batch` records
// wait. stop() sends what is queued (one attempt per batch) and joins.
struct ForwarderOptions {
    SubmitOptions submit;
    std::size_t queue_capacity = 100'000;
    std::chrono::milliseconds interval{2'000};
    net::ClientOptions client;
};

class Forwarder {
  public:
    struct Counters {
        std::uint64_t accepted = 0, duplicates = 0, rejected = 0, dropped = 0, failed = 0;
    };

    explicit Forwarder(SubmitTarget target, ForwarderOptions options = {});
    ~Forwarder();
    Forwarder(const Forwarder&) = delete;
    Forwarder& operator=(const Forwarder&) = delete;

    bool push(const Measurement& m) noexcept;
    void stop();
    [[nodiscard]] Counters counters() const noexcept;

    struct State;

  private:
    std::shared_ptr<State> state_;
    std::thread thread_;
};

}  // namespace tokenradar::observatory
