// The admin API's body for a new key (keys::parse_key_spec) from arbitrary bytes: either a
// spec within the documented bounds or a 400, never a crash; a spec written back with
// key_spec_json reads back the same.

#include <tokenradar/core/labels.hpp>
#include <tokenradar/keys/key_spec.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    auto spec = keys::parse_key_spec(bytes);
    if (!spec) {
        if (spec.error().code != Errc::bad_request || spec.error().message.empty()) std::abort();
        return 0;
    }
    if (!is_simple_name(spec->name) || spec->models.size() > keys::kMaxModels) std::abort();
    for (const std::int64_t v : {spec->rpm, spec->tpm, spec->budget_tokens}) {
        if (v < 0 || v > keys::kMaxLimit) std::abort();
    }
    if ((spec->budget_tokens > 0) != (spec->budget_period != keys::BudgetPeriod::none)) {
        std::abort();
    }
    auto again = keys::parse_key_spec(keys::key_spec_json(*spec));
    if (!again || !(*again == *spec)) std::abort();
    return 0;
}
