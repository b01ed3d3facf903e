#include <tokenradar/dialect/translate.hpp>

// The rest of this component and its private helpers.
#include "json_util.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/metering.hpp>
#include <tokenradar/sse/sse_writer.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace tokenradar::dialect {

namespace {

std::string_view upstream_phrase(Api api) {
    switch (api) {
        case Api::anthropic:
            return "an anthropic upstream";
        case Api::gemini:
            return "a gemini upstream";
        case Api::openai_responses:
            return "an openai-responses upstream";
        case Api::openai:
            break;
    }
    return "an openai upstream";
}

// "n: 2 choices cannot be served by an anthropic upstream (only n = 1)"
Error refuse(std::string_view field, std::string_view what, Api target, std::string_view why) {
    return Error(Errc::unsupported, fmt::format("{}: {} cannot be served by {} ({})", field, what,
                                                upstream_phrase(target), why));
}

// As the client wrote it, near enough: Boost.JSON would print 0.5 as 5E-1.
std::string value_text(const json::value& v) {
    if (v.is_double()) return fmt::format("{}", v.get_double());
    return json::serialize(v);
}

bool is_zero_number(const json::value& v) { return v.is_number() && v.to_number<double>() == 0.0; }

bool whitespace_only(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    });
}

// Google's documented mapping for its own OpenAI-compatible endpoint (low / medium / high ->
// 1K / 8K / 24K thinking tokens, none -> thinking off); minimal is treated as low.
std::optional<std::int64_t> gemini_thinking_budget(std::string_view effort) {
    if (effort == "none") return 0;
    if (effort == "minimal" || effort == "low") return 1024;
    if (effort == "medium") return 8192;
    if (effort == "high") return 24576;
    return std::nullopt;
}

// n, temperature, stop, seed, the penalties and logit_bias.
std::optional<Error> check_sampling_field(std::string_view key, const json::value& v, Api target,
                                          const ChatRequest& req) {
    const bool anthropic = target == Api::anthropic;
    if (key == "n") {
        if (!v.is_number()) return Error(Errc::bad_request, "n: expected an integer");
        if (v.to_number<double>() == 1.0) return std::nullopt;
        return refuse(
            key, value_text(v) + " choices", target,
            anthropic ? "only n = 1" : "the gateway translates one candidate: only n = 1");
    }
    if (key == "temperature") {
        if (anthropic && v.is_number() && v.to_number<double>() > 1.0)
            return refuse(key, value_text(v), target, "it accepts 0 to 1");
        return std::nullopt;
    }
    if (key == "stop") {
        for (const std::string& s : req.stop) {
            if (anthropic && whitespace_only(s))
                return refuse(key,
                              "the whitespace-only stop sequence " + value_text(json::string(s)),
                              target, "it rejects them");
        }
        return std::nullopt;
    }
    if (key == "logit_bias") {
        if (v.is_object() && v.get_object().empty()) return std::nullopt;
        return refuse(key, "token biases", target, "it has no logit bias");
    }
    if (key == "seed") {
        if (!anthropic) return std::nullopt;
        return refuse(key, "a sampling seed", target, "it has no seed");
    }
    if (key == "presence_penalty" || key == "frequency_penalty") {
        if (!anthropic || is_zero_number(v)) return std::nullopt;
        return refuse(key, value_text(v), target, "it has no repetition penalties");
    }
    return std::nullopt;
}

// response_format, tool_choice and parallel_tool_calls: refused when the neutral model could
// not hold the value, or the target cannot express it.
std::optional<Error> check_structure_field(std::string_view key, const json::value& v, Api target,
                                           const ChatRequest& req) {
    const bool anthropic = target == Api::anthropic;
    if (key == "response_format") {
        const ResponseFormat::Kind kind =
            req.response_format ? req.response_format->kind : ResponseFormat::Kind::text;
        if (!req.response_format) {
            const json::value* type = v.is_object() ? v.get_object().if_contains("type") : nullptr;
            return refuse(key, "the type " + (type ? value_text(*type) : std::string("?")), target,
                          "not translated");
        }
        if (anthropic && kind == ResponseFormat::Kind::json_object)
            return refuse(key, "json_object", target,
                          "it has JSON output only with a schema: use json_schema");
        return std::nullopt;
    }
    if (key == "tool_choice") {
        if (req.tool_choice) return std::nullopt;
        const json::value* type = v.is_object() ? v.get_object().if_contains("type") : nullptr;
        return refuse(key, "the type " + (type ? value_text(*type) : std::string("?")), target,
                      "not translated: use auto, none, required or one function");
    }
    if (key == "parallel_tool_calls") {
        if (anthropic || req.parallel_tool_calls != false || req.tools.empty()) return std::nullopt;
        return refuse(key, "false", target, "it cannot be limited to one function call per turn");
    }
    return std::nullopt;
}

// What the model outputs beyond text: log probabilities, reasoning, verbosity, modalities,
// audio, web search and the deprecated functions API.
std::optional<Error> check_output_field(std::string_view key, const json::value& v, Api target) {
    const bool anthropic = target == Api::anthropic;
    if (key == "logprobs") {
        if (v.is_bool() && !v.get_bool()) return std::nullopt;
        return refuse(key, "token log probabilities", target,
                      anthropic ? "it has none" : "the gateway does not translate them");
    }
    if (key == "top_logprobs") {
        if (is_zero_number(v)) return std::nullopt;
        return refuse(key, "token log probabilities", target,
                      anthropic ? "it has none" : "the gateway does not translate them");
    }
    if (key == "reasoning_effort") {
        const std::string_view effort = v.is_string() ? std::string_view(v.get_string()) : "";
        if (!v.is_string() || !gemini_thinking_budget(effort))
            return Error(Errc::bad_request,
                         "reasoning_effort: expected one of none, minimal, low, medium, high");
        if (!anthropic || effort == "none") return std::nullopt;
        return refuse(key, value_text(v), target,
                      "its extended thinking needs a token budget and the signed thinking blocks "
                      "of earlier turns sent back, which OpenAI messages cannot carry");
    }
    if (key == "verbosity") {
        if (v.is_string() && v.get_string() == "medium") return std::nullopt;
        return refuse(key, value_text(v), target, "it has no verbosity setting");
    }
    if (key == "modalities") {
        if (v.is_array()) {
            const json::array& a = v.get_array();
            if (std::all_of(a.begin(), a.end(), [](const json::value& m) {
                    return m.is_string() && m.get_string() == "text";
                })) {
                return std::nullopt;
            }
        }
        return refuse(key, value_text(v), target, "the gateway translates text output only");
    }
    if (key == "audio")
        return refuse(key, "audio output", target,
                      "the gateway translates text "
                      "output only");
    if (key == "web_search_options") {
        return refuse(key, "web search", target,
                      anthropic ? "its web search is a server tool the gateway does not translate"
                                : "its Google Search grounding is not translated by the gateway");
    }
    if (key == "functions" || key == "function_call") {
        return refuse(key, "the deprecated functions API", target, "send tools instead");
    }
    return std::nullopt;
}

// The top-level fields of an OpenAI request that an Anthropic / Gemini upstream cannot honour
// with the value given. Fields not named here are translated through the neutral model
// (model, messages, max_tokens, max_completion_tokens, top_p, stream, tools, stop...) or
// dropped as harmless (user, metadata, store, service_tier, stream_options, prediction,
// safety_identifier, prompt_cache_key, unknown vendor fields). Values of the wrong JSON type
// were already refused by parse_openai_request where the field is modelled.
std::optional<Error> check_field(std::string_view key, const json::value& v, Api target,
                                 const ChatRequest& req) {
    if (v.is_null()) return std::nullopt;
    if (auto refused = check_sampling_field(key, v, target, req)) return refused;
    if (auto refused = check_structure_field(key, v, target, req)) return refused;
    return check_output_field(key, v, target);
}

// Content the target cannot place where the client put it.
std::optional<Error> check_content(const ChatRequest& req, Api target) {
    for (std::size_t i = 0; i < req.messages.size(); ++i) {
        const Message& m = req.messages[i];
        for (std::size_t j = 0; j < m.content.size(); ++j) {
            if (m.content[j].kind == ContentPart::Kind::text) continue;
            const std::string field = fmt::format("messages[{}].content[{}]", i, j);
            if (m.role == Role::system)
                return refuse(field, "an image in a system message", target,
                              "its system prompt is text only");
            if (m.role == Role::tool && target == Api::gemini)
                return refuse(field, "an image in a tool result", target,
                              "the gateway sends Gemini function responses as text");
        }
    }
    return std::nullopt;
}

// Gemini 3 refuses a history whose function calls lack the thoughtSignature it sent with
// them. Clients that keep the assistant message as received send it back in extra_content;
// for the others Google documents this value, which skips the check.
constexpr std::string_view kSkipSignatureCheck = "skip_thought_signature_validator";

void sign_gemini_history(ChatRequest& req) {
    for (Message& m : req.messages) {
        if (m.tool_calls.empty()) continue;
        // Parallel calls: Gemini signs only the first of them.
        const bool signed_any =
            std::any_of(m.tool_calls.begin(), m.tool_calls.end(),
                        [](const ToolCall& tc) { return !tc.signature.empty(); });
        if (!signed_any) m.tool_calls.front().signature = kSkipSignatureCheck;
    }
}

std::string synthetic_tool_id(std::string_view response_id, int index) {
    if (response_id.empty()) return fmt::format("call_{}", index);
    return fmt::format("call_{}_{}", response_id, index);
}

// Appends JSON text for `value` (or a string) to `out` through one reused serializer.
class JsonAppender {
  public:
    explicit JsonAppender(std::string& out) : out_(out) {}
    void value(const json::value& v) {
        sr_.reset(&v);
        drain();
    }
    void string(std::string_view s) {
        sr_.reset(json::string_view(s.data(), s.size()));
        drain();
    }
    void key(std::string_view k) {
        if (!first_) out_ += ',';
        first_ = false;
        string(k);
        out_ += ':';
    }
    void open() {
        out_ += '{';
        first_ = true;
    }
    void close() {
        out_ += '}';
        first_ = false;
    }

  private:
    void drain() {
        char buf[4096];
        while (!sr_.done()) {
            const auto part = sr_.read(buf, sizeof buf);
            out_.append(part.data(), part.size());
        }
    }
    std::string& out_;
    json::serializer sr_;
    bool first_ = true;
};

// stream_options for a streaming upstream request: the client's options (serialized from the
// DOM: include_obfuscation...) with include_usage set, which the gateway's metering needs.
void append_stream_options(std::string& out, const json::value* client_options) {
    JsonAppender options(out);
    options.open();
    bool saw_usage = false;
    if (client_options != nullptr && client_options->is_object()) {
        for (const auto& option : client_options->get_object()) {
            const std::string_view option_name(option.key().data(), option.key().size());
            options.key(option_name);
            if (option_name == "include_usage") {
                saw_usage = true;
                out += "true";
            } else {
                options.value(option.value());
            }
        }
    }
    if (!saw_usage) {
        options.key("include_usage");
        out += "true";
    }
    options.close();
}

// The client's body as json::serialize would write it after `model` is replaced and (for a
// stream) stream_options.include_usage set, in the same key order, without copying the JSON.
// For requests with no text of their own, or whose top-level keys are written with escapes.
std::string serialized_passthrough_body(const json::object& original, std::string_view model,
                                        bool stream) {
    std::string out;
    out.reserve(original.size() * 32 + 256);
    JsonAppender json_out(out);
    json_out.open();
    bool saw_stream_options = false;
    for (const auto& field : original) {
        const std::string_view name(field.key().data(), field.key().size());
        json_out.key(name);
        if (name == "model") {
            json_out.string(model);
        } else if (stream && name == "stream_options") {
            saw_stream_options = true;
            append_stream_options(out, &field.value());
        } else {
            json_out.value(field.value());
        }
    }
    if (stream && !saw_stream_options) {
        json_out.key("stream_options");
        append_stream_options(out, nullptr);
    }
    json_out.close();
    return out;
}

// The client's own bytes with the top-level `model` value replaced and (for a stream)
// stream_options.include_usage set: the upstream sees the client's number and string text
// and key order, and the gateway neither walks the DOM nor escapes every string again. The
// text is re-serialized from the DOM instead when what the upstream parses could differ
// from what the gateway parsed: a top-level key written with escapes (it might spell
// either name) or a repeated one (parsers differ on which one counts; Boost.JSON keeps one).
// `original` is the DOM `text` parsed to; `stream_options` forces include_usage as above.
std::string spliced_body(const json::object& original, std::string_view text,
                         std::string_view model, bool stream_options) {
    std::string out;
    out.reserve(text.size() + model.size() + 64);
    std::size_t copied = 0;
    std::size_t members = 0;
    bool escaped_key = false;
    bool saw_stream_options = false;
    MemberScanner scanner(text);
    while (const auto member = scanner.next()) {
        ++members;
        escaped_key = escaped_key || member->key.find('\\') != std::string_view::npos;
        const bool is_model = member->key == "model";
        const bool is_options = stream_options && member->key == "stream_options";
        if (!is_model && !is_options) continue;
        out.append(text.substr(copied, member->value_begin - copied));
        if (is_model) {
            JsonAppender(out).string(model);
        } else {
            saw_stream_options = true;
            append_stream_options(out, Reader::find(original, "stream_options"));
        }
        copied = member->value_end;
    }
    const auto close = scanner.closing_brace();
    if (!close || escaped_key || members != original.size()) {
        return serialized_passthrough_body(original, model, stream_options);
    }
    if (stream_options && !saw_stream_options) {  // `model` is required: the object has members
        out.append(text.substr(copied, *close - copied));
        out += ",\"stream_options\":";
        append_stream_options(out, nullptr);
        copied = *close;
    }
    out.append(text.substr(copied));
    return out;
}

std::string passthrough_body(const ChatRequest& client, std::string_view text,
                             std::string_view model) {
    return spliced_body(client.original, text, model, client.stream);
}

Result<HttpCall> passthrough_call(const ChatRequest& client, std::string_view client_text,
                                  std::string_view base_path, std::string_view upstream_model,
                                  const Secret& key) {
    if (client.original.empty()) {  // built in code, not parsed: emit it
        ChatRequest copy = client;
        copy.model.assign(upstream_model);
        copy.include_usage = true;
        return make_http_call(Api::openai, base_path, copy, key);
    }
    std::string body = client_text.empty() ? serialized_passthrough_body(
                                                 client.original, upstream_model, client.stream)
                                           : passthrough_body(client, client_text, upstream_model);
    return make_http_call(Api::openai, base_path, upstream_model, client.stream, std::move(body),
                          key);
}

}  // namespace

std::string with_model(const json::object& original, std::string_view text, std::string_view model,
                       bool stream) {
    return spliced_body(original, text, model, stream);
}

Result<HttpCall> make_upstream_call(const ChatRequest& client_request, Api upstream_api,
                                    std::string_view base_path, std::string_view upstream_model,
                                    const Secret& key, std::string_view client_text,
                                    PromptCache prompt_cache) {
    if (upstream_api == Api::openai)
        return passthrough_call(client_request, client_text, base_path, upstream_model, key);
    for (const auto& field : client_request.original) {
        if (auto e = check_field(field.key(), field.value(), upstream_api, client_request))
            return std::move(*e);
    }
    if (auto e = check_content(client_request, upstream_api)) return std::move(*e);
    ChatRequest upstream = client_request;
    upstream.original = json::object();
    upstream.model.assign(upstream_model);
    upstream.include_usage = true;
    if (upstream_api == Api::gemini) {
        if (const json::value* effort = Reader::find(client_request.original, "reasoning_effort");
            effort && effort->is_string()) {
            upstream.thinking_budget = gemini_thinking_budget(effort->get_string());
        }
        sign_gemini_history(upstream);
    }
    if (upstream_api == Api::anthropic && prompt_cache == PromptCache::automatic)
        add_prompt_cache_breakpoints(upstream);
    return make_http_call(upstream_api, base_path, upstream, key);
}

Result<std::string> relay_response(Api upstream_api, std::string upstream_body,
                                   std::int64_t created, Measurement& m) {
    if (upstream_api == Api::openai) {
        if (auto metered = meter_response(m, upstream_api, upstream_body); !metered)
            return metered.error();
        return upstream_body;
    }
    auto resp = parse_response(upstream_api, upstream_body);
    if (!resp) return resp.error();
    record_response(m, *resp);
    resp->created = created;
    for (std::size_t i = 0; i < resp->tool_calls.size(); ++i) {
        if (resp->tool_calls[i].id.empty())
            resp->tool_calls[i].id = synthetic_tool_id(resp->id, static_cast<int>(i));
    }
    return emit_openai_response(*resp);
}

Result<std::string> translate_response(Api upstream_api, std::string upstream_body,
                                       std::int64_t created) {
    if (upstream_api == Api::openai) return upstream_body;  // unread, as the gateway relays it
    Measurement unused;
    auto out = relay_response(upstream_api, std::move(upstream_body), created, unused);
    if (!out) {
        return Error(Errc::protocol_error,
                     fmt::format("{} response: {}", to_string(upstream_api), out.error().message));
    }
    return out;
}

ClientError translate_error(Api upstream_api, int upstream_status, std::string_view upstream_body) {
    const bool error_status = upstream_status >= 400 && upstream_status <= 599;
    if (upstream_api == Api::openai && error_status) {
        auto body = parse_json_object(upstream_body);
        const json::value* err = body ? body->if_contains("error") : nullptr;
        if (err && err->is_object()) {
            const json::value* message = err->get_object().if_contains("message");
            if (message && message->is_string())
                return {upstream_status, std::string(upstream_body)};
        }
    }
    ErrorBody e = parse_error_body(upstream_api, upstream_status, upstream_body);
    if (!error_status && e.code == Errc::upstream_http_error) e.code = Errc::protocol_error;
    std::string message =
        fmt::format("upstream {} answered HTTP {}", to_string(upstream_api), upstream_status);
    if (!e.message.empty()) {
        message += ": ";
        message += e.message;
    }
    return {http_status(e.code), openai_error_body(e.code, message, {}, e.type)};
}

StreamTranslator::StreamTranslator(Api upstream_api, bool client_wants_usage, StreamMeta meta)
    : api_(upstream_api), wants_usage_(client_wants_usage), response_id_(meta.id) {
    if (api_ != Api::openai) {
        meta.include_usage = client_wants_usage;
        encoder_.emplace(std::move(meta));
    }
}

void StreamTranslator::on_event(const sse::SseEvent& event, std::span<const StreamDelta> deltas,
                                std::string& out) {
    using K = StreamDelta::Kind;
    if (terminated_) return;
    if (api_ == Api::openai) {
        relay_openai(event, deltas, out);
        return;
    }
    for (const StreamDelta& d : deltas) {
        switch (d.kind) {
            case K::error:
                write_error(d.error_code, d.text, d.error_type, out);
                return;
            case K::done:
                encoder_->encode(d, out);  // usage chunk (if asked for) and [DONE]
                terminated_ = complete_ = true;
                return;
            case K::role:
                if (response_id_.empty()) response_id_ = d.id;
                encoder_->encode(d, out);
                break;
            case K::tool_call:
                // Anthropic opens every tool_use block with an empty input_json_delta.
                if (d.id.empty() && d.name.empty() && d.arguments.empty()) break;
                if (d.id.empty() && !d.name.empty() && api_ == Api::gemini) {
                    StreamDelta named = d;  // rare: once per Gemini function call
                    named.id = synthetic_tool_id(response_id_, d.index);
                    encoder_->encode(named, out);
                    break;
                }
                encoder_->encode(d, out);
                break;
            default:
                encoder_->encode(d, out);
                break;
        }
    }
}

void StreamTranslator::relay_openai(const sse::SseEvent& event, std::span<const StreamDelta> deltas,
                                    std::string& out) {
    using K = StreamDelta::Kind;
    bool usage_only = !deltas.empty();
    bool error = false;
    for (const StreamDelta& d : deltas) {
        if (d.kind == K::done) {
            sse::SseWriter::data(out, "[DONE]");
            terminated_ = complete_ = true;
            return;
        }
        error = error || d.kind == K::error;
        usage_only = usage_only && d.kind == K::usage;
    }
    if (usage_only && !wants_usage_) return;
    // Written again as SSE, not copied: the client gets LF-framed events whatever line ends
    // the upstream used. A one-line payload (OpenAI's every event) skips the line-break scan
    // (7% of a relayed stream's instructions, docs/NOTES.md "Performance facts").
    sse::SseWriter::data(out, event);
    if (error) {
        sse::SseWriter::data(out, "[DONE]");
        terminated_ = true;
    }
}

void StreamTranslator::write_error(Errc code, std::string_view message,
                                   std::string_view upstream_type, std::string& out) {
    sse::SseWriter::data(
        out, openai_error_body(code, fmt::format("upstream {}: {}", to_string(api_), message), {},
                               upstream_type));
    sse::SseWriter::data(out, "[DONE]");
    terminated_ = true;
}

void StreamTranslator::finish(std::string& out) {
    if (terminated_) return;
    std::string_view terminal = api_ == Api::openai      ? "data: [DONE]"
                                : api_ == Api::anthropic ? "message_stop"
                                                         : "a chunk with finishReason";
    fail(Errc::protocol_error,
         fmt::format("the {} upstream ended the stream before its terminal event ({})",
                     to_string(api_), terminal),
         out);
}

void StreamTranslator::fail(Errc code, std::string_view message, std::string& out) {
    if (terminated_) return;
    sse::SseWriter::data(out, openai_error_body(code, message));
    sse::SseWriter::data(out, "[DONE]");
    terminated_ = true;
}

}  // namespace tokenradar::dialect
