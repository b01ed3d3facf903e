#pragma once
// A bench target pointing at an in-process sim through its OpenAI-compatible endpoint (or,
// with `api`, its other OpenAI-based dialect, the Responses API at the same /v1 base).

#include "sim_fixture.hpp"

#include <tokenradar/bench/target.hpp>

#include <string>
#include <string_view>

namespace tokenradar::testing {

inline bench::Target sim_target(const std::string& name, const SimFixture& sim,
                                const std::string& model, std::string_view api = "openai") {
    const bench::EnvLookup no_env = [](std::string_view) { return std::optional<std::string>(); };
    auto target =
        bench::parse_target(name + "=" + std::string(api) + ":" + sim.base_url() + "/v1#" + model,
                            {}, no_env)
            .value();
    target.key = Secret("sk-test");
    return target;
}

}  // namespace tokenradar::testing
