#pragma once
// Private: steps between a dialect's JSON and the neutral chat model that several dialects
// share, so each is written once.

#include "json_util.hpp"

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>

#include <vector>

namespace tokenradar::dialect {

// Appends a turn of Anthropic or Gemini. Their user turns carry the results of the previous
// turn's tool calls (tool_result blocks, functionResponse parts); the neutral model has one
// tool message per result, ahead of the turn's own message, which a turn of results only
// does not add.
void append_turn(std::vector<Message>& messages, Message turn, std::vector<Message> tool_results);

// A tool call's arguments as the JSON object Anthropic and Gemini send ({} when empty);
// bad_request naming `<call_path>.arguments` when the text is not a JSON object.
Result<json::object> call_arguments(const ToolCall& call, const Path& call_path);

// A tool's parameters schema text (not empty) as a JSON object; bad_request naming the tool
// when it is not one.
Result<json::object> tool_parameters(const ToolDefinition& tool);

// A block's or tool's `cache_control` (an Anthropic prompt-cache breakpoint) as JSON text,
// its members as the client wrote them (type, ttl...: checking them is the upstream's job);
// empty when absent or null; bad_request when it is not an object.
std::string read_cache_control(Reader& r, const json::object& block, const Path& path);

// Sets `block`'s cache_control from read_cache_control's text (nothing when empty).
void write_cache_control(const std::string& text, json::object& block);

}  // namespace tokenradar::dialect
