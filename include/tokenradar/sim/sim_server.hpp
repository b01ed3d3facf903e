#pragma once
// `tokenradar sim`: simulated providers that speak the real wire formats (OpenAI Chat
// Completions, Anthropic Messages, Gemini generateContent / streamGenerateContent) with the
// latency of a profile. One SimServer serves one profile on one port, all three dialects.
//
// Threading: a SimServer runs on the io_context it is given, which may run on several
// threads; each connection is a coroutine on its own strand (net::HttpServer), or on one of
// the worker io_contexts of SimServerOptions. The latency model, the capacity gate and the
// statistics are thread-safe.

#include <tokenradar/core/error.hpp>
#include <tokenradar/net/http_server.hpp>
#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/stats/latency_histogram.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::sim {

// Appends trace lines (TraceRecord::to_json_line) to a file, from any thread. Each line is
// flushed as it is written so a reader joining on response ids sees complete records.
class TraceSink {
  public:
    static Result<std::shared_ptr<TraceSink>> open(const std::filesystem::path& path);
    ~TraceSink();
    TraceSink(const TraceSink&) = delete;
    TraceSink& operator=(const TraceSink&) = delete;
    void write(std::string_view line);

  private:
    explicit TraceSink(std::FILE* file) : file_(file) {}
    std::mutex mutex_;
    std::FILE* file_;
};

struct SimServerOptions {
    // Required key value; empty accepts any non-empty key (the real APIs' header shapes are
    // still required: Authorization: Bearer, x-api-key, x-goog-api-key or ?key=).
    std::string api_key;
    // Simulated wall clock for the peak curve, UTC microseconds; nullopt = the real clock.
    std::optional<std::int64_t> pinned_wall_time_us;
    std::shared_ptr<TraceSink> trace;
    net::ServerLimits limits;
    // io_contexts run on one thread each that serve the connections without strands
    // (net::HttpServer's workers); empty: connections on the server's io_context, on strands.
    std::vector<boost::asio::io_context*> workers;
    // Paced writes wake on multiples of this (sim/pacing.hpp); 0 wakes exactly when due.
    std::chrono::nanoseconds pacing_quantum{0};
    // Which replica of its profile this server is (make_replicas_distinct), for the trace.
    unsigned replica = 0;
};

// Live figures, also served at GET /sim/stats.
struct SimStats {
    std::uint64_t requests = 0;
    std::uint64_t chunks = 0;
    std::int64_t running = 0;
    std::int64_t queued = 0;
    // Actual write completion minus scheduled write time, over every chunk written.
    std::int64_t lateness_p50_ns = 0;
    std::int64_t lateness_p99_ns = 0;
    std::int64_t lateness_max_ns = 0;
};

class SimServer {
  public:
    SimServer(boost::asio::io_context& ioc, Profile profile, SimServerOptions options);
    ~SimServer();
    SimServer(const SimServer&) = delete;
    SimServer& operator=(const SimServer&) = delete;

    Result<std::uint16_t> listen(std::string_view host, std::uint16_t port);
    // Starts accepting; the profile's [[episodes]] count from here.
    void start();
    void stop(std::chrono::milliseconds grace);
    [[nodiscard]] std::uint16_t port() const;
    [[nodiscard]] const Profile& profile() const;
    [[nodiscard]] SimStats stats() const;

    struct State;

  private:
    std::shared_ptr<State> state_;
    std::unique_ptr<net::HttpServer> server_;
};

// The command: several profiles, one port each, until SIGINT/SIGTERM.
struct SimEndpoint {
    std::string profile;  // name or path
    std::uint16_t port = 0;
};

struct SimCommandOptions {
    std::string host = "127.0.0.1";
    std::vector<SimEndpoint> endpoints;
    std::filesystem::path profiles_dir;
    std::optional<std::uint64_t> seed;
    std::filesystem::path trace_path;
    unsigned threads = 0;  // 0: one per core
    std::chrono::nanoseconds pacing_quantum{0};
    std::string api_key;
    std::optional<std::int64_t> pinned_wall_time_us;
    // Told one "sim NAME listening on URL (models: ...)" line per endpoint once it listens.
    std::function<void(const std::string&)> announce;
};

// Loads the profiles (throws ConfigError), serves them, announces each endpoint, and
// returns the exit code after SIGINT/SIGTERM.
int run_sim_command(const SimCommandOptions& options);

}  // namespace tokenradar::sim
