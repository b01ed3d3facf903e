#pragma once
// OpenAI Responses (POST /v1/responses), `Api::openai_responses`. Servers' side (the gateway's
// door, the sim): the client's request read into the neutral model, and answers written back as
// a `response` object or its typed stream events. Clients' side (bench): the request written
// from the neutral model, and the answer and stream read back. The gateway asks no upstream in
// this dialect (it relays to Chat Completions, Messages or generateContent). Pure functions and
// state machines over bytes; no I/O, no clock.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

class EventJson;  // private: a reusable arena for one event's JSON

// `instructions` and system / developer items become system messages; message items
// (string or input_text / output_text parts), `function_call` items (tool calls of an assistant
// message, merged with the assistant message before them) and `function_call_output` items
// (tool messages) become the conversation. `reasoning.effort` is kept in `original` as Chat
// Completions' `reasoning_effort` (the caller builds the rest of `original`). A field the
// gateway cannot carry (previous_response_id: it keeps no conversation state; built-in tools,
// images and files, reasoning summaries, ...) is bad_request naming it; harmless ones (metadata,
// user, store, service_tier, ...) are accepted and dropped.
Result<ChatRequest> parse_responses_request(std::string_view body);

// The request a client sends: system messages as `instructions` (joined by blank lines),
// the conversation as `input` items (message items with input_text / output_text parts,
// function_call and function_call_output items), flat function tools, tool_choice,
// text.format, max_output_tokens, temperature, top_p, stream, `store: false` (a measuring
// client keeps nothing on the provider). A field Responses has no place for (stop, seed,
// penalties, a thinking budget, images) is Errc::unsupported naming it, never dropped.
Result<std::string> emit_responses_request(const ChatRequest& request);

// Errc::protocol_error on a body that is not a `response` object. output_text parts are the
// text, reasoning items' summary / content text the reasoning, function_call items the tool
// calls; status incomplete with reason max_output_tokens / content_filter is length /
// content_filter, function calls tool_calls, else stop. Usage in OpenAI terms (input_tokens
// include cached ones, output_tokens reasoning ones, as Chat's).
Result<ChatResponse> parse_responses_response(std::string_view body);

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

// The typed events by their `type` (the SSE event name when the data has none):
// response.created -> role (response.id, model); response.output_text.delta -> text;
// response.reasoning_text.delta / reasoning_summary_text.delta -> reasoning;
// output_item.added of a function_call -> tool_call (index in order of calls, call_id, name);
// function_call_arguments.delta -> its arguments; response.completed / response.incomplete ->
// usage, finish, done; `error` -> error; response.failed -> error (its response.error) and
// done. Lifecycle events, part / item / text `done` events and unknown ones are ignorable: the
// deltas already carried their content.
class ResponsesStreamDecoder final : public StreamDecoder {
  public:
    ResponsesStreamDecoder();
    ~ResponsesStreamDecoder() override;
    Result<void> decode(std::string_view event, std::string_view data,
                        std::vector<StreamDelta>& out) override;

  private:
    std::unique_ptr<EventJson> json_;
    std::map<std::int64_t, int> tool_index_by_item_;  // output_index -> tool-call index
    bool saw_error_ = false;  // response.failed after an `error` event repeats it
};

}  // namespace tokenradar::dialect
