#include <tokenradar/dialect/http_call.hpp>

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/gemini.hpp>

namespace tokenradar::dialect {
namespace {

std::string_view trim_slash(std::string_view path) {
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    return path;
}

// "/v1", "/v1beta", "/v2alpha": the SDKs' version segment.
bool ends_with_version(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string_view::npos) return false;
    const std::string_view last = path.substr(slash + 1);
    return last.size() >= 2 && last[0] == 'v' && last[1] >= '0' && last[1] <= '9';
}

}  // namespace

std::string_view default_key_env(Api api) noexcept {
    switch (api) {
        case Api::openai:
        case Api::openai_responses:
            return "OPENAI_API_KEY";
        case Api::anthropic:
            return "ANTHROPIC_API_KEY";
        case Api::gemini:
            return "GEMINI_API_KEY";
    }
    return "OPENAI_API_KEY";
}

std::string_view official_host(Api api) noexcept {
    switch (api) {
        case Api::openai:
        case Api::openai_responses:
            return "api.openai.com";
        case Api::anthropic:
            return "api.anthropic.com";
        case Api::gemini:
            return "generativelanguage.googleapis.com";
    }
    return "api.openai.com";
}

Result<HttpCall> make_http_call(Api api, std::string_view base_path, const ChatRequest& request,
                                const Secret& key) {
    auto body = emit_request(api, request);
    if (!body) return body.error();
    return make_http_call(api, base_path, request.model, request.stream, std::move(*body), key);
}

HttpCall make_http_call(Api api, std::string_view base_path, std::string_view model, bool stream,
                        std::string body, const Secret& key) {
    HttpCall call;
    call.body = std::move(body);
    call.headers.reserve(4);  // at most 4 below: one allocation instead of growing per header
    call.headers.emplace_back("content-type", "application/json");
    std::string_view base = trim_slash(base_path);
    switch (api) {
        case Api::openai:
            call.target = std::string(base) + "/chat/completions";
            if (!key.empty()) call.headers.emplace_back("authorization", "Bearer " + key.reveal());
            break;
        case Api::openai_responses:
            call.target = std::string(base) + "/responses";
            if (!key.empty()) call.headers.emplace_back("authorization", "Bearer " + key.reveal());
            break;
        case Api::anthropic:
            call.target = std::string(base) + (ends_with_version(base) ? "" : "/v1") + "/messages";
            if (!key.empty()) call.headers.emplace_back("x-api-key", key.reveal());
            call.headers.emplace_back("anthropic-version", std::string(kAnthropicVersion));
            break;
        case Api::gemini:
            if (ends_with_version(base)) base = base.substr(0, base.rfind('/'));
            call.target = std::string(base) + gemini_path(model, stream);
            if (!key.empty()) call.headers.emplace_back("x-goog-api-key", key.reveal());
            break;
    }
    if (stream) call.headers.emplace_back("accept", "text/event-stream");
    return call;
}

}  // namespace tokenradar::dialect
