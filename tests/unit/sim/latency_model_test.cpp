#include <tokenradar/sim/latency_model.hpp>
