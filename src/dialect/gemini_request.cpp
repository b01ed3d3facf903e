// Gemini generateContent requests: parse and emit (gemini.hpp). Responses and streams are in
// gemini.cpp.
#include <tokenradar/dialect/gemini.hpp>

// The rest of this component and its private helpers.
#include "chat_json.hpp"
#include "gemini_function_call.hpp"
#include "generation_options.hpp"
#include "json_util.hpp"

#include <cctype>

namespace tokenradar::dialect {

namespace {

// systemInstruction: a Content whose parts are text only.
void read_system_instruction(Reader& r, const json::value& instruction, const Path& path,
                             ChatRequest& req) {
    const json::object* content = r.as_object(instruction, path);
    if (!content) return;
    Path parts_path = path.key("parts");
    Message system;
    system.role = Role::system;
    if (const json::array* parts = r.array(*content, "parts", path, true)) {
        for_each_object(
            r, *parts, parts_path, [&](const json::object& part, const Path& part_path) {
                if (auto text = r.string(part, "text", part_path, true))
                    system.content.push_back(ContentPart::make_text(std::string(*text)));
            });
    }
    req.messages.push_back(std::move(system));
}

void read_inline_data(Reader& r, const json::value& data, const Path& part_path, Message& turn) {
    Path data_path = part_path.key("inlineData");
    const json::object* blob = r.as_object(data, data_path);
    if (!blob) return;
    ContentPart image;
    image.kind = ContentPart::Kind::image_base64;
    if (auto mime = r.string(*blob, "mimeType", data_path, true)) image.media_type.assign(*mime);
    if (auto base64 = r.string(*blob, "data", data_path, true)) image.data.assign(*base64);
    turn.content.push_back(std::move(image));
}

void read_file_data(Reader& r, const json::value& data, const Path& part_path, Message& turn) {
    Path data_path = part_path.key("fileData");
    const json::object* file = r.as_object(data, data_path);
    if (!file) return;
    ContentPart image;
    image.kind = ContentPart::Kind::image_url;
    if (auto mime = r.string(*file, "mimeType", data_path)) image.media_type.assign(*mime);
    if (auto uri = r.string(*file, "fileUri", data_path, true)) image.url.assign(*uri);
    turn.content.push_back(std::move(image));
}

void read_call_part(Reader& r, const json::object& part, const json::value& call,
                    const Path& part_path, Message& turn) {
    Path call_path = part_path.key("functionCall");
    if (turn.role != Role::assistant) {
        r.fail(call_path, "only allowed in a model turn");
        return;
    }
    if (const json::object* fields = r.as_object(call, call_path)) {
        turn.tool_calls.push_back(read_function_call(r, *fields, call_path, part, part_path,
                                                     /*name_required=*/true));
    }
}

// A functionResponse becomes a tool message; a response of just {"result": text} is the text.
void read_response_part(Reader& r, const json::value& response, const Path& part_path,
                        std::vector<Message>& results) {
    Path response_path = part_path.key("functionResponse");
    const json::object* fields = r.as_object(response, response_path);
    if (!fields) return;
    Message result;
    result.role = Role::tool;
    if (auto id = r.string(*fields, "id", response_path)) result.tool_call_id.assign(*id);
    if (auto name = r.string(*fields, "name", response_path, true)) result.name.assign(*name);
    if (const json::object* body = r.object(*fields, "response", response_path)) {
        const json::value* text = body->if_contains("result");
        if (body->size() == 1 && text && text->is_string()) {
            result.content.push_back(ContentPart::make_text(std::string(text->get_string())));
        } else {
            result.content.push_back(ContentPart::make_text(to_json_text(*body)));
        }
    }
    results.push_back(std::move(result));
}

// One Part of a turn; functionResponse parts go to `results`, thought text is left out.
void read_part(Reader& r, const json::object& part, const Path& path, Message& turn,
               std::vector<Message>& results) {
    if (auto text = r.string(part, "text", path)) {
        if (!r.boolean(part, "thought", path).value_or(false)) {
            turn.content.push_back(ContentPart::make_text(std::string(*text)));
        }
    } else if (const json::value* inline_data = proto_field(part, "inlineData", "inline_data")) {
        read_inline_data(r, *inline_data, path, turn);
    } else if (const json::value* file_data = proto_field(part, "fileData", "file_data")) {
        read_file_data(r, *file_data, path, turn);
    } else if (const json::value* call = proto_field(part, "functionCall", "function_call")) {
        read_call_part(r, part, *call, path, turn);
    } else if (const json::value* response =
                   proto_field(part, "functionResponse", "function_response")) {
        read_response_part(r, *response, path, results);
    } else {
        r.fail(path, "expected one of text, inlineData, fileData, functionCall, functionResponse");
    }
}

// One Content of `contents`: a user or a model turn.
void read_turn(Reader& r, const json::object& content, const Path& path, ChatRequest& req) {
    Message turn;
    auto role = r.string(content, "role", path);
    if (!role || *role == "user") {
        turn.role = Role::user;
    } else if (*role == "model") {
        turn.role = Role::assistant;
    } else {
        r.fail_key(path, "role", "expected one of user, model");
        return;
    }
    std::vector<Message> results;
    Path parts_path = path.key("parts");
    if (const json::array* parts = r.array(content, "parts", path, true)) {
        for_each_object(r, *parts, parts_path,
                        [&](const json::object& part, const Path& part_path) {
                            read_part(r, part, part_path, turn, results);
                        });
    }
    append_turn(req.messages, std::move(turn), std::move(results));
}

void read_contents(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    Path contents_path = top.key("contents");
    const json::array* contents = r.array(body, "contents", top, true);
    if (!contents) return;
    req.messages.reserve(req.messages.size() + contents->size());  // about one per turn
    for_each_object(
        r, *contents, contents_path,
        [&](const json::object& content, const Path& path) { read_turn(r, content, path, req); });
}

ToolDefinition read_function_declaration(Reader& r, const json::object& decl, const Path& path) {
    ToolDefinition def;
    if (auto name = r.string(decl, "name", path, true)) def.name.assign(*name);
    if (auto description = r.string(decl, "description", path))
        def.description.assign(*description);
    // parametersJsonSchema (JSON Schema) or parameters (OpenAPI subset).
    const json::value* schema = proto_field(decl, "parametersJsonSchema", "parameters_json_schema");
    Path schema_path = path.key(schema ? "parametersJsonSchema" : "parameters");
    if (!schema) schema = Reader::find(decl, "parameters");
    if (const json::object* params = schema ? r.as_object(*schema, schema_path) : nullptr)
        def.parameters = to_json_text(*params);
    return def;
}

// Only functionDeclarations translate; googleSearch, codeExecution... are left out.
void read_tools(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    Path tools_path = top.key("tools");
    const json::array* tools = r.array(body, "tools", top);
    if (!tools) return;
    for_each_object(r, *tools, tools_path, [&](const json::object& tool, const Path& tool_path) {
        const json::value* decls =
            proto_field(tool, "functionDeclarations", "function_declarations");
        if (!decls) return;
        Path decls_path = tool_path.key("functionDeclarations");
        if (!decls->is_array()) {
            r.fail(decls_path, "expected an array");
            return;
        }
        for_each_object(r, decls->get_array(), decls_path,
                        [&](const json::object& decl, const Path& decl_path) {
                            req.tools.push_back(read_function_declaration(r, decl, decl_path));
                        });
    });
}

// The sampling fields of generationConfig; read_gemini_options reads the rest.
void read_generation_config(Reader& r, const json::object& body, const Path& top,
                            ChatRequest& req) {
    const json::value* value = proto_field(body, "generationConfig", "generation_config");
    if (!value) return;
    Path config_path = top.key("generationConfig");
    const json::object* config = r.as_object(*value, config_path);
    if (!config) return;
    req.max_tokens = r.integer_at_least(*config, "maxOutputTokens", config_path, 0);
    req.temperature = r.number(*config, "temperature", config_path, false, kTemperatureRange);
    req.top_p = r.number(*config, "topP", config_path, false, kProbabilityRange);
    Path stop_path = config_path.key("stopSequences");
    if (const json::array* stop = r.array(*config, "stopSequences", config_path))
        read_strings(r, *stop, stop_path, req.stop);
}

json::object function_response(const Message& m, std::string_view name) {
    std::string text;
    for (const auto& c : m.content) text += c.text;
    auto obj = parse_json_object(text);
    json::object fr{{"name", name}};
    if (!m.tool_call_id.empty()) fr["id"] = m.tool_call_id;
    fr["response"] = obj ? std::move(*obj) : json::object{{"result", text}};
    return json::object{{"functionResponse", std::move(fr)}};
}

// Gemini wants a MIME type with every fileData; a bare image URL gets one from its extension.
std::string_view image_mime_from_url(std::string_view url) {
    url = url.substr(0, url.find_first_of("?#"));
    const std::size_t dot = url.rfind('.');
    std::string ext;
    if (dot != std::string_view::npos && url.find('/', dot) == std::string_view::npos) {
        for (char ch : url.substr(dot + 1))
            ext += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    if (ext == "png") return "image/png";
    if (ext == "webp") return "image/webp";
    if (ext == "gif") return "image/gif";
    if (ext == "heic") return "image/heic";
    if (ext == "heif") return "image/heif";
    return "image/jpeg";
}

// An empty text part beside a function call is what OpenAI clients send as `content: ""`;
// it carries nothing, so it is left out there.
json::array parts_json(const std::vector<ContentPart>& parts, bool drop_empty_text = false) {
    json::array a;
    for (const ContentPart& c : parts) {
        switch (c.kind) {
            case ContentPart::Kind::text:
                if (drop_empty_text && c.text.empty()) break;
                a.push_back(json::object{{"text", c.text}});
                break;
            case ContentPart::Kind::image_base64:
                a.push_back(json::object{
                    {"inlineData", json::object{{"mimeType", c.media_type}, {"data", c.data}}}});
                break;
            case ContentPart::Kind::image_url:
                a.push_back(json::object{
                    {"fileData", json::object{{"mimeType", c.media_type.empty()
                                                               ? image_mime_from_url(c.url)
                                                               : std::string_view(c.media_type)},
                                              {"fileUri", c.url}}}});
                break;
        }
    }
    return a;
}

json::object user_turn(json::array parts) {
    return json::object{{"role", "user"}, {"parts", std::move(parts)}};
}

// Gemini names the function a result answers, OpenAI only the call's id: the name is looked
// up among the calls of the turns before message `result_index`.
std::string answered_function(const ChatRequest& req, std::size_t result_index) {
    const Message& result = req.messages[result_index];
    std::string name = result.name;
    for (std::size_t k = result_index; name.empty() && k-- > 0;) {
        for (const ToolCall& tc : req.messages[k].tool_calls) {
            if (tc.id == result.tool_call_id) name = tc.name;
        }
    }
    return name;
}

// A model turn: its content, then a functionCall part per tool call.
Result<json::array> model_turn_parts(const Message& m, const Path& message_path) {
    json::array parts = parts_json(m.content, !m.tool_calls.empty());
    Path calls_path = message_path.key("tool_calls");
    for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
        Path call_path = calls_path.at(k);
        auto args = call_arguments(m.tool_calls[k], call_path);
        if (!args) return args.error();
        parts.push_back(function_call_part(m.tool_calls[k], std::move(*args)));
    }
    return parts;
}

// `contents` and the parts of systemInstruction. Function responses share one user turn
// with the user message that follows them.
Result<void> emit_contents(const ChatRequest& req, json::array& contents,
                           json::array& system_parts) {
    json::array pending_results;
    Path root;
    Path messages_path = root.key("messages");
    for (std::size_t i = 0; i < req.messages.size(); ++i) {
        const Message& m = req.messages[i];
        if (m.role != Role::tool && m.role != Role::user && !pending_results.empty()) {
            contents.push_back(user_turn(std::move(pending_results)));
            pending_results = json::array();
        }
        Path message_path = messages_path.at(i);
        switch (m.role) {
            case Role::system:
                for (auto& p : parts_json(m.content)) system_parts.push_back(std::move(p));
                break;
            case Role::tool: {
                std::string name = answered_function(req, i);
                if (name.empty()) {
                    Path id_path = message_path.key("tool_call_id");
                    return Error(
                        Errc::bad_request,
                        id_path.str() +
                            ": no earlier tool call with this id (Gemini needs the function name)");
                }
                pending_results.push_back(function_response(m, name));
                break;
            }
            case Role::user: {
                json::array parts = std::move(pending_results);
                pending_results = json::array();
                for (auto& p : parts_json(m.content)) parts.push_back(std::move(p));
                contents.push_back(user_turn(std::move(parts)));
                break;
            }
            case Role::assistant: {
                auto parts = model_turn_parts(m, message_path);
                if (!parts) return parts.error();
                contents.push_back(json::object{{"role", "model"}, {"parts", std::move(*parts)}});
                break;
            }
        }
    }
    if (!pending_results.empty()) contents.push_back(user_turn(std::move(pending_results)));
    return {};
}

Result<json::array> function_declarations(const std::vector<ToolDefinition>& tools) {
    json::array decls;
    for (const ToolDefinition& t : tools) {
        json::object decl{{"name", t.name}};
        if (!t.description.empty()) decl["description"] = t.description;
        if (!t.parameters.empty()) {
            auto params = tool_parameters(t);
            if (!params) return params.error();
            // JSON Schema as OpenAI and Anthropic take it: the OpenAPI-subset `parameters`
            // rejects additionalProperties, $ref and friends that OpenAI schemas carry.
            decl["parametersJsonSchema"] = std::move(*params);
        }
        decls.push_back(std::move(decl));
    }
    return decls;
}

// generationConfig; the options that live outside it (toolConfig) go to `body`.
json::object generation_config(const ChatRequest& req, json::object& body) {
    json::object config;
    if (req.max_tokens) config["maxOutputTokens"] = *req.max_tokens;
    if (req.temperature) config["temperature"] = *req.temperature;
    if (req.top_p) config["topP"] = *req.top_p;
    if (!req.stop.empty()) {
        json::array stop;
        for (const auto& s : req.stop) stop.emplace_back(s);
        config["stopSequences"] = std::move(stop);
    }
    write_gemini_options(req, body, config);
    return config;
}

}  // namespace

std::string gemini_path(std::string_view model, bool stream) {
    std::string p = "/v1beta/models/";
    p.append(model);
    p.append(stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    return p;
}

Result<ChatRequest> parse_gemini_request(std::string_view body, std::string_view model, bool stream,
                                         json::monotonic_resource* scratch) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size(), scratch));
    if (!root) return root.error();
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    req.model.assign(model);
    req.stream = stream;
    req.include_usage = true;
    if (const json::value* instruction =
            proto_field(*root, "systemInstruction", "system_instruction")) {
        Path instruction_path = top.key("systemInstruction");
        read_system_instruction(r, *instruction, instruction_path, req);
    }
    read_contents(r, *root, top, req);
    read_tools(r, *root, top, req);
    read_generation_config(r, *root, top, req);
    read_gemini_options(r, *root, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_gemini_request(const ChatRequest& req) {
    json::array contents;
    json::array system_parts;
    if (auto emitted = emit_contents(req, contents, system_parts); !emitted) return emitted.error();
    // Tools, then the system instruction, then the turns, before anything that varies per
    // request: requests sharing a prefix share the body's first bytes (Gemini's implicit cache
    // and an engine's prefix cache both key on the prompt's start). cache_control has no
    // inline equivalent here (Gemini caches implicitly, or through cachedContents): dropped.
    json::object body;
    if (!req.tools.empty()) {
        auto decls = function_declarations(req.tools);
        if (!decls) return decls.error();
        body["tools"] = json::array{json::object{{"functionDeclarations", std::move(*decls)}}};
    }
    if (!system_parts.empty())
        body["systemInstruction"] = json::object{{"parts", std::move(system_parts)}};
    body["contents"] = std::move(contents);
    json::object config = generation_config(req, body);
    if (!config.empty()) body["generationConfig"] = std::move(config);
    return json::serialize(body);
}

}  // namespace tokenradar::dialect
