#pragma once
// Writes MaxMind DB files for tests: no real GeoIP database can be downloaded here, so tests
// build small ones from the public format (https://maxmind.github.io/MaxMind-DB/, v2.0):
//
//   search tree   node_count nodes of two records, record_size (24, 28, 32) bits each, big
//                 endian; a record < node_count is a node, == node_count "no data", and
//                 node_count + 16 + offset points into the data section
//   16 zero bytes
//   data section  typed fields: a control byte (type in the top 3 bits, 0 = extended type in
//                 the next byte as type - 7; size in the low 5, 29/30/31 = 1/2/3 more bytes),
//                 then the payload
//   metadata      "\xAB\xCD\xEFMaxMind.com" and a map (node_count, record_size, ip_version,
//                 database_type, languages, binary_format_*_version, build_epoch, description)
//
//     mmdb::Writer w(6);
//     w.insert("127.0.0.0/8", mmdb::map({{"country", mmdb::map({{"iso_code",
//     mmdb::utf8("ZZ")}})}})); mmdb::TempFile file(w.bytes());   // file.path() for GeoIp::open
//
// Values are encoded as they are built (no pointers, no deduplication). Test code only.

#include "temp_path.hpp"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenradar::testing::mmdb {

// One encoded data-section field.
using Value = std::string;

namespace detail {

enum Type : unsigned {
    kUtf8 = 2,
    kUint16 = 5,
    kUint32 = 6,
    kMap = 7,
    kUint64 = 9,
    kArray = 11,
};

inline std::string control(unsigned type, std::size_t size) {
    std::string extra;
    unsigned low = 0;
    if (size < 29) {
        low = static_cast<unsigned>(size);
    } else if (size < 285) {
        low = 29;
        extra.push_back(static_cast<char>(size - 29));
    } else if (size < 65'821) {
        low = 30;
        const std::size_t s = size - 285;
        extra += {static_cast<char>(s >> 8), static_cast<char>(s & 0xff)};
    } else {
        low = 31;
        const std::size_t s = size - 65'821;
        extra += {static_cast<char>(s >> 16), static_cast<char>((s >> 8) & 0xff),
                  static_cast<char>(s & 0xff)};
    }
    std::string out(1, static_cast<char>(((type <= 7 ? type : 0) << 5) | low));
    if (type > 7) out.push_back(static_cast<char>(type - 7));
    return out + extra;
}

// Unsigned integers take as few big-endian bytes as their value needs (0 takes none).
inline Value unsigned_field(unsigned type, std::uint64_t v) {
    std::string bytes;
    for (; v != 0; v >>= 8) bytes.insert(bytes.begin(), static_cast<char>(v & 0xff));
    return control(type, bytes.size()) + bytes;
}

}  // namespace detail

inline Value utf8(std::string_view s) {
    return detail::control(detail::kUtf8, s.size()) + std::string(s);
}
inline Value uint16(std::uint16_t v) { return detail::unsigned_field(detail::kUint16, v); }
inline Value uint32(std::uint32_t v) { return detail::unsigned_field(detail::kUint32, v); }
inline Value uint64(std::uint64_t v) { return detail::unsigned_field(detail::kUint64, v); }

inline Value map(const std::vector<std::pair<std::string, Value>>& entries) {
    Value out = detail::control(detail::kMap, entries.size());
    for (const auto& [key, value] : entries) out += utf8(key) + value;
    return out;
}

inline Value array(const std::vector<Value>& items) {
    Value out = detail::control(detail::kArray, items.size());
    for (const Value& item : items) out += item;
    return out;
}

class Writer {
  public:
    // ip_version 4 (32-bit tree) or 6 (128-bit tree, IPv4 networks under ::/96).
    explicit Writer(int ip_version = 6, int record_size = 28,
                    std::string database_type = "TokenRadar-Test-Country")
        : ip_version_(ip_version),
          record_size_(record_size),
          database_type_(std::move(database_type)) {
        if (ip_version != 4 && ip_version != 6)
            throw std::invalid_argument("mmdb: ip_version is 4 or 6");
        if (record_size != 24 && record_size != 28 && record_size != 32) {
            throw std::invalid_argument("mmdb: record_size is 24, 28 or 32");
        }
        nodes_.emplace_back();
    }

    // Maps a network ("10.0.0.0/8", "2001:db8::/32") to `value`. Networks must not overlap
    // (no merging of a smaller network into a larger one's data).
    void insert(std::string_view cidr, const Value& value) {
        const auto [address, bits] = parse(cidr);
        const std::size_t offset = data_.size();
        data_ += value;
        std::size_t node = 0;
        for (int i = 0; i < bits; ++i) {
            const int bit = (address[static_cast<std::size_t>(i / 8)] >> (7 - i % 8)) & 1;
            Record r = nodes_[node][static_cast<std::size_t>(bit)];
            if (r.kind == Record::data) throw std::invalid_argument("mmdb: overlapping networks");
            if (i == bits - 1) {
                if (r.kind != Record::empty)
                    throw std::invalid_argument("mmdb: overlapping networks");
                nodes_[node][static_cast<std::size_t>(bit)] = {Record::data, offset};
                return;
            }
            if (r.kind == Record::empty) {
                r = {Record::node, nodes_.size()};
                nodes_[node][static_cast<std::size_t>(bit)] = r;
                nodes_.emplace_back();
            }
            node = r.value;
        }
    }

    [[nodiscard]] std::string bytes() const {
        const std::uint64_t node_count = nodes_.size();
        std::string out;
        for (const Node& n : nodes_) {
            const std::uint64_t left = record_value(n[0], node_count);
            const std::uint64_t right = record_value(n[1], node_count);
            if (record_size_ == 28) {
                append_be(out, left & 0xffffff, 3);
                out.push_back(static_cast<char>(((left >> 24) << 4) | (right >> 24)));
                append_be(out, right & 0xffffff, 3);
            } else {
                append_be(out, left, static_cast<std::size_t>(record_size_ / 8));
                append_be(out, right, static_cast<std::size_t>(record_size_ / 8));
            }
        }
        out += std::string(16, '\0');
        out += data_;
        out += "\xAB\xCD\xEFMaxMind.com";
        out += map({
            {"binary_format_major_version", uint16(2)},
            {"binary_format_minor_version", uint16(0)},
            {"build_epoch", uint64(1'764'460'800)},
            {"database_type", utf8(database_type_)},
            {"description", map({{"en", utf8("TokenRadar test database")}})},
            {"ip_version", uint16(static_cast<std::uint16_t>(ip_version_))},
            {"languages", array({utf8("en")})},
            {"node_count", uint32(static_cast<std::uint32_t>(node_count))},
            {"record_size", uint16(static_cast<std::uint16_t>(record_size_))},
        });
        return out;
    }

  private:
    struct Record {
        enum Kind { empty, node, data } kind = empty;
        std::size_t value = 0;  // node index or data-section offset
    };
    using Node = std::array<Record, 2>;

    [[nodiscard]] std::uint64_t record_value(const Record& r, std::uint64_t node_count) const {
        std::uint64_t v = node_count;
        if (r.kind == Record::node) v = r.value;
        if (r.kind == Record::data) v = node_count + 16 + r.value;
        if (v >> record_size_ != 0)
            throw std::length_error("mmdb: database too big for its record_size");
        return v;
    }

    static void append_be(std::string& out, std::uint64_t v, std::size_t n) {
        for (std::size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }

    // The network's address as the tree's bits (4 or 16 bytes) and its prefix length there.
    [[nodiscard]] std::pair<std::array<unsigned char, 16>, int> parse(std::string_view cidr) const {
        const auto slash = cidr.find('/');
        if (slash == std::string_view::npos)
            throw std::invalid_argument("mmdb: expected a network a.b.c.d/n");
        const std::string ip(cidr.substr(0, slash));
        const int prefix = std::stoi(std::string(cidr.substr(slash + 1)));
        std::array<unsigned char, 16> address{};
        int bits = 0;
        if (inet_pton(AF_INET, ip.c_str(), address.data() + (ip_version_ == 6 ? 12 : 0)) == 1) {
            if (prefix < 1 || prefix > 32)
                throw std::invalid_argument("mmdb: IPv4 prefix out of 1..32");
            bits = ip_version_ == 6 ? 96 + prefix : prefix;
        } else if (inet_pton(AF_INET6, ip.c_str(), address.data()) == 1) {
            if (ip_version_ != 6)
                throw std::invalid_argument("mmdb: an IPv6 network in an IPv4 database");
            if (prefix < 1 || prefix > 128)
                throw std::invalid_argument("mmdb: IPv6 prefix out of 1..128");
            bits = prefix;
        } else {
            throw std::invalid_argument("mmdb: not an IP network: " + std::string(cidr));
        }
        return {address, bits};
    }

    int ip_version_;
    int record_size_;
    std::string database_type_;
    std::vector<Node> nodes_;
    std::string data_;
};

// A file holding `bytes` in the temporary directory, removed at the end of its scope.
class TempFile : public TempPath {
  public:
    explicit TempFile(std::string_view bytes) : TempPath("mmdb", ".mmdb") { write(bytes); }
};

}  // namespace tokenradar::testing::mmdb
