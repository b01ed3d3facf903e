#pragma once
// gzip (RFC 1952) of a string in one deflate call, for tests and benchmarks that submit
// gzip-encoded bodies. Link ZLIB::ZLIB.

#include <zlib.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace tokenradar::testing {

inline std::string gzip(std::string_view data, int level = Z_DEFAULT_COMPRESSION) {
    z_stream z{};
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        throw std::runtime_error("deflateInit2");
    }
    std::string out(deflateBound(&z, data.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
    return out;
}

}  // namespace tokenradar::testing
