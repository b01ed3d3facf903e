#include "chat_json.hpp"

#include <utility>

namespace tokenradar::dialect {

void append_turn(std::vector<Message>& messages, Message turn, std::vector<Message> tool_results) {
    for (Message& result : tool_results) messages.push_back(std::move(result));
    if (tool_results.empty() || !turn.content.empty() || !turn.tool_calls.empty()) {
        messages.push_back(std::move(turn));
    }
}

Result<json::object> call_arguments(const ToolCall& call, const Path& call_path) {
    if (call.arguments.empty()) return json::object();
    auto args = parse_json_object(call.arguments);
    if (!args) {
        Path args_path = call_path.key("arguments");
        return Error(Errc::bad_request, args_path.str() + ": expected a JSON object");
    }
    return std::move(*args);
}

Result<json::object> tool_parameters(const ToolDefinition& tool) {
    auto params = parse_json_object(tool.parameters);
    if (!params) {
        return Error(Errc::bad_request,
                     "tools: parameters of " + tool.name + ": expected a JSON object");
    }
    return std::move(*params);
}

std::string read_cache_control(Reader& r, const json::object& block, const Path& path) {
    const json::object* cache_control = r.object(block, "cache_control", path);
    return cache_control ? to_json_text(*cache_control) : std::string();
}

void write_cache_control(const std::string& text, json::object& block) {
    if (text.empty()) return;
    // Our own text from read_cache_control or add_prompt_cache_breakpoints: an object.
    if (auto parsed = parse_json_object(text)) block["cache_control"] = std::move(*parsed);
}

}  // namespace tokenradar::dialect
