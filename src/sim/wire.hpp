#pragma once
// The sim's wire layer, sans-IO: which dialect and operation a request is (paths, auth
// header shapes of the real APIs), the neutral request parsed from it, and the bytes of
// responses and stream chunks for a RequestPlan. sim_server.cpp only paces and writes.

#include "answer.hpp"
#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>
#include <tokenradar/net/request_reader.hpp>
#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/sim/overrides.hpp>
#include <tokenradar/sim/sim_server.hpp>

#include <boost/system/result.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tokenradar::sim {

struct Route {
    enum class Kind { health, stats, models, model, completion, count_tokens, control };
    Kind kind = Kind::health;
    dialect::Api api = dialect::Api::openai;
    std::string model;             // Gemini completions and `model`: from the path
    bool stream = false;           // Gemini: streamGenerateContent
    bool text_completion = false;  // OpenAI's legacy POST /v1/completions (`prompt`)
};

// A request the sim refuses before parsing its body, in the shape of `api`.
struct RouteError {
    dialect::Api api = dialect::Api::openai;
    Errc code = Errc::not_found;
    std::string message;
};
[[noreturn]] void throw_exception_from_error(const RouteError& e, const boost::source_location&);

// Paths and auth of the real APIs:
//   POST /v1/chat/completions, POST /v1/completions (the legacy text completions) and POST
//   /v1/responses (Authorization: Bearer), POST /v1/messages
//   and POST /v1/messages/count_tokens
//   (x-api-key or Authorization: Bearer, anthropic-version), POST
//   /v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse (x-goog-api-key or
//   ?key=), GET /v1/models (OpenAI shape, Anthropic shape when x-api-key or anthropic-version is
//   sent), GET /v1beta/models, GET /v1/models/{id} and /v1beta/models/{model} (one model, same
//   shapes), GET /healthz and GET /sim/stats (no auth); GET, POST and DELETE /sim/control with the
//   key in any of those shapes (401 in OpenAI's shape otherwise). `required_key` empty: any
//   non-empty key.
boost::system::result<Route, RouteError> route_request(const net::Request& request,
                                                       std::string_view required_key);

struct WireRequest {
    dialect::Api api = dialect::Api::openai;
    dialect::ChatRequest chat;
    std::vector<Header> sim_headers;  // x-sim-* (views into the request)
    bool text_completion = false;     // answered as text_completion (dialect/text_completion.hpp)
};
Result<WireRequest> parse_wire_request(const net::Request& request, const Route& route);

// POST /v1/messages/count_tokens: `{"input_tokens": N}` for a Messages body (max_tokens
// optional, as Anthropic's endpoint takes it), N the prompt tokens the same body would be
// billed in /v1/messages' usage; bad_request naming the field otherwise, not_found for a model
// the profile does not serve.
Result<std::string> count_tokens_json(std::string_view body, const Profile& profile);

// The text the prompt-token count and the prefix cache see: tools, then every message as
// "role: content" lines, in order, so a stable prefix of the conversation is a stable prefix
// of this text in every dialect.
std::string canonical_prompt(const dialect::ChatRequest& request);

// `text_completion`: OpenAI's legacy completions' "cmpl-" ids.
std::string new_response_id(dialect::Api api, bool text_completion = false);
// The ids of tool calls: call_ (OpenAI), toolu_ (Anthropic); Gemini's calls carry none.
std::string_view tool_call_id_prefix(dialect::Api api);
std::string models_json(dialect::Api api, const Profile& profile);
// One model in the shape of `api`; nullopt when the profile does not serve it.
std::optional<std::string> model_json(dialect::Api api, const Profile& profile,
                                      std::string_view model);
std::string stats_json(const SimStats& stats);
dialect::ChatResponse make_response(const RequestPlan& plan, const Answer& answer, std::string id,
                                    std::string model);

// Encodes a plan's chunks as SSE events of one dialect, each chunk's piece of the answer
// (text, JSON text, or a tool call's argument fragment) in the dialect's shape.
class StreamWriter {
  public:
    // `plan` and `answer` must outlive the writer.
    // `text_completion`: OpenAI's legacy text_completion chunks (api is openai).
    StreamWriter(dialect::Api api, const RequestPlan& plan, const Answer& answer, std::string id,
                 std::string model, bool include_usage, bool text_completion = false);
    // Appends chunk `index` (the role/start events before chunk 0). A malformed chunk is
    // an event whose JSON is cut short.
    void encode_chunk(std::size_t index, bool malformed, std::string& out);
    // Finish reason, usage and the dialect's terminal events.
    void finish(std::string& out);

  private:
    dialect::Usage usage_through(std::size_t tokens) const;
    void start(std::string& out);  // role (+ usage, + the call's opening) before chunk 0
    void encode_piece(std::string piece, std::string& out);

    dialect::Api api_;
    const RequestPlan& plan_;
    const Answer& answer_;
    bool started_ = false;
    std::unique_ptr<dialect::StreamEncoder> encoder_;
    std::string id_;
    std::string model_;
    std::int64_t tokens_sent_ = 0;
};

}  // namespace tokenradar::sim
