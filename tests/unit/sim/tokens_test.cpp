#include <tokenradar/sim/tokens.hpp>
