#pragma once
// OpenAI Responses (POST /v1/responses), as the gateway's door speaks it: the client's request
// read into the neutral model, and answers written back as a `response` object or its typed
// stream events. No upstream is asked in this dialect (the gateway relays to Chat Completions,
// Messages or generateContent), so there is no request emitter, response parser or stream
// decoder. Pure functions and a state machine over bytes; no I/O, no clock.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

// `instructions` and system / developer items become system messages; message items
// (string or input_text / output_text parts), `function_call` items (tool calls of an assistant
// message, merged with the assistant message before them) and `function_call_output` items
// (tool messages) become the conversation. `reasoning.effort` is kept in `original` as Chat
// Completions' `reasoning_effort` (the caller builds the rest of `original`). A field the
// gateway cannot carry (previous_response_id: it keeps no conversation state; built-in tools,
// images and files, reasoning summaries, ...) is bad_request naming it; harmless ones (metadata,
// user, store, service_tier, ...) are accepted and dropped.
Result<ChatRequest> parse_responses_request(std::string_view body);

// A chat answer as a Responses `response` object: `resp_<id>`, one message item with the text
// (when there is text or no tool call), one function_call item per tool call, status
// `completed`, or `incomplete` with incomplete_details for a length or content-filter finish.
// `created` (unix seconds) when the response has none.
std::string emit_responses_response(const ChatResponse& response, std::int64_t created);

// The relay's deltas as a Responses event stream. An error delta becomes an `error` event
// ({code, message, param}) followed by `response.failed` carrying the same error.
class ResponsesStreamEncoder final : public StreamEncoder {
  public:
    // meta.created: the response's created_at (the relay's OpenAI chunks carry theirs, but the
    // decoder does not keep it).
    explicit ResponsesStreamEncoder(StreamMeta meta);
    ~ResponsesStreamEncoder() override;
    // response.created + response.in_progress before the first item; an output item per run
    // of text (message) or per tool call (function_call), each opened (output_item.added, and
    // content_part.added for text), fed (output_text.delta / function_call_arguments.delta)
    // and closed (…done events) in order; reasoning deltas are not encoded (their tokens
    // are in usage.output_tokens_details); response.completed or response.incomplete on done.
    void encode(const StreamDelta& delta, std::string& out) override;
    void finish(std::string& out) override;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace tokenradar::dialect
