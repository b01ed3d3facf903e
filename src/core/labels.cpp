#include <tokenradar/core/labels.hpp>

#include <algorithm>
#include <cctype>

namespace tokenradar {

bool is_simple_name(std::string_view s) noexcept {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
        return std::isalnum(ch) != 0 || ch == '-' || ch == '_' || ch == '.';
    });
}

}  // namespace tokenradar
