#include <tokenradar/sim/trace_record.hpp>
