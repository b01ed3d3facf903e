#pragma once
// Time zones for the query API (cctz: g++ 12's chrono has no tzdb). RFC 3339 times are
// core's rfc3339_utc (clock.hpp), included here for the query code.
//
// Names come from the network, and cctz reads `$TZDIR/<name>` (default /usr/share/zoneinfo)
// and keeps every name it was asked for in a process-wide map, loaded or not. So a name is
// checked before cctz sees it: IANA shape (components of letters, digits, `_`, `+`, `-`, the
// first starting with a capital letter: no `..`, no absolute path, no `localtime`), at most
// 64 bytes, and a regular file under the zone directory. Only existing zones reach cctz,
// which bounds its map.
//
// Threads: any (cctz's map is locked inside cctz). Reads the file system; nothing suspends.

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/error.hpp>

#include <cctz/time_zone.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace tokenradar::observatory {

inline constexpr std::size_t kMaxZoneNameBytes = 64;

// "UTC" never touches the file system. Errc::bad_request naming `tz` for a bad or unknown name.
Result<cctz::time_zone> load_zone(std::string_view name);

// Where a UTC hour bucket lands on a local clock: the hour of day and weekday (0 = Monday)
// of the bucket's middle. In zones whose offset is a whole number of hours that is the
// bucket's own local hour; in +05:30 or +05:45 zones a UTC hour straddles two local hours
// and goes wholly to the one holding its middle (the later one when the split is even, as
// in India). Across a DST change two UTC hours can land on one local hour (fall back) and
// one local hour gets none (spring forward).
struct LocalSlot {
    int hour = 0;     // 0..23
    int weekday = 0;  // 0 = Monday .. 6 = Sunday
};
LocalSlot local_slot(std::int64_t utc_bucket_start_us, std::int64_t bucket_us,
                     const cctz::time_zone& zone);

}  // namespace tokenradar::observatory
