// Rollup rows (observatory::Aggregate::decode) over arbitrary bytes: what the store hands
// back may be damaged. Whatever decodes must encode back to the same bytes and decode equal.

#include <tokenradar/observatory/rollup.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using tokenradar::observatory::Aggregate;
    auto decoded = Aggregate::decode(std::span<const std::uint8_t>(data, size));
    if (!decoded) return 0;
    const auto again = Aggregate::decode(decoded->encode());
    if (!again || !(*again == *decoded)) std::abort();
    return 0;
}
