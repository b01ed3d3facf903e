#include <tokenradar/sim/peak_curve.hpp>
