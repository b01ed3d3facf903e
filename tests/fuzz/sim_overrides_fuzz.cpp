// x-sim-* header values come from the network: parse them as "name: value" lines and, when
// they parse, plan a request with them. Neither may crash, hang or allocate without bound.

#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/sim/overrides.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::sim;
    static LatencyModel model(parse_profile(
        "name = \"fuzz\"\nmodels = [\"m\"]\n[ttft]\nbase_ms = 10\n[decode]\ntokens_per_s = 50\n"
        "token_jitter = 0.3\ntokens_per_chunk = [1, 5]\n[prefix_cache]\ncapacity_blocks = 64\n"
        "[faults]\nrate_stall = 0.2\nrate_disconnect = 0.2\n[tail]\nrate = 0.3\n"
        "ttft_multiplier = 50\n",
        "fuzz.toml"));
    std::string_view input(reinterpret_cast<const char*>(data), size);
    std::vector<Header> headers;
    while (!input.empty()) {
        auto eol = input.find('\n');
        std::string_view line = input.substr(0, eol);
        input = eol == std::string_view::npos ? std::string_view{} : input.substr(eol + 1);
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        headers.emplace_back(line.substr(0, colon), line.substr(colon + 1));
    }
    auto overrides = parse_overrides(headers);
    if (!overrides) return 0;
    PlanInput in;
    in.prompt_text = std::string_view(reinterpret_cast<const char*>(data), size);
    in.max_tokens = 64;  // bounds the work; output-tokens overrides are capped by it
    in.overrides = *overrides;
    (void)model.plan(in);
    // A degraded replica (an episode or /sim/control) plans the same request too.
    in.condition = tokenradar::sim::Condition{1000, 1000, 0.5};
    (void)model.plan(in);
    return 0;
}
