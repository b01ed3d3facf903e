#include <tokenradar/core/ids.hpp>

#include <chrono>
#include <random>

namespace tokenradar {
namespace {

std::mt19937_64& thread_generator() {
    thread_local std::mt19937_64 generator{[] {
        std::random_device device;
        return (static_cast<std::uint64_t>(device()) << 32) ^ device();
    }()};
    return generator;
}

// The low `digits` hex digits of v, most significant first.
void append_hex(std::string& out, std::uint64_t v, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) {
        out.push_back(kDigits[(v >> shift) & 0xf]);
    }
}

}  // namespace

std::string new_request_id() { return new_request_id({}); }

std::string new_request_id(std::string_view prefix) {
    std::string id;
    id.reserve(prefix.size() + 32);
    id.append(prefix);
    // Milliseconds first (as UUIDv7 does): ids made later sort later, so a store's unique
    // index over them (the observatory's duplicate check) grows at its end instead of on a
    // random page per insert.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    append_hex(id, static_cast<std::uint64_t>(ms), 12);
    auto& gen = thread_generator();
    append_hex(id, gen(), 16);
    append_hex(id, gen(), 4);
    return id;
}

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t basis) noexcept {
    std::uint64_t hash = basis;
    for (unsigned char c : bytes) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

}  // namespace tokenradar
