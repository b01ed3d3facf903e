// Feeds arbitrary bytes to the server's request reader: the Beast parser configured with
// the server's limits, over an in-memory buffer (net::parse_request). Small limits make the
// 431/413 paths reachable by the fuzzer.

#include <tokenradar/net/request_reader.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tokenradar::net;
    static const ServerLimits kDefault{};
    static const ServerLimits kSmall = [] {
        ServerLimits l;
        l.max_header_bytes = 512;
        l.max_body_bytes = 1024;
        return l;
    }();
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    for (const ServerLimits* limits : {&kDefault, &kSmall}) {
        auto result = parse_request(bytes, *limits);
        if (result) {
            // Touch what a handler would read.
            (void)result->target().size();
            (void)result->body().size();
            (void)result->keep_alive();
        }
    }
    return 0;
}
