#pragma once
// The gateway's doors for clients of other dialects (Anthropic Messages, Gemini
// generateContent, OpenAI Responses): their request as the relay takes it, and
// the relay's answer (OpenAI Chat Completions: whole bodies, error bodies, streams) re-encoded
// in the client's dialect. The relay, the cache, routing and metering stay in one dialect;
// only the edges differ. Pure functions and a state machine over bytes: no I/O, no clock.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/dialect/stream_delta.hpp>
#include <tokenradar/sse/sse_parser.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::dialect {

// What a client speaks at a door: a provider dialect (Api), or OpenAI Responses, which only
// the gateway's door speaks (no upstream is asked in it, so it is not an Api).
enum class ClientApi { openai, anthropic, gemini, openai_responses };
constexpr ClientApi client_api_of(Api api) noexcept {
    switch (api) {
        case Api::anthropic:
            return ClientApi::anthropic;
        case Api::gemini:
            return ClientApi::gemini;
        case Api::openai_responses:
            return ClientApi::openai_responses;
        case Api::openai:
            break;
    }
    return ClientApi::openai;
}

// A client request of `client_api` as the relay takes it: the neutral model, with
// `original` the equivalent OpenAI Chat Completions request (the relay's own dialect: the
// cache's key, make_upstream_call's field checks, an OpenAI upstream's body) and usage
// always asked for (the client's dialect reports it). Errors name the client's fields.
// `model` and `stream` are Gemini's, from its URL path. Gemini pairs a functionResponse with
// its functionCall by name (ids are optional there): calls without an id get one, and each
// response the id of the first unanswered call of its name in the model turn before it.
Result<ChatRequest> parse_client_request(ClientApi client_api, std::string_view body,
                                         std::string_view model = {}, bool stream = false);
inline Result<ChatRequest> parse_client_request(Api client_api, std::string_view body,
                                                std::string_view model = {}, bool stream = false) {
    return parse_client_request(client_api_of(client_api), body, model, stream);
}

// A refusal of the Chat Completions equivalent (make_upstream_call's "<field>: ..." messages)
// in the client's words: the Responses door names `reasoning.effort`, `max_output_tokens`,
// `text.format`, `input` where Chat has reasoning_effort, max_tokens, response_format,
// messages. Other doors' messages are returned unchanged.
std::string client_field_message(ClientApi client_api, std::string message);

// The relay's output re-encoded for a client of `client_api` (not OpenAI). One per response.
// `created` (unix seconds) dates a Responses stream (its response.created_at).
class Egress {
  public:
    explicit Egress(ClientApi client_api, std::int64_t created = 0);
    explicit Egress(Api client_api) : Egress(client_api_of(client_api)) {}
    ~Egress();
    Egress(const Egress&) = delete;
    Egress& operator=(const Egress&) = delete;

    // A whole answer: a chat.completion becomes the dialect's response, an OpenAI error body
    // the dialect's error with its status (Responses errors are OpenAI's). Other content types pass
    // unchanged. A 2xx body that is not a chat.completion becomes a 502 error naming why.
    void whole(int& status, std::string& content_type, std::string& body) const;
    // A stream's bytes (any split): its events, decoded and encoded in the dialect, appended
    // to `out`. A heartbeat comment becomes the dialect's keep-alive (Anthropic's ping; Gemini
    // clients skip comments, so it stays one). An
    // event that cannot be decoded ends the client's stream with an error event.
    void stream(std::string_view bytes, std::string& out);
    // The end of the stream: the dialect's terminal events, if the stream did not end itself.
    void end(std::string& out);

  private:
    // The provider dialect whose bodies the door writes (OpenAI's errors for Responses).
    Api door_dialect() const noexcept;
    void on_event(const sse::SseEvent& event, std::string& out);
    void fail(Errc code, std::string_view message, std::string& out);

    ClientApi api_;
    std::int64_t created_;
    sse::SseParser parser_;
    OpenAiStreamDecoder decoder_;
    std::unique_ptr<StreamEncoder> encoder_;
    std::vector<StreamDelta> deltas_;
    bool terminated_ = false;
};

}  // namespace tokenradar::dialect
