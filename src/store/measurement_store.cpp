#include <tokenradar/store/measurement_store.hpp>

namespace tokenradar::store {

Result<std::vector<Measurement>> MeasurementStore::select(const RecordQuery& query) {
    std::vector<Measurement> out;
    auto scanned = scan(query, [&out](const Measurement& m) { out.push_back(m); });
    if (!scanned) return scanned.error();
    return out;
}

}  // namespace tokenradar::store
