#include "csv_export.hpp"

#include <fmt/format.h>

namespace tokenradar::observatory {
namespace {

// Where each endpoint's rows are (core/csv.hpp), and the columns naming a row when there are
// none.
CsvShape shape_of(std::string_view endpoint) {
    if (endpoint == "leaderboard") return {{{"rows", ""}}, {}, {"provider", "model", "samples"}};
    if (endpoint == "regions") {
        return {{{"rows", ""}},
                {},
                {"client_region", "upstream_region", "provider", "model", "samples"}};
    }
    if (endpoint == "heatmap") return {{{"cells", ""}}, {}, {"hour", "value", "samples"}};
    if (endpoint == "timeseries") {
        return {{{"series", ""}, {"points", ""}}, {}, {"provider", "model", "t", "samples"}};
    }
    if (endpoint == "distribution") {
        return {{{"series", ""}, {"cdf", ""}},
                {"value", "fraction"},
                {"provider", "model", "value", "fraction"}};
    }
    if (endpoint == "status") {
        return {{{"models", ""}, {"buckets", "bucket_"}},
                {},
                {"provider", "model", "state", "bucket_t", "bucket_state"}};
    }
    if (endpoint == "incidents") {
        return {{{"incidents", ""}},
                {},
                {"id", "state", "provider", "model", "start", "detected", "end", "duration_s"}};
    }
    if (endpoint == "labels") return {{}, {}, {}, "labels"};
    return {};  // gateway: the answer is the row
}

}  // namespace

std::string csv_from_json(std::string_view endpoint, std::string_view body) {
    return tokenradar::csv_from_json(body, shape_of(endpoint));
}

std::string csv_filename(std::string_view endpoint, std::string_view window) {
    if (window.empty()) return fmt::format("tokenradar-{}.csv", endpoint);
    return fmt::format("tokenradar-{}-{}.csv", endpoint, window);
}

}  // namespace tokenradar::observatory
