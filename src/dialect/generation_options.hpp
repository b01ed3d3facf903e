#pragma once
// Private: reading and writing the generation options of ChatRequest (tool choice, parallel
// tool calls, response format, seed, penalties, thinking budget) in each dialect. Kept in one
// file so what each dialect can express is visible side by side; translate.cpp decides what
// happens to an option the target cannot express.
//
// Readers are lenient about shapes the neutral model cannot hold (OpenAI allowed_tools,
// Gemini VALIDATED mode, a text/x.enum response MIME type...): they leave the option unset
// instead of failing, so same-dialect passthrough still works. Wrong JSON types fail with the
// field path, like the rest of the parsers.

#include "json_util.hpp"

#include <tokenradar/dialect/chat.hpp>

namespace tokenradar::dialect {

void read_openai_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req);
void write_openai_options(const ChatRequest& req, json::object& o);

void read_anthropic_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req);
// Errc::unsupported for a json_object response format (Anthropic needs a schema).
Result<void> write_anthropic_options(const ChatRequest& req, json::object& o);

// `o` is the request body (toolConfig); generationConfig is read from it too.
void read_gemini_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req);
// Adds toolConfig to `o` and the options that live in generationConfig to `gc`.
void write_gemini_options(const ChatRequest& req, json::object& o, json::object& gc);

}  // namespace tokenradar::dialect
