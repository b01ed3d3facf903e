#include <tokenradar/sim/prefix_cache.hpp>
