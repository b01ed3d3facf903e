#include <tokenradar/sim/profile.hpp>
