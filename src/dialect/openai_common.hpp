#pragma once
// Private: what OpenAI's two generation APIs share, Chat Completions (openai.cpp,
// openai_request.cpp) and the legacy text completions (completions.cpp): finish reasons,
// usage, in-stream errors, the `[DONE]` sentinel and the top-level sampling fields.

#include "json_util.hpp"

#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <string_view>

namespace tokenradar::dialect {

FinishReason openai_finish(std::string_view s);
std::string_view openai_finish_text(FinishReason r);

// `usage`: prompt_tokens, completion_tokens and their details.
Usage read_openai_usage(Reader& r, const json::object& u, const Path& p);
json::object openai_usage_json(const Usage& u);

// What every OpenAI answer (chat.completion, text_completion) has around its choices: id,
// model, created and usage, read into `resp`; and written around one `choice`.
void read_openai_answer_envelope(Reader& r, const json::object& o, const Path& top,
                                 ChatResponse& resp);
std::string write_openai_answer(const ChatResponse& resp, std::string_view object,
                                json::object choice);

// The end of a stream of `object` chunks ("chat.completion.chunk", "text_completion"): the
// usage chunk (`choices: []`) when meta.include_usage and there is usage, then `[DONE]`.
void write_openai_stream_end(const StreamMeta& meta, std::string_view object, const Usage& usage,
                             std::string& out);

// {"error": {...}} in place of a chunk.
StreamDelta openai_error_delta(Reader& r, const json::object& error, const Path& path);

// A stream event's data is the terminal `[DONE]` (trailing spaces and line breaks allowed).
bool is_openai_done(std::string_view data) noexcept;

// The request fields both APIs read alike: max_tokens (max_completion_tokens first),
// temperature, top_p, stop, stream, stream_options.include_usage and the generation options.
void read_openai_sampling(Reader& r, const json::object& body, const Path& top, ChatRequest& req);

}  // namespace tokenradar::dialect
