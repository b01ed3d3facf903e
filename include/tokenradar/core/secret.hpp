#pragma once
// A credential that cannot be printed by accident: formatting a Secret (fmt, spdlog,
// streams) prints a redacted marker. Only reveal() gives the value, at the one place that
// puts it on the wire.

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <string_view>

namespace tokenradar {

class Secret {
public:
    Secret() = default;
    explicit Secret(std::string value) : value_(std::move(value)) {}

    [[nodiscard]] const std::string& reveal() const noexcept { return value_; }
    [[nodiscard]] bool empty() const noexcept { return value_.empty(); }

    friend bool operator==(const Secret&, const Secret&) = default;
    friend std::ostream& operator<<(std::ostream& os, const Secret&) { return os << "[redacted]"; }

private:
    std::string value_;
};

}  // namespace tokenradar

template <>
struct fmt::formatter<tokenradar::Secret> : fmt::formatter<std::string_view> {
    auto format(const tokenradar::Secret&, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format("[redacted]", ctx);
    }
};
