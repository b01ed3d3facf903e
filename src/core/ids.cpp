#include <tokenradar/core/ids.hpp>

#include <array>
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

// Writes the low `digits` hex digits of v at `out`, most significant first; returns the end.
char* put_hex(char* out, std::uint64_t v, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) *out++ = kDigits[(v >> shift) & 0xf];
    return out;
}

}  // namespace

std::string new_request_id() { return new_request_id({}); }

std::string new_request_id(std::string_view prefix) {
    // Milliseconds first (as UUIDv7 does): ids made later sort later, so a store's unique
    // index over them (the observatory's duplicate check) grows at its end instead of on a
    // random page per insert.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    auto& gen = thread_generator();
    std::array<char, 32> digits{};
    char* end = put_hex(digits.data(), static_cast<std::uint64_t>(ms), 12);
    end = put_hex(end, gen(), 16);
    put_hex(end, gen(), 4);
    std::string id;
    id.reserve(prefix.size() + digits.size());
    id.append(prefix);
    id.append(digits.data(), digits.size());
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
