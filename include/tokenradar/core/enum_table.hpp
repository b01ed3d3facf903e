#pragma once
// Helpers for the X-macro tables of closed value sets (labels.hpp, request_status.hpp): a
// table lists each value once, and the enum and its names are both made from it, so adding
// a value is one line.
//
//     #define TOKENRADAR_ROUTES(X) X(primary) X(fallback) X(hedge)
//     enum class Route : std::uint8_t { TOKENRADAR_ROUTES(TOKENRADAR_ENUMERATOR) };
//     inline constexpr std::array kRouteNames = {TOKENRADAR_ROUTES(TOKENRADAR_ENUM_NAME)};

#define TOKENRADAR_ENUMERATOR(name) name,
#define TOKENRADAR_ENUM_NAME(name) std::string_view(#name),
