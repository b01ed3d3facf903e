#include <tokenradar/dialect/codec.hpp>

// The rest of this component and its private helpers.
#include "json_util.hpp"

#include <tokenradar/core/utf8.hpp>
#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/dialect/responses.hpp>

namespace tokenradar::dialect {

Result<ChatRequest> parse_request(Api api, std::string_view body, std::string_view model,
                                  bool stream) {
    switch (api) {
        case Api::openai:
            return parse_openai_request(body);
        case Api::anthropic:
            return parse_anthropic_request(body);
        case Api::gemini:
            return parse_gemini_request(body, model, stream);
        case Api::openai_responses:
            return parse_responses_request(body);
    }
    return Error(Errc::internal, "unknown api");
}

Result<std::string> emit_request(Api api, const ChatRequest& request) {
    switch (api) {
        case Api::openai:
            return emit_openai_request(request);
        case Api::anthropic:
            return emit_anthropic_request(request);
        case Api::gemini:
            return emit_gemini_request(request);
        case Api::openai_responses:
            return emit_responses_request(request);
    }
    return Error(Errc::internal, "unknown api");
}

Result<ChatResponse> parse_response(Api api, std::string_view body) {
    switch (api) {
        case Api::openai:
            return parse_openai_response(body);
        case Api::anthropic:
            return parse_anthropic_response(body);
        case Api::gemini:
            return parse_gemini_response(body);
        case Api::openai_responses:
            return parse_responses_response(body);
    }
    return Error(Errc::internal, "unknown api");
}

std::string emit_response(Api api, const ChatResponse& response) {
    switch (api) {
        case Api::openai:
            return emit_openai_response(response);
        case Api::anthropic:
            return emit_anthropic_response(response);
        case Api::gemini:
            return emit_gemini_response(response);
        case Api::openai_responses:
            return emit_responses_response(response, response.created);
    }
    return {};
}

std::unique_ptr<StreamDecoder> make_stream_decoder(Api api) {
    switch (api) {
        case Api::anthropic:
            return std::make_unique<AnthropicStreamDecoder>();
        case Api::gemini:
            return std::make_unique<GeminiStreamDecoder>();
        case Api::openai_responses:
            return std::make_unique<ResponsesStreamDecoder>();
        case Api::openai:
            break;
    }
    return std::make_unique<OpenAiStreamDecoder>();
}

std::unique_ptr<StreamEncoder> make_stream_encoder(Api api, StreamMeta meta) {
    switch (api) {
        case Api::anthropic:
            return std::make_unique<AnthropicStreamEncoder>(std::move(meta));
        case Api::gemini:
            return std::make_unique<GeminiStreamEncoder>(std::move(meta));
        case Api::openai_responses:
            return std::make_unique<ResponsesStreamEncoder>(std::move(meta));
        case Api::openai:
            break;
    }
    return std::make_unique<OpenAiStreamEncoder>(std::move(meta));
}

namespace {

bool is_timeout(Errc e) {
    switch (e) {
        case Errc::timeout_connect:
        case Errc::timeout_headers:
        case Errc::timeout_first_byte:
        case Errc::timeout_first_token:
        case Errc::timeout_idle:
        case Errc::timeout_total:
            return true;
        default:
            return false;
    }
}

std::string_view anthropic_type(Errc e) {
    if (is_timeout(e)) return "timeout_error";
    switch (e) {
        case Errc::bad_request:
        case Errc::method_not_allowed:
        case Errc::headers_too_large:
        case Errc::unsupported:
            return "invalid_request_error";
        case Errc::unauthorized:
            return "authentication_error";
        case Errc::forbidden:
            return "permission_error";
        case Errc::not_found:
            return "not_found_error";
        case Errc::payload_too_large:
            return "request_too_large";
        case Errc::rate_limited:
            return "rate_limit_error";
        case Errc::overloaded:
            return "overloaded_error";
        default:
            return "api_error";
    }
}

std::string_view gemini_status(Errc e) {
    if (is_timeout(e)) return "DEADLINE_EXCEEDED";
    switch (e) {
        case Errc::bad_request:
        case Errc::method_not_allowed:
        case Errc::headers_too_large:
        case Errc::payload_too_large:
        case Errc::unsupported:
            return "INVALID_ARGUMENT";
        case Errc::unauthorized:
            return "UNAUTHENTICATED";
        case Errc::forbidden:
            return "PERMISSION_DENIED";
        case Errc::not_found:
            return "NOT_FOUND";
        case Errc::rate_limited:
            return "RESOURCE_EXHAUSTED";
        case Errc::overloaded:
            return "UNAVAILABLE";
        case Errc::cancelled:
            return "CANCELLED";
        default:
            return "INTERNAL";
    }
}

}  // namespace

std::string_view error_type(Api api, Errc code) noexcept {
    switch (api) {
        case Api::anthropic:
            return anthropic_type(code);
        case Api::gemini:
            return gemini_status(code);
        case Api::openai:
        case Api::openai_responses:
            break;
    }
    return openai_error_type(code);
}

int error_http_status(Api api, Errc code) noexcept {
    if (api == Api::anthropic && code == Errc::overloaded) return 529;
    return http_status(code);
}

Errc errc_from_http_status(int status) noexcept {
    switch (status) {
        case 400:
            return Errc::bad_request;
        case 401:
            return Errc::unauthorized;
        case 403:
            return Errc::forbidden;
        case 404:
            return Errc::not_found;
        case 405:
            return Errc::method_not_allowed;
        case 408:
            return Errc::timeout_total;
        case 413:
            return Errc::payload_too_large;
        case 429:
            return Errc::rate_limited;
        case 499:
            return Errc::cancelled;
        case 503:
        case 529:
            return Errc::overloaded;
        case 504:
            return Errc::timeout_total;
        default:
            break;
    }
    if (status >= 400 && status < 500) return Errc::bad_request;
    return Errc::upstream_http_error;
}

std::optional<Errc> errc_from_error_type(Api api, std::string_view t) noexcept {
    switch (api) {
        case Api::openai:
        case Api::openai_responses:
        case Api::anthropic:
            if (t == "invalid_request_error") return Errc::bad_request;
            if (t == "authentication_error" || t == "invalid_api_key") return Errc::unauthorized;
            if (t == "permission_error") return Errc::forbidden;
            if (t == "not_found_error" || t == "model_not_found") return Errc::not_found;
            if (t == "request_too_large") return Errc::payload_too_large;
            if (t == "rate_limit_error" || t == "rate_limit_exceeded" ||
                t == "insufficient_quota" || t == "tokens" || t == "requests") {
                return Errc::rate_limited;
            }
            if (t == "overloaded_error" || t == "server_overloaded") return Errc::overloaded;
            if (t == "timeout_error") return Errc::timeout_total;
            if (t == "api_error" || t == "server_error" || t == "upstream_error") {
                return Errc::upstream_http_error;
            }
            return std::nullopt;
        case Api::gemini:
            if (t == "INVALID_ARGUMENT" || t == "FAILED_PRECONDITION" || t == "OUT_OF_RANGE") {
                return Errc::bad_request;
            }
            if (t == "UNAUTHENTICATED") return Errc::unauthorized;
            if (t == "PERMISSION_DENIED") return Errc::forbidden;
            if (t == "NOT_FOUND") return Errc::not_found;
            if (t == "RESOURCE_EXHAUSTED") return Errc::rate_limited;
            if (t == "UNAVAILABLE") return Errc::overloaded;
            if (t == "DEADLINE_EXCEEDED") return Errc::timeout_total;
            if (t == "CANCELLED") return Errc::cancelled;
            if (t == "INTERNAL" || t == "UNKNOWN" || t == "DATA_LOSS")
                return Errc::upstream_http_error;
            return std::nullopt;
    }
    return std::nullopt;
}

ErrorBody parse_error_body(Api api, int http_status_code, std::string_view body) {
    ErrorBody out;
    out.code = errc_from_http_status(http_status_code);
    auto obj = parse_json_object(body);
    const json::object* err = nullptr;
    if (obj) {
        if (const json::value* e = obj->if_contains("error"); e && e->is_object()) {
            err = &e->get_object();
        }
    }
    if (err == nullptr) {
        constexpr std::size_t kMaxMessage = 512;
        out.message = valid_utf8(body.substr(0, kMaxMessage));  // JSON strings must be UTF-8
        return out;
    }
    auto str = [&](std::string_view key) -> std::string {
        const json::value* v = err->if_contains(key);
        return (v && v->is_string()) ? std::string(v->get_string()) : std::string();
    };
    out.message = str("message");
    out.type = str(api == Api::gemini ? "status" : "type");
    // A specific HTTP status beats the body's type: OpenAI uses invalid_request_error for
    // 400, 404 and 413 alike. The type decides for unspecific statuses (400, 5xx, 200 in a
    // stream).
    switch (http_status_code) {
        case 401:
        case 403:
        case 404:
        case 405:
        case 408:
        case 413:
        case 429:
        case 499:
        case 503:
        case 504:
        case 529:
            return out;
        default:
            break;
    }
    if (auto e = errc_from_error_type(api, out.type)) {
        out.code = *e;
    } else if (api == Api::openai || api == Api::openai_responses) {
        if (auto c = errc_from_error_type(api, str("code"))) out.code = *c;
    }
    return out;
}

std::string emit_error_body(Api api, Errc code, std::string_view message) {
    switch (api) {
        case Api::anthropic:
            return json::serialize(json::object{
                {"type", "error"},
                {"error", json::object{{"type", anthropic_type(code)}, {"message", message}}}});
        case Api::gemini:
            return json::serialize(
                json::object{{"error", json::object{{"code", error_http_status(api, code)},
                                                    {"message", message},
                                                    {"status", gemini_status(code)}}}});
        case Api::openai:
        case Api::openai_responses:
            break;
    }
    return openai_error_body(code, message);
}

}  // namespace tokenradar::dialect
