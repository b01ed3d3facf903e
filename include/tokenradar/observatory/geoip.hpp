#pragma once
// The client region of a submitter's address, from a MaxMind DB file (GeoLite2-Country,
// GeoIP2-Country or -City, or any database with the same `country.iso_code` /
// `continent.code` layout), read with libmaxminddb.
//
//     auto geo = GeoIp::open("/var/lib/GeoIP/GeoLite2-Country.mmdb");  // Result<GeoIp>
//     std::string region = geo->region_of("81.2.69.160");             // "GB"
//
// The file is mapped (MMDB_MODE_MMAP) once and never reread: replacing it needs a restart.
// Replace it by renaming a new file over it, never by rewriting it in place (the mapping
// would see the bytes change under it).
//
// Threads: region_of may be called from any number of threads at once. libmaxminddb's
// lookups take a const MMDB_s and only read the mapping (since 1.3.1 the one value it used
// to cache lazily, the IPv4 start node of an IPv6 tree, is computed in MMDB_open); its
// manual: "thread safe when compiled and linked with a thread-safe malloc and free". A
// lookup never blocks and allocates nothing but its answer.

#include <tokenradar/core/error.hpp>

#include <memory>
#include <string>
#include <string_view>

struct MMDB_s;

namespace tokenradar::observatory {

class GeoIp {
  public:
    // Opens and validates the file (metadata, format version). Errors (Errc::bad_request)
    // name the file and what was wrong: "geoip: cannot open '/x.mmdb' as a MaxMind DB: ...".
    static Result<GeoIp> open(const std::string& path);

    GeoIp(GeoIp&&) noexcept;
    GeoIp& operator=(GeoIp&&) noexcept;
    ~GeoIp();

    // The region of an address written as text ("203.0.113.7", "2001:db8::1", an
    // IPv4-mapped "::ffff:203.0.113.7" is looked up as the IPv4 address): the country's
    // ISO 3166 code (`country.iso_code`, "DE"), else the continent's code
    // (`continent.code`, "EU"; some networks have a continent but no country). "" when the
    // text is not an IP address, the address is not in the database, or the database's
    // value is not a usable label (check_label_value).
    [[nodiscard]] std::string region_of(std::string_view ip) const;

    [[nodiscard]] const std::string& path() const noexcept { return path_; }

  private:
    struct Close {
        void operator()(MMDB_s* db) const noexcept;
    };
    GeoIp(std::string path, std::unique_ptr<MMDB_s, Close> db);

    std::string path_;
    std::unique_ptr<MMDB_s, Close> db_;  // a pointer: MMDB_s must not move once opened
};

}  // namespace tokenradar::observatory
