#include <tokenradar/bench/target.hpp>

#include <tokenradar/dialect/http_call.hpp>

#include <fmt/format.h>

namespace tokenradar::bench {

Result<Target> parse_target(std::string_view spec, const std::map<std::string, std::string>& key_env,
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
    if (t.name.find_first_of(" \t,") != std::string::npos) return bad("NAME must not contain spaces or commas");
    std::string_view rest = spec.substr(eq + 1);
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return bad("missing API: (openai, anthropic or gemini)");
    auto api = dialect::parse_api(rest.substr(0, colon));
    if (!api) return bad(fmt::format("unknown API '{}' (openai, anthropic or gemini)", rest.substr(0, colon)));
    t.api = *api;
    rest = rest.substr(colon + 1);
    const std::size_t hash = rest.rfind('#');
    if (hash == std::string_view::npos || hash + 1 == rest.size()) return bad("missing #MODEL");
    t.model = std::string(rest.substr(hash + 1));
    auto url = net::parse_url(rest.substr(0, hash));
    if (!url) return bad(url.error().message);
    t.base = std::move(*url);
    if (t.base.target.find('?') != std::string::npos) return bad("BASE_URL must not have a query");

    auto named = key_env.find(t.name);
    t.key_env = named != key_env.end() ? named->second : std::string(dialect::default_key_env(t.api));
    if (auto value = env(t.key_env); value && !value->empty()) t.key = Secret(std::move(*value));
    return t;
}

}  // namespace tokenradar::bench
