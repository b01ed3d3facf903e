#include <tokenradar/core/version.hpp>

namespace tokenradar {

std::string_view version() noexcept { return TOKENRADAR_VERSION; }

}  // namespace tokenradar
