// `tokenradar sim`: loads the profiles, serves each on its port until SIGINT/SIGTERM.

#include <tokenradar/core/config.hpp>
#include <tokenradar/core/logging.hpp>
#include <tokenradar/core/thread_name.hpp>
#include <tokenradar/net/signals.hpp>
#include <tokenradar/sim/profile.hpp>
#include <tokenradar/sim/sim_server.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <fmt/format.h>

#include <memory>
#include <thread>

namespace tokenradar::sim {

int run_sim_command(const SimCommandOptions& options) {
    SimServerOptions server_options;
    server_options.api_key = options.api_key;
    server_options.pinned_wall_time_us = options.pinned_wall_time_us;
    server_options.pacing_quantum = options.pacing_quantum;
    if (!options.trace_path.empty()) {
        auto sink = TraceSink::open(options.trace_path);
        if (!sink) throw ConfigError(sink.error().message);
        server_options.trace = *sink;
    }

    std::vector<Profile> profiles;
    for (const auto& endpoint : options.endpoints) {
        Profile profile = load_profile(endpoint.profile, options.profiles_dir);
        if (options.seed) profile.seed = profile_seed_for_run(*options.seed, profile.name);
        profiles.push_back(std::move(profile));
    }
    // Each server has its own model (prefix cache, capacity, request counter); replicas of a
    // profile also need their own seeds, or they would draw alike request by request.
    const std::vector<unsigned> replicas = make_replicas_distinct(profiles);
    auto label = [&](std::size_t i) {  // "fixed", "fixed replica 1"
        return replicas[i] > 0 ? fmt::format("{} replica {}", profiles[i].name, replicas[i])
                               : profiles[i].name;
    };

    const unsigned threads =
        options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    // One io_context per thread, each serving its share of the connections without strands.
    // With one shared io_context every completion (each paced chunk's timer) went through a
    // strand: a second pass through the shared scheduler, its lock and futex wake-ups across
    // threads (~5% of the sim's CPU in a profile, docs/NOTES.md "Asio and coroutine traps").
    // The first context also runs the acceptors and the signal handler.
    std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
    for (unsigned i = 0; i < threads; ++i) {
        contexts.push_back(std::make_unique<boost::asio::io_context>(1));
        server_options.workers.push_back(contexts.back().get());
    }
    boost::asio::io_context& ioc = *contexts.front();
    std::vector<std::unique_ptr<SimServer>> servers;
    for (std::size_t i = 0; i < profiles.size(); ++i) {
        server_options.replica = replicas[i];
        auto server = std::make_unique<SimServer>(ioc, profiles[i], server_options);
        auto port = server->listen(options.host, options.endpoints[i].port);
        if (!port) throw ConfigError(port.error().message);
        server->start();
        if (options.announce) {
            options.announce(fmt::format("sim {} listening on http://{}:{} (models: {})", label(i),
                                         options.host, *port, fmt::join(profiles[i].models, ", ")));
        }
        servers.push_back(std::move(server));
    }

    net::ShutdownSignals signals(ioc, [&servers](int signal) {
        spdlog::info("signal {}: stopping (streams get 5 s to finish)", signal);
        for (auto& server : servers) server->stop(std::chrono::seconds(5));
    });

    // The other contexts may be idle for a while: guards keep them running until the first
    // one returns, which happens once the servers have stopped and their connections ended.
    std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards;
    std::vector<std::thread> workers;
    for (unsigned i = 1; i < threads; ++i) {
        guards.push_back(boost::asio::make_work_guard(*contexts[i]));
        workers.emplace_back([context = contexts[i].get()] {
            name_this_thread("tr-sim");
            context->run();
        });
    }
    ioc.run();
    for (auto& guard : guards) guard.reset();
    for (auto& worker : workers) worker.join();

    for (std::size_t i = 0; i < servers.size(); ++i) {
        const SimStats s = servers[i]->stats();
        spdlog::info(
            "sim {}: {} requests, {} chunks, write lateness p50 {:.3f} ms, p99 {:.3f} ms, max "
            "{:.3f} ms",
            label(i), s.requests, s.chunks, s.lateness_p50_ns / 1e6, s.lateness_p99_ns / 1e6,
            s.lateness_max_ns / 1e6);
    }
    return 0;
}

}  // namespace tokenradar::sim
