#include <tokenradar/bench/target.hpp>

#include <tokenradar/dialect/http_call.hpp>

#include <fmt/format.h>

namespace tokenradar::bench {

bool is_loopback(std::string_view host) {
    return host == "localhost" || host == "::1" || host.starts_with("127.");
}

Result<Target> parse_target(std::string_view spec,
                            const std::map<std::string, std::string>& key_env,
                            const EnvLookup& env) {
    const auto bad = [&](std::string_view why) {
        return Error(Errc::bad_request,
                     fmt::format("--target '{}': {} (expected NAME=API:BASE_URL#MODEL, e.g. "
                                 "gpt4o=openai:https://api.openai.com/v1#gpt-4o)",
                                 spec, why));
    };
    const std::size_t eq = spec.find('=');
    if (eq == std::string_view::npos || eq == 0) return bad("missing NAME=");
    Target t;
    t.name = std::string(spec.substr(0, eq));
    if (t.name.find_first_of(" \t,") != std::string::npos)
        return bad("NAME must not contain spaces or commas");
    std::string_view rest = spec.substr(eq + 1);
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos)
        return bad("missing API: (openai, anthropic, gemini or openai-responses)");
    auto api = dialect::parse_api(rest.substr(0, colon));
    if (!api)
        return bad(fmt::format("unknown API '{}' (openai, anthropic, gemini or openai-responses)",
                               rest.substr(0, colon)));
    t.api = *api;
    rest = rest.substr(colon + 1);
    const std::size_t hash = rest.rfind('#');
    if (hash == std::string_view::npos || hash + 1 == rest.size()) return bad("missing #MODEL");
    t.model = std::string(rest.substr(hash + 1));
    auto url = net::parse_url(rest.substr(0, hash));
    if (!url) return bad(url.error().message);
    t.base = std::move(*url);
    if (t.base.target.find('?') != std::string::npos) return bad("BASE_URL must not have a query");

    // An explicit --key-env (for this target or for `*`) is used as given. The API's usual
    // variable is sent only to the API's own host or to this machine, so a real key never
    // travels to a third-party "compatible" server by accident.
    auto named = key_env.find(t.name);
    if (named == key_env.end()) named = key_env.find("*");
    if (named != key_env.end()) {
        t.key_env = named->second;
    } else if (t.base.host == dialect::official_host(t.api) || is_loopback(t.base.host)) {
        t.key_env = std::string(dialect::default_key_env(t.api));
    }
    if (!t.key_env.empty()) {
        if (auto value = env(t.key_env); value && !value->empty())
            t.key = Secret(std::move(*value));
    }
    return t;
}

}  // namespace tokenradar::bench
