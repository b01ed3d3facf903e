#pragma once
// Serving an OpenAI Chat Completions client from an upstream of any dialect: the request on
// the way up; the response, error body and stream on the way back.
//
// An OpenAI upstream gets the client's own bytes (every vendor field kept) with only `model`
// replaced and, for streams, `stream_options.include_usage` forced on so the gateway can meter.
// Anthropic and Gemini upstreams get a translation through the neutral model (chat.hpp); a
// request field the target cannot honour is refused with Errc::unsupported (HTTP 400) naming
// the field and why, never dropped silently. Harmless fields (user, metadata, store...) are
// dropped; the per-field table is in src/dialect/README.md.
//
// Pure functions and a small state machine over bytes: nothing here does I/O, reads a clock or
// suspends; any thread may call them (one StreamTranslator per stream, used by one thread at a
// time).

#include <tokenradar/core/error.hpp>
#include <tokenradar/core/measurement.hpp>
#include <tokenradar/core/secret.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/http_call.hpp>
#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/dialect/prompt_cache.hpp>
#include <tokenradar/dialect/stream_delta.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

// The upstream call for a client request parsed with parse_openai_request (its `original`
// kept). Errc::unsupported / Errc::bad_request with the field path when it cannot be served by
// `upstream_api`. `base_path` and the headers follow make_http_call (http_call.hpp).
// `client_text` is the body the request was parsed from: an OpenAI upstream gets those bytes
// with only `model` and stream_options changed; empty, the body is serialized from `original`.
// `prompt_cache` automatic adds Anthropic cache breakpoints to a request that has none
// (add_prompt_cache_breakpoints, prompt_cache.hpp); it changes nothing for the other upstreams
// (OpenAI caches prefixes by itself, Gemini implicitly). A client's cache_control goes to an
// Anthropic upstream untouched and is dropped for Gemini, which has no inline equivalent.
Result<HttpCall> make_upstream_call(const ChatRequest& client_request, Api upstream_api,
                                    std::string_view base_path, std::string_view upstream_model,
                                    const Secret& key, std::string_view client_text = {},
                                    PromptCache prompt_cache = PromptCache::off);

// A passthrough body: `text` (the client's body, which parsed to `original`) with the
// top-level `model` value replaced, and for a stream `stream_options.include_usage` set (the
// client's other options kept), as make_upstream_call sends an OpenAI upstream (re-serialized
// from `original` when its keys are repeated or escaped): the relay meters the upstream's own
// count and drops the usage chunk for a client that did not ask (StreamTranslator). For
// requests passed through as they are (the legacy /v1/completions).
std::string with_model(const boost::json::object& original, std::string_view text,
                       std::string_view model, bool stream);

// A non-streaming upstream response body (2xx) as an OpenAI chat.completion. An OpenAI
// upstream's bytes are returned unchanged (moved: no copy of the body). Anthropic / Gemini:
// usage, finish reason, tool calls and reasoning (as `reasoning_content`) are translated;
// `created` (unix seconds, which neither dialect sends) goes into the body.
// Errc::protocol_error when the body is not the dialect's response.
Result<std::string> translate_response(Api upstream_api, std::string upstream_body,
                                       std::int64_t created = 0);

// The gateway's way: translate_response's body, with the response metered into `m`
// (meter_response, metering.hpp) from the same single parse, or for an OpenAI body of the
// usual shape from a scan. An OpenAI body is read too, so it fails when it is not a
// chat.completion; the error is parse_response's (Errc::protocol_error, no dialect prefix).
Result<std::string> relay_response(Api upstream_api, std::string upstream_body,
                                   std::int64_t created, Measurement& m);

// What the client gets for an upstream error answer.
struct ClientError {
    int http_status = 502;
    std::string body;  // OpenAI {"error":{"message","type","param","code"}}
};

// An upstream error status + body as the OpenAI error the client must see. An OpenAI upstream's
// body passes unchanged when it is an OpenAI error; otherwise the error is classified
// (parse_error_body) and re-written: status by Errc (Anthropic 529 overloaded -> 503, Gemini
// RESOURCE_EXHAUSTED -> 429, upstream 5xx -> 502...), message prefixed with the upstream and
// its status, the upstream's own error type in `code`.
ClientError translate_error(Api upstream_api, int upstream_status, std::string_view upstream_body);

// One upstream stream re-encoded as the OpenAI stream the client must get, event by event.
// The caller decodes each upstream SSE event once (make_stream_decoder, for its own metering)
// and passes the event's raw data and its deltas; the translator appends the client's bytes.
//
// - OpenAI upstream: `data:` payloads are relayed unchanged, except the usage-only chunk
//   (`choices: []`) when the client did not ask for usage, and `[DONE]` is always written in
//   its canonical form. An upstream in-stream error is relayed and followed by `[DONE]`.
// - Anthropic / Gemini upstream: deltas go through the OpenAI stream encoder (its text fast
//   path); the usage chunk only when the client asked for it. An upstream error event becomes
//   an OpenAI in-stream error (`data: {"error":{...}}`, upstream type in `code`) and `[DONE]`.
//   Gemini function calls without an id get `call_<responseId>_<index>`, so the client can
//   answer them.
//
// Every stream the client sees ends with `data: [DONE]`, and every `data:` payload is whole
// JSON or `[DONE]`.
class StreamTranslator {
  public:
    // meta: id, model and created of the client's chunks (empty id / model: the upstream's);
    // meta.include_usage is ignored in favour of client_wants_usage (the client's
    // stream_options.include_usage: the upstream call always asks for usage).
    StreamTranslator(Api upstream_api, bool client_wants_usage, StreamMeta meta);

    // One upstream event that decoded without error (`deltas`, from event.data). Nothing is
    // written after the stream terminated (done, error, fail). On a decode error call fail()
    // instead.
    void on_event(const sse::SseEvent& event, std::span<const StreamDelta> deltas,
                  std::string& out);

    // The upstream body ended cleanly (EOF). If its terminal event ([DONE], message_stop,
    // Gemini's chunk with finishReason) never came, the answer may be cut short, so the client
    // gets a protocol_error in-stream error and [DONE] rather than a stream that looks
    // complete. Idempotent.
    void finish(std::string& out);

    // The stream failed after the client's response headers went out (disconnect, malformed
    // event, idle timeout...): a well-formed OpenAI in-stream error event, then [DONE].
    // Nothing when the stream already terminated.
    void fail(Errc code, std::string_view message, std::string& out);

    // The client's stream is over ([DONE] written); later calls append nothing.
    bool terminated() const noexcept { return terminated_; }
    // The upstream's terminal event arrived: the answer is whole (cacheable, meterable as ok).
    bool complete() const noexcept { return complete_; }

  private:
    void relay_openai(const sse::SseEvent& event, std::span<const StreamDelta> deltas,
                      std::string& out);
    void write_error(Errc code, std::string_view message, std::string_view upstream_type,
                     std::string& out);
    Api api_;
    bool wants_usage_;
    std::string response_id_;                     // Gemini: for synthesised tool-call ids
    std::optional<OpenAiStreamEncoder> encoder_;  // Anthropic / Gemini upstreams
    bool terminated_ = false;
    bool complete_ = false;
};

}  // namespace tokenradar::dialect
