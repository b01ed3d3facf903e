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

    // Replaces each occurrence of the value in `text` from `from` on with "[redacted]" (an
    // upstream that echoes the key it received must not hand it to our client). Returns how
    // many were replaced.
    std::size_t redact_in(std::string& text, std::size_t from = 0) const {
        if (value_.empty()) return 0;
        std::size_t replaced = 0;
        for (std::size_t at = text.find(value_, from); at != std::string::npos;
             at = text.find(value_, at + kMarker.size())) {
            text.replace(at, value_.size(), kMarker);
            ++replaced;
        }
        return replaced;
    }

    friend bool operator==(const Secret&, const Secret&) = default;
    friend std::ostream& operator<<(std::ostream& os, const Secret&) { return os << "[redacted]"; }

  private:
    static constexpr std::string_view kMarker = "[redacted]";
    std::string value_;
};

}  // namespace tokenradar

template <>
struct fmt::formatter<tokenradar::Secret> : fmt::formatter<std::string_view> {
    auto format(const tokenradar::Secret&, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format("[redacted]", ctx);
    }
};
