#include <tokenradar/sim/overrides.hpp>
