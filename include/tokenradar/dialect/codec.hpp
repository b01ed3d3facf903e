#pragma once
// Dialect dispatch: the same operations as openai.hpp / anthropic.hpp / gemini.hpp, chosen
// by Api at run time, plus each dialect's error bodies.

#include <tokenradar/core/error.hpp>
#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/dialect/stream_delta.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tokenradar::dialect {

// `model` and `stream` are used by Gemini only (they come from its URL path).
Result<ChatRequest> parse_request(Api api, std::string_view body, std::string_view model = {},
                                  bool stream = false);
Result<std::string> emit_request(Api api, const ChatRequest& request);
Result<ChatResponse> parse_response(Api api, std::string_view body);
std::string emit_response(Api api, const ChatResponse& response);
std::unique_ptr<StreamDecoder> make_stream_decoder(Api api);
std::unique_ptr<StreamEncoder> make_stream_encoder(Api api, StreamMeta meta);

// An upstream error, read from its body.
struct ErrorBody {
    Errc code = Errc::upstream_http_error;
    std::string type;  // the dialect's own: OpenAI type, Anthropic error.type, Gemini status
    std::string message;
    bool operator==(const ErrorBody&) const = default;
};

// Never fails: a body that is not the dialect's error shape is classified by the HTTP
// status alone, with (a prefix of) the body as message.
ErrorBody parse_error_body(Api api, int http_status, std::string_view body);
// OpenAI {"error":{"message","type","param","code"}}; Anthropic {"type":"error","error":
// {"type","message"}}; Gemini {"error":{"code","message","status"}}.
std::string emit_error_body(Api api, Errc code, std::string_view message);
// The dialect's name for an error: OpenAI type, Anthropic error type, Gemini status.
std::string_view error_type(Api api, Errc code) noexcept;
// The status the dialect answers with (Anthropic overloaded is 529; otherwise http_status()).
int error_http_status(Api api, Errc code) noexcept;
// Errc for an upstream HTTP status.
Errc errc_from_http_status(int status) noexcept;
// Errc for a dialect's error type / status string; nullopt when unknown.
std::optional<Errc> errc_from_error_type(Api api, std::string_view type) noexcept;

}  // namespace tokenradar::dialect
