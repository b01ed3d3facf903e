#include <arpa/inet.h>
#include <maxminddb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <tokenradar/observatory/cell.hpp>
#include <tokenradar/observatory/geoip.hpp>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace tokenradar::observatory {
namespace {

// The address in `text` as the sockaddr libmaxminddb looks up; false when it is not one.
// An IPv4-mapped IPv6 address (what a dual-stack socket reports for an IPv4 peer) becomes
// the IPv4 address: IPv4 databases cannot look up IPv6 at all, and IPv6 databases keep IPv4
// under ::/96, where only MaxMind's own databases alias ::ffff:0:0/96 to it.
bool parse_address(std::string_view text, sockaddr_storage& out) {
    std::array<char, INET6_ADDRSTRLEN> buf{};  // inet_pton needs a NUL-terminated string
    if (text.empty() || text.size() >= buf.size() || text.find('\0') != std::string_view::npos) {
        return false;
    }
    std::memcpy(buf.data(), text.data(), text.size());
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
    if (inet_pton(AF_INET, buf.data(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        return true;
    }
    in6_addr a6{};
    if (inet_pton(AF_INET6, buf.data(), &a6) != 1) return false;
    constexpr std::array<unsigned char, 12> kMappedPrefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a6.s6_addr, kMappedPrefix.data(), kMappedPrefix.size()) == 0) {
        v4->sin_family = AF_INET;
        std::memcpy(&v4->sin_addr, a6.s6_addr + kMappedPrefix.size(), 4);
        return true;
    }
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
    v6->sin6_family = AF_INET6;
    v6->sin6_addr = a6;
    return true;
}

// A string at `path` in the entry, "" when absent, of another type or not a usable label.
std::string label_at(MMDB_entry_s entry, const char* const* path) {
    MMDB_entry_data_s data{};
    if (MMDB_aget_value(&entry, &data, path) != MMDB_SUCCESS || !data.has_data ||
        data.type != MMDB_DATA_TYPE_UTF8_STRING) {
        return {};
    }
    std::string value(data.utf8_string, data.data_size);
    if (value.empty() || !check_label_value("client_region", value)) return {};
    return value;
}

}  // namespace

void GeoIp::Close::operator()(MMDB_s* db) const noexcept {
    MMDB_close(db);
    delete db;
}

GeoIp::GeoIp(std::string path, std::unique_ptr<MMDB_s, Close> db)
    : path_(std::move(path)), db_(std::move(db)) {}
GeoIp::GeoIp(GeoIp&&) noexcept = default;
GeoIp& GeoIp::operator=(GeoIp&&) noexcept = default;
GeoIp::~GeoIp() = default;

Result<GeoIp> GeoIp::open(const std::string& path) {
    // Not owned by Close until MMDB_open succeeds: on failure it has freed what it took, and
    // MMDB_close on that handle would free it again.
    auto db = std::make_unique<MMDB_s>();
    const int status = MMDB_open(path.c_str(), MMDB_MODE_MMAP, db.get());
    if (status != MMDB_SUCCESS) {
        const int saved_errno = errno;  // MMDB_open keeps errno across its cleanup
        std::string why = MMDB_strerror(status);
        if (status == MMDB_FILE_OPEN_ERROR || status == MMDB_IO_ERROR) {
            why += fmt::format(" ({})", std::generic_category().message(saved_errno));
        }
        return Error(Errc::bad_request,
                     fmt::format("geoip: cannot open '{}' as a MaxMind DB: {}", path, why));
    }
    return GeoIp(path, std::unique_ptr<MMDB_s, Close>(db.release()));
}

std::string GeoIp::region_of(std::string_view ip) const {
    sockaddr_storage address{};
    if (!parse_address(ip, address)) return {};
    int error = MMDB_SUCCESS;
    const MMDB_lookup_result_s found =
        MMDB_lookup_sockaddr(db_.get(), reinterpret_cast<const sockaddr*>(&address), &error);
    // An IPv6 address in an IPv4-only database is an error here, and simply not found for us.
    if (error != MMDB_SUCCESS || !found.found_entry) return {};
    static constexpr std::array<const char*, 3> kCountry{"country", "iso_code", nullptr};
    static constexpr std::array<const char*, 3> kContinent{"continent", "code", nullptr};
    std::string region = label_at(found.entry, kCountry.data());
    if (region.empty()) region = label_at(found.entry, kContinent.data());
    return region;
}

}  // namespace tokenradar::observatory
