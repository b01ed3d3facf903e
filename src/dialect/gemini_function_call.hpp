#pragma once
// Private: the functionCall part, which requests, responses and streams share, and its
// thoughtSignature (Gemini 3 needs it back in later turns).

#include "json_util.hpp"

#include <tokenradar/dialect/chat.hpp>

namespace tokenradar::dialect {

// A functionCall object, with the thoughtSignature that sits beside it on its part.
ToolCall read_function_call(Reader& r, const json::object& call, const Path& call_path,
                            const json::object& part, const Path& part_path, bool name_required);

// {"functionCall": {name, args, id}, "thoughtSignature"}; id and signature when not empty.
json::object function_call_part(const ToolCall& tc, json::object args);

}  // namespace tokenradar::dialect
