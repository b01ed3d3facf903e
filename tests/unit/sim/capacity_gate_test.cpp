#include <tokenradar/sim/capacity_gate.hpp>
