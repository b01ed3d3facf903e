#pragma once

#include <string>

namespace tokenradar {

// The command line as recorded in output files (bench's summary): every value of --header
// (they may carry credentials) and the user:password part of any URL become [redacted].
std::string redacted_command_line(int argc, const char* const* argv);

}  // namespace tokenradar
