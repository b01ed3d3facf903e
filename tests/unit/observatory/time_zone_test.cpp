// Tests of src/observatory/time_zone.cpp (private).
#include "../../../src/observatory/time_zone.hpp"

#include <tokenradar/observatory/rollup.hpp>

#include <gtest/gtest.h>

namespace tokenradar::observatory {
namespace {

constexpr std::int64_t kSecondUs = 1'000'000;
// 2025-11-02T00:00:00Z, a Sunday; New York falls back at 06:00Z (02:00 EDT -> 01:00 EST).
constexpr std::int64_t kFallBackDay = 1'762'041'600 * kSecondUs;
// 2026-03-08T00:00:00Z, a Sunday; New York springs forward at 07:00Z (02:00 EST -> 03:00 EDT).
constexpr std::int64_t kSpringDay = 1'772'928'000 * kSecondUs;

cctz::time_zone zone(std::string_view name) {
    auto z = load_zone(name);
    EXPECT_TRUE(z.has_value()) << name;
    return z ? *z : cctz::utc_time_zone();
}

LocalSlot slot(std::int64_t start_us, std::string_view name) {
    return local_slot(start_us, kHourUs, zone(name));
}

TEST(TimeZone, Rfc3339) {
    EXPECT_EQ(rfc3339_utc(kFallBackDay), "2025-11-02T00:00:00Z");
    EXPECT_EQ(rfc3339_utc(kFallBackDay + 17 * kHourUs + 999'999), "2025-11-02T17:00:00Z");
    EXPECT_EQ(rfc3339_utc(-1), "1969-12-31T23:59:59Z");
}

TEST(TimeZone, LoadsOnlyExistingIanaNames) {
    EXPECT_EQ(zone("UTC").name(), "UTC");
    EXPECT_EQ(zone("Europe/Paris").name(), "Europe/Paris");
    EXPECT_EQ(zone("Etc/GMT+5").name(), "Etc/GMT+5");
    EXPECT_EQ(zone("America/Argentina/Buenos_Aires").name(), "America/Argentina/Buenos_Aires");
    for (auto bad : {"", "utc", "Nowhere/Place", "../zoneinfo/UTC", "Europe/../UTC", "/UTC",
                     "Europe/", "Europe/Paris ", "localtime", "zone.tab", "Europe\\Paris"}) {
        const auto z = load_zone(bad);
        ASSERT_FALSE(z.has_value()) << bad;
        EXPECT_EQ(z.error().code, make_error_code(Errc::bad_request));
    }
    EXPECT_FALSE(load_zone(std::string(kMaxZoneNameBytes + 1, 'A')).has_value());
    EXPECT_EQ(load_zone("Europe/Pariss").error().message,
              "tz: expected an IANA time zone such as America/New_York, got 'Europe/Pariss' (no "
              "such zone)");
}

TEST(TimeZone, NewYorkAcrossFallBack) {
    // 04:00Z = 00:00 EDT; 05:00Z = 01:00 EDT; 06:00Z = 01:00 EST (the hour repeats); 07:00Z = 02:00
    // EST.
    EXPECT_EQ(slot(kFallBackDay + 4 * kHourUs, "America/New_York").hour, 0);
    const LocalSlot edt = slot(kFallBackDay + 5 * kHourUs, "America/New_York");
    const LocalSlot est = slot(kFallBackDay + 6 * kHourUs, "America/New_York");
    EXPECT_EQ(edt.hour, 1);
    EXPECT_EQ(est.hour, 1);
    EXPECT_EQ(edt.weekday, 6);  // Sunday
    EXPECT_EQ(est.weekday, 6);
    EXPECT_EQ(slot(kFallBackDay + 7 * kHourUs, "America/New_York").hour, 2);
    // 03:00Z is still Saturday 23:00 EDT.
    const LocalSlot saturday = slot(kFallBackDay + 3 * kHourUs, "America/New_York");
    EXPECT_EQ(saturday.hour, 23);
    EXPECT_EQ(saturday.weekday, 5);
}

TEST(TimeZone, NewYorkAcrossSpringForward) {
    EXPECT_EQ(slot(kSpringDay + 6 * kHourUs, "America/New_York").hour, 1);  // 01:00 EST
    EXPECT_EQ(slot(kSpringDay + 7 * kHourUs, "America/New_York").hour, 3);  // 03:00 EDT: no 2
    EXPECT_EQ(slot(kSpringDay + 16 * kHourUs, "America/New_York").hour, 12);
    EXPECT_EQ(slot(kSpringDay + 16 * kHourUs, "America/New_York").weekday, 6);
    EXPECT_EQ(slot(kSpringDay + 28 * kHourUs, "America/New_York").weekday, 0);  // Monday
}

TEST(TimeZone, HalfHourZonesTakeTheHourHoldingTheMiddle) {
    // 03:00Z-04:00Z is 08:30-09:30 in Kolkata (+05:30): its middle is 09:00.
    EXPECT_EQ(slot(kFallBackDay + 3 * kHourUs, "Asia/Kolkata").hour, 9);
    // 03:00Z-04:00Z is 08:45-09:45 in Kathmandu (+05:45): mostly 9.
    EXPECT_EQ(slot(kFallBackDay + 3 * kHourUs, "Asia/Kathmandu").hour, 9);
    // UTC and whole-hour zones: the bucket's own hour.
    EXPECT_EQ(slot(kFallBackDay + 3 * kHourUs, "UTC").hour, 3);
    EXPECT_EQ(slot(kFallBackDay + 3 * kHourUs, "Asia/Tokyo").hour, 12);
    EXPECT_EQ(slot(kFallBackDay, "UTC").weekday, 6);
}

}  // namespace
}  // namespace tokenradar::observatory
