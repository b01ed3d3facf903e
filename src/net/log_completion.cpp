#include <tokenradar/net/log_completion.hpp>

#include <tokenradar/core/logging.hpp>

#include <stdexcept>

namespace tokenradar::net {

void LogCompletion::operator()(const std::exception_ptr& ex) const {
    if (!ex) return;
    try {
        std::rethrow_exception(ex);
    } catch (const std::exception& e) {
        spdlog::error("{} failed: {}", what, e.what());
    } catch (...) {
        spdlog::error("{} failed with an unknown exception", what);
    }
}

}  // namespace tokenradar::net
