// `tokenradar serve`: the gateway with its store and observatory (serve::Service). Loads and
// validates the configuration, opens the store, serves until SIGINT/SIGTERM (SIGHUP re-reads
// the listener's TLS certificate), then lets streams finish and flushes the store.

#include "commands.hpp"

#include <tokenradar/core/logging.hpp>
#include <tokenradar/gateway/config.hpp>
#include <tokenradar/net/api_keys.hpp>
#include <tokenradar/net/signals.hpp>
#include <tokenradar/serve/config.hpp>
#include <tokenradar/serve/service.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace tokenradar::app {
namespace {

struct ServeArgs {
    std::string config;
    bool check_config = false;
    bool hash_key = false;
    std::optional<std::uint16_t> port;
};

int hash_key_from_stdin() {
    std::string key;
    std::getline(std::cin, key);
    if (key.empty()) throw ConfigError("--hash-key: expected the client key on standard input");
    std::printf("%s\n", net::hash_api_key(key).c_str());
    return 0;
}

// SIGHUP, for as long as the server runs: the listener's certificate and key are read again
// (a renewed certificate without a restart); a failure keeps the one in use.
void reload_tls_on_hangup(boost::asio::signal_set& hangup, serve::Service& service) {
    hangup.async_wait([&hangup, &service](const boost::system::error_code& ec, int) {
        if (ec) return;  // cancelled: stopping
        auto reloaded = service.server().reload_tls();
        if (!reloaded) {
            spdlog::error("SIGHUP: TLS certificate not reloaded, the one in use stays: {}",
                          reloaded.error().message);
        } else if (*reloaded) {
            spdlog::info("SIGHUP: TLS certificate reloaded from {}",
                         service.server().config().tls_cert_file);
        } else {
            spdlog::info("SIGHUP: no [listener] tls_cert to reload");
        }
        reload_tls_on_hangup(hangup, service);
    });
}

int run(const ServeArgs& args) {
    if (args.hash_key) return hash_key_from_stdin();
    if (args.config.empty()) throw ConfigError("serve: --config FILE is required");
    serve::ServeConfig serve_config = serve::load_serve_config_file(args.config);
    if (args.port) serve_config.gateway.port = *args.port;
    if (args.check_config) {
        std::printf("%s", serve::describe(serve_config).c_str());
        return 0;
    }
    serve::Service service(std::move(serve_config));
    const gateway::GatewayConfig& config = service.server().config();
    auto port = service.start();
    if (!port) throw ConfigError(port.error().message);
    boost::asio::io_context signals_ioc;
    boost::asio::signal_set hangup(signals_ioc, SIGHUP);
    reload_tls_on_hangup(hangup, service);
    net::ShutdownSignals signals(signals_ioc, [&hangup](int) { hangup.cancel(); });
    std::printf("tokenradar serve: listening on %s://%s:%u (%zu models, %zu providers)\n",
                config.tls_cert_file.empty() ? "http" : "https", config.host.c_str(),
                static_cast<unsigned>(*port), config.models.size(), config.providers.size());
    std::fflush(stdout);
    signals_ioc.run();  // returns after the first SIGINT/SIGTERM
    std::fprintf(stderr, "tokenradar serve: stopping (streams get %lld ms)\n",
                 static_cast<long long>(config.shutdown_grace.count()));
    service.stop();
    if (const std::string summary = service.store_summary(); !summary.empty()) {
        std::fprintf(stderr, "tokenradar serve: %s\n", summary.c_str());
    }
    return 0;
}

}  // namespace

void register_serve(CLI::App& app, Runner& runner) {
    auto args = std::make_shared<ServeArgs>();
    CLI::App* sub = app.add_subcommand(
        "serve", "OpenAI-compatible gateway: relays to real providers and measures every request");
    sub->add_option("--config", args->config, "Gateway configuration (TOML)");
    sub->add_flag("--check-config", args->check_config,
                  "Validate the configuration, explain it and exit");
    sub->add_flag("--hash-key", args->hash_key,
                  "Read a client key on stdin and print the sha256 that [[auth.keys]] expects");
    sub->add_option("--port", args->port, "Listen on this port instead of the configured one");
    sub->callback([args, &runner] { runner = [args] { return run(*args); }; });
}

}  // namespace tokenradar::app
