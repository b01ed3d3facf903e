// The store's packed record fields (store/packed_record.hpp) over arbitrary bytes: what a
// database file hands back may be damaged. Whatever decodes must pack back to the same bytes
// (one encoding per record); nothing may read outside the input.

#include "../../src/store/packed_record.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace store = tokenradar::store;
    const std::span<const std::uint8_t> bytes(data, size);
    tokenradar::Measurement m;
    if (!store::unpack_record(bytes, m)) return 0;
    std::vector<std::uint8_t> buffer;
    const auto again = store::pack_record(m, buffer);
    if (again.size() != size || !std::equal(again.begin(), again.end(), bytes.begin()))
        std::abort();
    return 0;
}
