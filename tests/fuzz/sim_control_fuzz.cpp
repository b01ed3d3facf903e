// POST /sim/control bodies come from the network: parse them and, when they parse, command
// a SimControl with them and write its state as JSON, which must parse back. None of it may
// crash, hang or allocate without bound; an error must say what was wrong.

#include <tokenradar/sim/control.hpp>

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::sim;
    constexpr std::int64_t kS = 1'000'000'000;
    static SimControl control({{10 * kS, 5 * kS, 60 * kS, {2, 1, 0.5}}});
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    auto command = parse_control_body(body);
    if (!command) {
        if (command.error().message.empty()) std::abort();
        return 0;
    }
    control.command(*command, 0);
    for (std::int64_t at : {std::int64_t{0}, 12 * kS, 100'000 * kS}) {
        const ControlState state = control.state(at);
        boost::system::error_code ec;
        (void)boost::json::parse(control_state_json(state), ec);
        if (ec) std::abort();
        if (state.source == ConditionSource::command &&
            !(state.effective.ttft_multiplier >= 1 && state.effective.tpot_multiplier >= 1 &&
              state.effective.error_rate >= 0 && state.effective.error_rate <= 1)) {
            std::abort();
        }
    }
    control.clear();
    return 0;
}
