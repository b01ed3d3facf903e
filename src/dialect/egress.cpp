#include <tokenradar/dialect/egress.hpp>

#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/dialect/openai.hpp>
#include <tokenradar/dialect/responses.hpp>
#include <tokenradar/sse/sse_writer.hpp>

#include "json_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <utility>

namespace tokenradar::dialect {

namespace {

// OpenAI and Anthropic pair a tool result with its call by id; Gemini by function name, ids
// being optional (the Google GenAI SDK sends none).
Result<void> pair_gemini_calls(ChatRequest& chat) {
    std::vector<const ToolCall*> open;  // the last model turn's calls not yet answered
    std::size_t numbered = 0;
    for (Message& m : chat.messages) {
        if (m.role == Role::assistant) {
            open.clear();
            for (ToolCall& call : m.tool_calls) {
                if (call.id.empty()) call.id = fmt::format("call_gemini_{}", numbered++);
                open.push_back(&call);
            }
            continue;
        }
        if (m.role != Role::tool) continue;
        const auto answered = std::find_if(open.begin(), open.end(), [&m](const ToolCall* c) {
            return m.tool_call_id.empty() ? c->name == m.name : c->id == m.tool_call_id;
        });
        if (answered == open.end()) {
            if (!m.tool_call_id.empty()) continue;  // the upstream judges a foreign id
            return Error(Errc::bad_request,
                         fmt::format("contents: a functionResponse of '{}' answers no "
                                     "functionCall of that name in the model turn before it",
                                     m.name));
        }
        m.tool_call_id = (*answered)->id;
        open.erase(answered);
    }
    return {};
}

// A proto field name as both spellings Google accepts compare: "top_k" and "topK" -> "topk".
std::string folded(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c != '_') out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return out;
}

bool one_of(std::string_view key, std::initializer_list<std::string_view> names) {
    const std::string k = folded(key);
    return std::find(names.begin(), names.end(), k) != names.end();
}

Error untranslated(std::string_view path, std::string_view why) {
    return Error(
        Errc::bad_request,
        fmt::format("{}: {}; the gateway's Gemini door cannot carry it to an upstream", path, why));
}

// The Gemini parser (shared with the sim) reads what the neutral model holds and skips the
// rest. Through the door a skipped field would be dropped silently, so every field that is
// not translated and would change the answer is a bad request naming it.
std::optional<Error> untranslated_gemini_field(const json::object& body) {
    for (const auto& [key, value] : body) {
        if (one_of(key, {"contents", "systeminstruction", "tools", "toolconfig", "generationconfig",
                         "model"})) {
            continue;
        }
        if (one_of(key, {"safetysettings"}) && value.is_array() && value.get_array().empty())
            continue;
        return untranslated(key, "not translated");
    }
    if (const json::value* tools = proto_field(body, "tools", "tools");
        tools && tools->is_array()) {
        for (std::size_t i = 0; i < tools->get_array().size(); ++i) {
            const json::value& tool = tools->get_array()[i];
            if (!tool.is_object()) continue;
            for (const auto& [key, value] : tool.get_object()) {
                if (!one_of(key, {"functiondeclarations"}))
                    return untranslated(fmt::format("tools[{}].{}", i, std::string_view(key)),
                                        "only functionDeclarations translate");
            }
        }
    }
    const json::value* tool_config = proto_field(body, "toolConfig", "tool_config");
    const json::value* calling =
        tool_config && tool_config->is_object()
            ? proto_field(tool_config->get_object(), "functionCallingConfig",
                          "function_calling_config")
            : nullptr;
    if (calling && calling->is_object()) {
        const json::object& fc = calling->get_object();
        const json::value* mode = Reader::find(fc, "mode");
        const json::value* names =
            proto_field(fc, "allowedFunctionNames", "allowed_function_names");
        if (mode && *mode == "VALIDATED")
            return untranslated("toolConfig.functionCallingConfig.mode", "VALIDATED");
        if (names && names->is_array() && names->get_array().size() > 1)
            return untranslated("toolConfig.functionCallingConfig.allowedFunctionNames",
                                "more than one function");
    }
    const json::value* config = proto_field(body, "generationConfig", "generation_config");
    if (config == nullptr || !config->is_object()) return std::nullopt;
    for (const auto& [key, value] : config->get_object()) {
        const std::string path = fmt::format("generationConfig.{}", std::string_view(key));
        if (one_of(key, {"maxoutputtokens", "temperature", "topp", "stopsequences",
                         "responsemimetype", "responsejsonschema", "responseschema", "seed",
                         "presencepenalty", "frequencypenalty", "thinkingconfig"})) {
            continue;
        }
        if (one_of(key, {"candidatecount"})) {
            if (value.is_number() && value.to_number<double>() == 1.0) continue;
            return untranslated(path, "one candidate only");
        }
        if (one_of(key, {"responsemodalities"})) {
            const bool text_only =
                value.is_array() && value.get_array().size() == 1 && value.get_array()[0] == "TEXT";
            if (text_only) continue;
            return untranslated(path, "text answers only");
        }
        return untranslated(path, "not translated");
    }
    return std::nullopt;
}

// The client's DOM of Anthropic and Gemini is made in `scratch`: it is replaced by the OpenAI
// equivalent before the door returns.
Result<ChatRequest> parse_door_request(ClientApi client_api, std::string_view body,
                                       std::string_view model, bool stream,
                                       json::monotonic_resource& scratch) {
    switch (client_api) {
        case ClientApi::openai_responses:
            return parse_responses_request(body);
        case ClientApi::anthropic:
            return parse_anthropic_request(body, &scratch);
        case ClientApi::gemini:
            return parse_gemini_request(body, model, stream, &scratch);
        case ClientApi::openai:
            break;
    }
    return parse_openai_request(body);
}

std::unique_ptr<StreamEncoder> door_encoder(ClientApi client_api, std::int64_t created) {
    StreamMeta meta;
    meta.created = created;
    switch (client_api) {
        case ClientApi::openai_responses:
            return std::make_unique<ResponsesStreamEncoder>(std::move(meta));
        case ClientApi::anthropic:
            return make_stream_encoder(Api::anthropic, std::move(meta));
        case ClientApi::gemini:
            return make_stream_encoder(Api::gemini, std::move(meta));
        case ClientApi::openai:
            break;
    }
    return make_stream_encoder(Api::openai, std::move(meta));
}

// Chat Completions' field names and the Responses door's, for client_field_message.
constexpr std::pair<std::string_view, std::string_view> kResponsesFieldNames[] = {
    {"reasoning_effort", "reasoning.effort"}, {"max_completion_tokens", "max_output_tokens"},
    {"max_tokens", "max_output_tokens"},      {"response_format.json_schema", "text.format"},
    {"response_format", "text.format"},       {"messages", "input"},
};

}  // namespace

std::string client_field_message(ClientApi client_api, std::string message) {
    if (client_api != ClientApi::openai_responses) return message;
    for (const auto& [chat, responses] : kResponsesFieldNames) {
        const std::string_view m = message;
        if (m.starts_with(chat) && m.size() > chat.size() &&
            std::string_view(":.[").find(m[chat.size()]) != std::string_view::npos) {
            message.replace(0, chat.size(), responses);
            break;
        }
    }
    // Chat's tools[i].function.<field> is tools[i].<field> here.
    if (message.starts_with("tools[")) {
        if (const auto at = message.find("].function.");
            at != std::string::npos && at < message.find(':'))
            message.erase(at + 1, std::string_view(".function").size());
    }
    return message;
}

Result<ChatRequest> parse_client_request(ClientApi client_api, std::string_view body,
                                         std::string_view model, bool stream) {
    json::monotonic_resource scratch(2 * body.size() + 1024);
    auto chat = parse_door_request(client_api, body, model, stream, scratch);
    if (!chat || client_api == ClientApi::openai) return chat;
    if (client_api == ClientApi::gemini) {
        if (auto field = untranslated_gemini_field(chat->original)) return std::move(*field);
        if (auto paired = pair_gemini_calls(*chat); !paired) return paired.error();
    }
    // Responses' reasoning.effort has no neutral field: Chat's reasoning_effort carries it,
    // and each upstream takes or refuses it (translate.hpp).
    json::value effort;
    if (const json::value* e = Reader::find(chat->original, "reasoning_effort")) effort = *e;
    // Built as a DOM in an arena of its own (the client's DOM and its arena go): serializing
    // it and parsing the text back cost a third of the door, and a DOM on the heap a third.
    auto original = openai_request_json(*chat, request_storage(body.size()));
    if (!original) return original.error();
    adopt(chat->original, std::move(*original));
    if (!effort.is_null()) chat->original["reasoning_effort"] = std::move(effort);
    chat->include_usage = true;
    return chat;
}

Egress::Egress(ClientApi client_api, std::int64_t created)
    : api_(client_api),
      created_(created),
      parser_([] {
          sse::SseParser::Options options;
          options.expose_comments = true;
          return options;
      }()),
      encoder_(door_encoder(client_api, created)) {}

Egress::~Egress() = default;

Api Egress::door_dialect() const noexcept {
    return api_ == ClientApi::gemini      ? Api::gemini
           : api_ == ClientApi::anthropic ? Api::anthropic
                                          : Api::openai;
}

void Egress::whole(int& status, std::string& content_type, std::string& body) const {
    if (content_type != "application/json" || body.empty()) return;
    const bool responses = api_ == ClientApi::openai_responses;
    if (status >= 200 && status < 300) {
        auto response = parse_openai_response(body);
        if (response && responses) {
            body = emit_responses_response(*response, created_);
        } else if (response) {
            body = emit_response(door_dialect(), *response);
        } else {
            body = emit_error_body(
                door_dialect(), Errc::protocol_error,
                fmt::format("the answer could not be translated: {}", response.error().message));
            status = error_http_status(door_dialect(), Errc::protocol_error);
        }
        return;
    }
    if (status < 400) return;
    // Responses errors are OpenAI's: the relay's pass whole (param and code kept); anything
    // else is rewritten as one.
    if (responses && parse_json_object(body).has_value()) return;
    const ErrorBody error = parse_error_body(Api::openai, status, body);
    body = emit_error_body(door_dialect(), error.code, error.message);
    status = error_http_status(door_dialect(), error.code);
}

void Egress::stream(std::string_view bytes, std::string& out) {
    if (terminated_ || bytes.empty()) return;
    auto fed = parser_.feed(bytes, [&](const sse::SseEvent& event) { on_event(event, out); });
    if (!fed) fail(Errc::protocol_error, fed.error().message, out);
}

void Egress::end(std::string& out) {
    if (terminated_) return;
    if (parser_.finish()) {
        fail(Errc::protocol_error, "the stream ended inside an event", out);
        return;
    }
    encoder_->finish(out);
    terminated_ = true;
}

void Egress::on_event(const sse::SseEvent& event, std::string& out) {
    if (terminated_) return;
    if (event.is_comment) {
        // Gemini's and OpenAI's SDKs skip comments.
        if (api_ == ClientApi::anthropic) {
            sse::SseWriter::event(out, "ping", R"({"type":"ping"})");
        } else {
            sse::SseWriter::comment(out, "keep-alive");
        }
        return;
    }
    deltas_.clear();
    if (auto decoded = decoder_.decode(event.event, event.data, deltas_); !decoded) {
        fail(Errc::protocol_error, decoded.error().message, out);
        return;
    }
    for (const StreamDelta& d : deltas_) {
        encoder_->encode(d, out);
        if (d.kind == StreamDelta::Kind::done || d.kind == StreamDelta::Kind::error) {
            terminated_ = true;
            return;
        }
    }
}

void Egress::fail(Errc code, std::string_view message, std::string& out) {
    StreamDelta error = StreamDelta::make(StreamDelta::Kind::error);
    error.error_code = code;
    if (api_ == ClientApi::openai_responses) error.error_type = error_type(Api::openai, code);
    error.text = fmt::format("the stream could not be translated: {}", message);
    encoder_->encode(error, out);
    terminated_ = true;
}

}  // namespace tokenradar::dialect
