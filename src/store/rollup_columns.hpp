#pragma once
// The columns of a stored rollup row (store::RollupRow), one list for both backends: the hour,
// the cell's text labels in RollupRow::labels order, stream, the client, then the aggregate.

#include <tokenradar/store/measurement_store.hpp>

#include <cstddef>
#include <string_view>
#include <tuple>

namespace tokenradar::store {

// Every column but the aggregate: the row's primary key.
inline constexpr std::string_view kRollupKeyColumns =
    "hour_us, provider, model, task, source, api, upstream_region, client_region, client_key, "
    "stream, client_id";
inline constexpr std::size_t kRollupLabelCount = std::tuple_size_v<decltype(RollupRow::labels)>;
// Positions (from 0) in kRollupKeyColumns followed by `aggregate`.
inline constexpr int kRollupStreamColumn = 1 + static_cast<int>(kRollupLabelCount);
inline constexpr int kRollupClientColumn = kRollupStreamColumn + 1;
inline constexpr int kRollupAggregateColumn = kRollupClientColumn + 1;
inline constexpr int kRollupColumnCount = kRollupAggregateColumn + 1;

}  // namespace tokenradar::store
