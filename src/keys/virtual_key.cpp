#include <tokenradar/keys/virtual_key.hpp>

#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <chrono>
#include <stdexcept>

namespace tokenradar::keys {
namespace {

constexpr std::int64_t kDayUs = std::int64_t{86'400} * 1'000'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

template <std::size_t N>
std::array<unsigned char, N> random_bytes() {
    std::array<unsigned char, N> bytes{};
    // A key must never be guessable: no fallback to a weaker source.
    if (RAND_bytes(bytes.data(), static_cast<int>(N)) != 1) {
        throw std::runtime_error("OpenSSL RAND_bytes failed: no key generated");
    }
    return bytes;
}

std::int64_t us_of_days(std::chrono::sys_days d) noexcept {
    return static_cast<std::int64_t>(d.time_since_epoch().count()) * kDayUs;
}

}  // namespace

std::string_view to_string(BudgetPeriod p) noexcept {
    switch (p) {
        case BudgetPeriod::day:
            return "day";
        case BudgetPeriod::month:
            return "month";
        case BudgetPeriod::none:
            break;
    }
    return "";
}

Result<BudgetPeriod> parse_budget_period(std::string_view text) {
    if (text == "day") return BudgetPeriod::day;
    if (text == "month") return BudgetPeriod::month;
    return Error(Errc::bad_request, "budget_period: expected \"day\" or \"month\"");
}

BudgetPeriod usage_period(const KeySpec& spec) noexcept {
    return spec.budget_period == BudgetPeriod::none ? BudgetPeriod::day : spec.budget_period;
}

std::int64_t period_start_us(BudgetPeriod period, std::int64_t now_us) noexcept {
    const std::int64_t day = floor_div(now_us, kDayUs);
    if (period != BudgetPeriod::month) return day * kDayUs;
    const std::chrono::sys_days today{std::chrono::days(day)};
    const std::chrono::year_month_day ymd{today};
    return us_of_days(std::chrono::sys_days(ymd.year() / ymd.month() / 1));
}

std::int64_t period_end_us(BudgetPeriod period, std::int64_t now_us) noexcept {
    const std::int64_t start = period_start_us(period, now_us);
    if (period != BudgetPeriod::month) return start + kDayUs;
    const std::chrono::sys_days first{std::chrono::days(start / kDayUs)};
    const std::chrono::year_month_day ymd{first};
    return us_of_days(std::chrono::sys_days(ymd.year() / ymd.month() / 1 + std::chrono::months(1)));
}

std::string new_secret() {
    const auto bytes = random_bytes<32>();
    std::array<unsigned char, 48> b64{};  // 4 * ceil(32 / 3) + NUL
    const int n = EVP_EncodeBlock(b64.data(), bytes.data(), static_cast<int>(bytes.size()));
    std::string key = "trk_";
    for (int i = 0; i < n; ++i) {
        const char c = static_cast<char>(b64[static_cast<std::size_t>(i)]);
        if (c == '=') break;
        key += c == '+' ? '-' : c == '/' ? '_' : c;
    }
    return key;
}

std::string new_key_id() {
    const auto bytes = random_bytes<8>();
    std::string id = "key_";
    for (const unsigned char b : bytes) id += fmt::format("{:02x}", b);
    return id;
}

bool is_key_id(std::string_view id) noexcept {
    constexpr std::string_view kPrefix = "key_";
    if (id.size() != kPrefix.size() + 16 || !id.starts_with(kPrefix)) return false;
    for (const char c : id.substr(kPrefix.size())) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

std::string models_to_json(const std::vector<std::string>& models) {
    boost::json::array a;
    for (const auto& m : models) a.emplace_back(m);
    return boost::json::serialize(a);
}

std::vector<std::string> models_from_json(std::string_view text) {
    std::vector<std::string> models;
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(text, ec);
    if (const auto* a = v.if_array(); !ec && a != nullptr) {
        for (const auto& m : *a) {
            if (const auto* s = m.if_string()) models.emplace_back(*s);
        }
    }
    return models;
}

Error name_taken(std::string_view name) {
    return Error(Errc::bad_request, fmt::format("name: an active key is already named '{}'", name));
}

}  // namespace tokenradar::keys
