#pragma once
// Private: assistant tool_calls, which OpenAI requests and responses share.

#include "json_util.hpp"

#include <tokenradar/dialect/chat.hpp>

#include <vector>

namespace tokenradar::dialect {

// Whole tool calls: function.name is required, arguments are JSON text.
void read_tool_calls(Reader& r, const json::array& calls, const Path& path,
                     std::vector<ToolCall>& out);
json::array tool_calls_json(const std::vector<ToolCall>& calls, const json::storage_ptr& sp = {});

}  // namespace tokenradar::dialect
