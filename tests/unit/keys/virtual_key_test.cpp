#include <tokenradar/keys/virtual_key.hpp>

#include <gtest/gtest.h>

#include <set>

namespace tokenradar::keys {
namespace {

// 2026-03-15T12:34:56Z and the day and month around it.
constexpr std::int64_t kNow = 1'773'578'096'000'000;
constexpr std::int64_t kMarch15 = 1'773'532'800'000'000;
constexpr std::int64_t kMarch1 = 1'772'323'200'000'000;
constexpr std::int64_t kApril1 = 1'775'001'600'000'000;

TEST(VirtualKey, PeriodsAreUtcDaysAndMonths) {
    EXPECT_EQ(period_start_us(BudgetPeriod::day, kNow), kMarch15);
    EXPECT_EQ(period_end_us(BudgetPeriod::day, kNow), kMarch15 + 86'400'000'000);
    EXPECT_EQ(period_start_us(BudgetPeriod::month, kNow), kMarch1);
    EXPECT_EQ(period_end_us(BudgetPeriod::month, kNow), kApril1);
    // The last microsecond of a month is in it; the next is the next month's first.
    EXPECT_EQ(period_start_us(BudgetPeriod::month, kApril1 - 1), kMarch1);
    EXPECT_EQ(period_start_us(BudgetPeriod::month, kApril1), kApril1);
    // December rolls into the next year.
    constexpr std::int64_t kDec31 = 1'798'675'200'000'000;
    EXPECT_EQ(period_end_us(BudgetPeriod::month, kDec31), 1'798'761'600'000'000);
}

TEST(VirtualKey, UsageIsCountedPerBudgetPeriodOrPerDay) {
    KeySpec spec;
    EXPECT_EQ(usage_period(spec), BudgetPeriod::day);
    spec.budget_tokens = 10;
    spec.budget_period = BudgetPeriod::month;
    EXPECT_EQ(usage_period(spec), BudgetPeriod::month);
}

TEST(VirtualKey, SecretsAndIdsAreFreshAndWellFormed) {
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        const std::string secret = new_secret();
        ASSERT_EQ(secret.size(), 4U + 43U) << secret;
        EXPECT_TRUE(secret.starts_with("trk_"));
        EXPECT_EQ(secret.find_first_not_of(
                      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", 4),
                  std::string::npos)
            << secret;
        EXPECT_TRUE(seen.insert(secret).second);
        const std::string id = new_key_id();
        EXPECT_TRUE(is_key_id(id)) << id;
        EXPECT_TRUE(seen.insert(id).second);
    }
    EXPECT_FALSE(is_key_id("key_0123456789abcdeF"));
    EXPECT_FALSE(is_key_id("key_0123456789abcde"));
    EXPECT_FALSE(is_key_id("kex_0123456789abcdef"));
    EXPECT_FALSE(is_key_id("../../etc/passwd"));
}

}  // namespace
}  // namespace tokenradar::keys
