#include <tokenradar/dialect/gemini.hpp>

// The rest of this component and its private helpers.
#include "generation_options.hpp"
#include "json_util.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

#include <cctype>

namespace tokenradar::dialect {

namespace {

FinishReason parse_finish(std::string_view s) {
    if (s == "STOP") return FinishReason::stop;
    if (s == "MAX_TOKENS") return FinishReason::length;
    if (s == "SAFETY" || s == "RECITATION" || s == "BLOCKLIST" || s == "PROHIBITED_CONTENT" ||
        s == "SPII" || s == "IMAGE_SAFETY") {
        return FinishReason::content_filter;
    }
    if (s == "MALFORMED_FUNCTION_CALL") return FinishReason::error;
    return FinishReason::other;
}

std::string_view emit_finish(FinishReason r) {
    switch (r) {
        case FinishReason::stop:
        case FinishReason::tool_calls:
            return "STOP";
        case FinishReason::length:
            return "MAX_TOKENS";
        case FinishReason::content_filter:
            return "SAFETY";
        case FinishReason::error:
            return "MALFORMED_FUNCTION_CALL";
        case FinishReason::other:
            return "OTHER";
    }
    return "OTHER";
}

// Gemini's candidatesTokenCount excludes thoughts; our output_tokens includes them.
Usage read_usage(Reader& r, const json::object& u, const Path& p) {
    Usage out;
    out.prompt_tokens = r.integer(u, "promptTokenCount", p);
    out.cached_prompt_tokens = r.integer(u, "cachedContentTokenCount", p);
    auto candidates = r.integer(u, "candidatesTokenCount", p);
    auto thoughts = r.integer(u, "thoughtsTokenCount", p);
    if (candidates || thoughts) out.output_tokens = candidates.value_or(0) + thoughts.value_or(0);
    out.reasoning_tokens = thoughts;
    return out;
}

json::object usage_json(const Usage& u) {
    json::object o;
    std::int64_t prompt = u.prompt_tokens.value_or(0);
    std::int64_t output = u.output_tokens.value_or(0);
    std::int64_t thoughts = u.reasoning_tokens.value_or(0);
    o["promptTokenCount"] = prompt;
    if (u.output_tokens) o["candidatesTokenCount"] = output - thoughts < 0 ? 0 : output - thoughts;
    o["totalTokenCount"] = prompt + output;
    if (u.cached_prompt_tokens) o["cachedContentTokenCount"] = *u.cached_prompt_tokens;
    if (u.reasoning_tokens) o["thoughtsTokenCount"] = thoughts;
    return o;
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

// The thoughtSignature sits on the part, beside functionCall.
std::string read_signature(Reader& r, const json::object& part, const Path& jp) {
    auto sig = r.string(part, "thoughtSignature", jp);
    if (!sig) sig = r.string(part, "thought_signature", jp);
    return sig ? std::string(*sig) : std::string();
}

json::object function_call_part(json::object call, const std::string& signature) {
    json::object part{{"functionCall", std::move(call)}};
    if (!signature.empty()) part["thoughtSignature"] = signature;
    return part;
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

}  // namespace

std::string gemini_path(std::string_view model, bool stream) {
    std::string p = "/v1beta/models/";
    p.append(model);
    p.append(stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
    return p;
}

Result<ChatRequest> parse_gemini_request(std::string_view body, std::string_view model,
                                         bool stream) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size()));
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    req.model.assign(model);
    req.stream = stream;
    req.include_usage = true;
    if (const json::value* si = proto_field(o, "systemInstruction", "system_instruction")) {
        Path sp = top.key("systemInstruction");
        if (const json::object* so = r.as_object(*si, sp)) {
            Path pp = sp.key("parts");
            Message m;
            m.role = Role::system;
            if (const json::array* parts = r.array(*so, "parts", sp, true)) {
                for (std::size_t j = 0; j < parts->size() && !r.failed(); ++j) {
                    Path jp = pp.at(j);
                    const json::object* part = r.as_object((*parts)[j], jp);
                    if (!part) break;
                    if (auto t = r.string(*part, "text", jp, true))
                        m.content.push_back(ContentPart::make_text(std::string(*t)));
                }
            }
            req.messages.push_back(std::move(m));
        }
    }
    Path cp = top.key("contents");
    const json::array* contents = r.array(o, "contents", top, true);
    for (std::size_t i = 0; contents && i < contents->size() && !r.failed(); ++i) {
        Path ip = cp.at(i);
        const json::object* c = r.as_object((*contents)[i], ip);
        if (!c) break;
        Message msg;
        auto role = r.string(*c, "role", ip);
        if (!role || *role == "user")
            msg.role = Role::user;
        else if (*role == "model")
            msg.role = Role::assistant;
        else {
            r.fail_key(ip, "role", "expected one of user, model");
            break;
        }
        std::vector<Message> results;
        Path pp = ip.key("parts");
        const json::array* parts = r.array(*c, "parts", ip, true);
        for (std::size_t j = 0; parts && j < parts->size() && !r.failed(); ++j) {
            Path jp = pp.at(j);
            const json::object* part = r.as_object((*parts)[j], jp);
            if (!part) break;
            if (auto text = r.string(*part, "text", jp)) {
                if (!r.boolean(*part, "thought", jp).value_or(false)) {
                    msg.content.push_back(ContentPart::make_text(std::string(*text)));
                }
            } else if (const json::value* inl = proto_field(*part, "inlineData", "inline_data")) {
                Path dp = jp.key("inlineData");
                if (const json::object* d = r.as_object(*inl, dp)) {
                    ContentPart p;
                    p.kind = ContentPart::Kind::image_base64;
                    if (auto mt = r.string(*d, "mimeType", dp, true)) p.media_type.assign(*mt);
                    if (auto data = r.string(*d, "data", dp, true)) p.data.assign(*data);
                    msg.content.push_back(std::move(p));
                }
            } else if (const json::value* fd = proto_field(*part, "fileData", "file_data")) {
                Path dp = jp.key("fileData");
                if (const json::object* d = r.as_object(*fd, dp)) {
                    ContentPart p;
                    p.kind = ContentPart::Kind::image_url;
                    if (auto mt = r.string(*d, "mimeType", dp)) p.media_type.assign(*mt);
                    if (auto uri = r.string(*d, "fileUri", dp, true)) p.url.assign(*uri);
                    msg.content.push_back(std::move(p));
                }
            } else if (const json::value* fc =
                           proto_field(*part, "functionCall", "function_call")) {
                Path fp = jp.key("functionCall");
                if (msg.role != Role::assistant) {
                    r.fail(fp, "only allowed in a model turn");
                    break;
                }
                if (const json::object* f = r.as_object(*fc, fp)) {
                    ToolCall tc;
                    if (auto id = r.string(*f, "id", fp)) tc.id.assign(*id);
                    if (auto name = r.string(*f, "name", fp, true)) tc.name.assign(*name);
                    const json::object* args = r.object(*f, "args", fp);
                    tc.arguments = args ? to_json_text(*args) : "{}";
                    tc.signature = read_signature(r, *part, jp);
                    msg.tool_calls.push_back(std::move(tc));
                }
            } else if (const json::value* fr =
                           proto_field(*part, "functionResponse", "function_response")) {
                Path fp = jp.key("functionResponse");
                if (const json::object* f = r.as_object(*fr, fp)) {
                    Message tm;
                    tm.role = Role::tool;
                    if (auto id = r.string(*f, "id", fp)) tm.tool_call_id.assign(*id);
                    if (auto name = r.string(*f, "name", fp, true)) tm.name.assign(*name);
                    if (const json::object* resp = r.object(*f, "response", fp)) {
                        const json::value* result = resp->if_contains("result");
                        if (resp->size() == 1 && result && result->is_string()) {
                            tm.content.push_back(
                                ContentPart::make_text(std::string(result->get_string())));
                        } else {
                            tm.content.push_back(ContentPart::make_text(to_json_text(*resp)));
                        }
                    }
                    results.push_back(std::move(tm));
                }
            } else {
                r.fail(
                    jp,
                    "expected one of text, inlineData, fileData, functionCall, functionResponse");
            }
        }
        for (auto& tm : results) req.messages.push_back(std::move(tm));
        if (results.empty() || !msg.content.empty() || !msg.tool_calls.empty()) {
            req.messages.push_back(std::move(msg));
        }
    }
    Path tp = top.key("tools");
    if (const json::array* tools = r.array(o, "tools", top)) {
        for (std::size_t i = 0; i < tools->size() && !r.failed(); ++i) {
            Path ip = tp.at(i);
            const json::object* t = r.as_object((*tools)[i], ip);
            if (!t) break;
            const json::value* decls =
                proto_field(*t, "functionDeclarations", "function_declarations");
            if (!decls) continue;  // googleSearch, codeExecution...: nothing to translate
            Path dp = ip.key("functionDeclarations");
            if (!decls->is_array()) {
                r.fail(dp, "expected an array");
                break;
            }
            for (std::size_t k = 0; k < decls->get_array().size() && !r.failed(); ++k) {
                Path kp = dp.at(k);
                const json::object* d = r.as_object(decls->get_array()[k], kp);
                if (!d) break;
                ToolDefinition def;
                if (auto name = r.string(*d, "name", kp, true)) def.name.assign(*name);
                if (auto desc = r.string(*d, "description", kp)) def.description.assign(*desc);
                // parametersJsonSchema (JSON Schema) or parameters (OpenAPI subset).
                const json::value* pv =
                    proto_field(*d, "parametersJsonSchema", "parameters_json_schema");
                Path pp = kp.key(pv ? "parametersJsonSchema" : "parameters");
                if (!pv) pv = Reader::find(*d, "parameters");
                if (const json::object* params = pv ? r.as_object(*pv, pp) : nullptr)
                    def.parameters = to_json_text(*params);
                req.tools.push_back(std::move(def));
            }
        }
    }
    if (const json::value* gcv = proto_field(o, "generationConfig", "generation_config")) {
        Path gp = top.key("generationConfig");
        if (const json::object* gc = r.as_object(*gcv, gp)) {
            req.max_tokens = r.integer_at_least(*gc, "maxOutputTokens", gp, 0);
            req.temperature = r.number(*gc, "temperature", gp, false, kTemperatureRange);
            req.top_p = r.number(*gc, "topP", gp, false, kProbabilityRange);
            Path sp = gp.key("stopSequences");
            if (const json::array* stop = r.array(*gc, "stopSequences", gp)) {
                for (std::size_t i = 0; i < stop->size(); ++i) {
                    if (!(*stop)[i].is_string()) {
                        r.fail(sp.at(i), "expected a string");
                        break;
                    }
                    req.stop.emplace_back((*stop)[i].get_string());
                }
            }
        }
    }
    read_gemini_options(r, o, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_gemini_request(const ChatRequest& req) {
    json::object o;
    json::array contents;
    json::array system_parts;
    json::array pending_results;
    Path root;
    Path mp = root.key("messages");
    for (std::size_t i = 0; i < req.messages.size(); ++i) {
        const Message& m = req.messages[i];
        // Function responses share one user turn with the user message that follows them.
        if (m.role != Role::tool && m.role != Role::user && !pending_results.empty()) {
            contents.push_back(
                json::object{{"role", "user"}, {"parts", std::move(pending_results)}});
            pending_results = json::array();
        }
        switch (m.role) {
            case Role::system:
                for (auto& p : parts_json(m.content)) system_parts.push_back(std::move(p));
                break;
            case Role::tool: {
                std::string name = m.name;
                for (std::size_t k = i; name.empty() && k-- > 0;) {
                    for (const ToolCall& tc : req.messages[k].tool_calls) {
                        if (tc.id == m.tool_call_id) name = tc.name;
                    }
                }
                if (name.empty()) {
                    Path ip = mp.at(i);
                    Path np = ip.key("tool_call_id");
                    return Error(
                        Errc::bad_request,
                        np.str() +
                            ": no earlier tool call with this id (Gemini needs the function name)");
                }
                pending_results.push_back(function_response(m, name));
                break;
            }
            case Role::user: {
                json::array parts = std::move(pending_results);
                pending_results = json::array();
                for (auto& p : parts_json(m.content)) parts.push_back(std::move(p));
                contents.push_back(json::object{{"role", "user"}, {"parts", std::move(parts)}});
                break;
            }
            case Role::assistant: {
                json::array parts = parts_json(m.content, !m.tool_calls.empty());
                Path ip = mp.at(i);
                Path tp = ip.key("tool_calls");
                for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
                    const ToolCall& tc = m.tool_calls[k];
                    auto args = tc.arguments.empty() ? std::optional<json::object>(json::object())
                                                     : parse_json_object(tc.arguments);
                    if (!args) {
                        Path kp = tp.at(k);
                        Path ap = kp.key("arguments");
                        return Error(Errc::bad_request, ap.str() + ": expected a JSON object");
                    }
                    json::object fc{{"name", tc.name}, {"args", std::move(*args)}};
                    if (!tc.id.empty()) fc["id"] = tc.id;
                    parts.push_back(function_call_part(std::move(fc), tc.signature));
                }
                contents.push_back(json::object{{"role", "model"}, {"parts", std::move(parts)}});
                break;
            }
        }
    }
    if (!pending_results.empty()) {
        contents.push_back(json::object{{"role", "user"}, {"parts", std::move(pending_results)}});
    }
    if (!system_parts.empty())
        o["systemInstruction"] = json::object{{"parts", std::move(system_parts)}};
    o["contents"] = std::move(contents);
    if (!req.tools.empty()) {
        json::array decls;
        for (const ToolDefinition& t : req.tools) {
            json::object d{{"name", t.name}};
            if (!t.description.empty()) d["description"] = t.description;
            if (!t.parameters.empty()) {
                auto params = parse_json_object(t.parameters);
                if (!params)
                    return Error(Errc::bad_request,
                                 "tools: parameters of " + t.name + ": expected a JSON object");
                // JSON Schema as OpenAI and Anthropic take it: the OpenAPI-subset `parameters`
                // rejects additionalProperties, $ref and friends that OpenAI schemas carry.
                d["parametersJsonSchema"] = std::move(*params);
            }
            decls.push_back(std::move(d));
        }
        o["tools"] = json::array{json::object{{"functionDeclarations", std::move(decls)}}};
    }
    json::object gc;
    if (req.max_tokens) gc["maxOutputTokens"] = *req.max_tokens;
    if (req.temperature) gc["temperature"] = *req.temperature;
    if (req.top_p) gc["topP"] = *req.top_p;
    if (!req.stop.empty()) {
        json::array stop;
        for (const auto& s : req.stop) stop.emplace_back(s);
        gc["stopSequences"] = std::move(stop);
    }
    write_gemini_options(req, o, gc);
    if (!gc.empty()) o["generationConfig"] = std::move(gc);
    return json::serialize(o);
}

namespace {

// Reads candidates[0] of a GenerateContentResponse into text / reasoning / tool calls.
struct CandidateView {
    std::vector<std::pair<bool, std::string_view>> texts;  // (thought, text)
    std::vector<ToolCall> calls;
    std::optional<std::string_view> finish;
    bool prompt_blocked = false;  // promptFeedback.blockReason: no candidates at all
    bool has_candidates = false;  // a non-empty candidates array
};

void read_candidate(Reader& r, const json::object& o, const Path& top, CandidateView& out) {
    Path bp = top.key("promptFeedback");
    if (const json::object* fb = r.object(o, "promptFeedback", top)) {
        out.prompt_blocked = r.string(*fb, "blockReason", bp).has_value();
    }
    Path cp = top.key("candidates");
    const json::array* cands = r.array(o, "candidates", top);
    if (!cands || cands->empty()) return;
    out.has_candidates = true;
    Path c0 = cp.at(0);
    const json::object* c = r.as_object((*cands)[0], c0);
    if (!c) return;
    Path tp = c0.key("content");
    if (const json::object* content = r.object(*c, "content", c0)) {
        Path pp = tp.key("parts");
        if (const json::array* parts = r.array(*content, "parts", tp)) {
            for (std::size_t j = 0; j < parts->size() && !r.failed(); ++j) {
                Path jp = pp.at(j);
                const json::object* part = r.as_object((*parts)[j], jp);
                if (!part) return;
                if (auto text = r.string(*part, "text", jp)) {
                    out.texts.emplace_back(r.boolean(*part, "thought", jp).value_or(false), *text);
                } else if (const json::object* fc = r.object(*part, "functionCall", jp)) {
                    Path fp = jp.key("functionCall");
                    ToolCall tc;
                    if (auto id = r.string(*fc, "id", fp)) tc.id.assign(*id);
                    if (auto name = r.string(*fc, "name", fp)) tc.name.assign(*name);
                    const json::object* args = r.object(*fc, "args", fp);
                    tc.arguments = args ? to_json_text(*args) : "{}";
                    tc.signature = read_signature(r, *part, jp);
                    out.calls.push_back(std::move(tc));
                }
            }
        }
    }
    out.finish = r.string(*c, "finishReason", c0);
}

}  // namespace

Result<ChatResponse> parse_gemini_response(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::protocol_error);
    Path top;
    ChatResponse resp;
    if (auto id = r.string(o, "responseId", top)) resp.id.assign(*id);
    if (auto model = r.string(o, "modelVersion", top)) resp.model.assign(*model);
    CandidateView cv;
    read_candidate(r, o, top, cv);
    if (!r.failed() && !cv.has_candidates && !cv.prompt_blocked) {
        // A 200 in another shape (a proxy's page, another API's JSON) is not an empty answer.
        r.fail(top.key("candidates"),
               "expected a GenerateContentResponse: candidates, or promptFeedback.blockReason");
    }
    for (auto& [thought, text] : cv.texts) (thought ? resp.reasoning : resp.text).append(text);
    resp.tool_calls = std::move(cv.calls);
    if (!cv.finish && cv.prompt_blocked) resp.finish_reason = FinishReason::content_filter;
    if (cv.finish) {
        resp.finish_reason = parse_finish(*cv.finish);
        if (*resp.finish_reason == FinishReason::stop && !resp.tool_calls.empty()) {
            resp.finish_reason = FinishReason::tool_calls;
        }
    }
    Path up = top.key("usageMetadata");
    if (const json::object* u = r.object(o, "usageMetadata", top))
        resp.usage = read_usage(r, *u, up);
    if (r.failed()) return r.take_error();
    return resp;
}

std::string emit_gemini_response(const ChatResponse& resp) {
    json::array parts;
    if (!resp.reasoning.empty())
        parts.push_back(json::object{{"text", resp.reasoning}, {"thought", true}});
    if (!resp.text.empty()) parts.push_back(json::object{{"text", resp.text}});
    for (const ToolCall& tc : resp.tool_calls) {
        auto args = parse_json_object(tc.arguments);
        json::object fc{{"name", tc.name}, {"args", args ? std::move(*args) : json::object()}};
        if (!tc.id.empty()) fc["id"] = tc.id;
        parts.push_back(function_call_part(std::move(fc), tc.signature));
    }
    json::object cand{{"content", json::object{{"parts", std::move(parts)}, {"role", "model"}}}};
    if (resp.finish_reason) cand["finishReason"] = emit_finish(*resp.finish_reason);
    cand["index"] = 0;
    json::object o{{"candidates", json::array{std::move(cand)}}};
    if (!resp.usage.empty()) o["usageMetadata"] = usage_json(resp.usage);
    o["modelVersion"] = resp.model;
    o["responseId"] = resp.id;
    return json::serialize(o);
}

GeminiStreamDecoder::GeminiStreamDecoder() : json_(std::make_unique<EventJson>()) {}
GeminiStreamDecoder::~GeminiStreamDecoder() = default;

Result<void> GeminiStreamDecoder::decode(std::string_view /*event*/, std::string_view data,
                                         std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& o = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    std::size_t first = out.size();
    if (const json::object* err = r.object(o, "error", top)) {
        Path ep = top.key("error");
        StreamDelta d = StreamDelta::make(K::error);
        if (auto m = r.string(*err, "message", ep)) d.text.assign(*m);
        if (auto s = r.string(*err, "status", ep)) d.error_type.assign(*s);
        d.error_code = errc_from_error_type(Api::gemini, d.error_type)
                           .value_or(errc_from_http_status(
                               static_cast<int>(r.integer(*err, "code", ep).value_or(500))));
        if (r.failed()) return r.take_error();
        out.push_back(std::move(d));
        return {};
    }
    if (!started_) {
        started_ = true;
        StreamDelta d = StreamDelta::make(K::role);
        if (auto id = r.string(o, "responseId", top)) d.id.assign(*id);
        if (auto model = r.string(o, "modelVersion", top)) d.name.assign(*model);
        out.push_back(std::move(d));
    }
    Path up = top.key("usageMetadata");
    if (const json::object* u = r.object(o, "usageMetadata", top)) {
        StreamDelta d = StreamDelta::make(K::usage);
        d.usage = read_usage(r, *u, up);
        out.push_back(std::move(d));
    }
    CandidateView cv;
    read_candidate(r, o, top, cv);
    for (auto& [thought, text] : cv.texts) {
        if (text.empty()) continue;
        StreamDelta d = StreamDelta::make(thought ? K::reasoning : K::text);
        d.text.assign(text);
        out.push_back(std::move(d));
    }
    for (ToolCall& tc : cv.calls) {
        StreamDelta d = StreamDelta::make(K::tool_call);
        d.index = tool_calls_++;
        d.id = std::move(tc.id);
        d.name = std::move(tc.name);
        d.arguments = std::move(tc.arguments);
        d.signature = std::move(tc.signature);
        out.push_back(std::move(d));
    }
    if (cv.finish) {
        StreamDelta d = StreamDelta::make(K::finish);
        d.finish_reason = parse_finish(*cv.finish);
        if (d.finish_reason == FinishReason::stop && tool_calls_ > 0)
            d.finish_reason = FinishReason::tool_calls;
        out.push_back(std::move(d));
        out.push_back(StreamDelta::make(K::done));
    } else if (cv.prompt_blocked) {
        // A blocked prompt is answered by one chunk without candidates: that is the end.
        StreamDelta d = StreamDelta::make(K::finish);
        d.finish_reason = FinishReason::content_filter;
        out.push_back(std::move(d));
        out.push_back(StreamDelta::make(K::done));
    }
    if (r.failed()) {
        out.resize(first);
        return r.take_error();
    }
    if (out.size() == first) out.push_back(StreamDelta::make(K::ignorable));
    return {};
}

namespace {

void write_chunk(const StreamMeta& meta, const Usage& usage, json::array parts,
                 std::optional<FinishReason> finish, std::string& out) {
    json::object cand{{"content", json::object{{"parts", std::move(parts)}, {"role", "model"}}}};
    if (finish) cand["finishReason"] = emit_finish(*finish);
    cand["index"] = 0;
    json::object o{{"candidates", json::array{std::move(cand)}}};
    if (!usage.empty()) o["usageMetadata"] = usage_json(usage);
    o["modelVersion"] = meta.model;
    if (!meta.id.empty()) o["responseId"] = meta.id;
    sse::SseWriter::data_line(out, json::serialize(o));  // JSON text: one line
}

}  // namespace

void GeminiStreamEncoder::encode(const StreamDelta& d, std::string& out) {
    using K = StreamDelta::Kind;
    if (terminated_) return;
    switch (d.kind) {
        case K::role:
            meta_.adopt(d);
            break;
        case K::ignorable:
            break;
        case K::usage:
            usage_.merge(d.usage);
            break;
        case K::text:
            write_chunk(meta_, usage_, json::array{json::object{{"text", d.text}}}, std::nullopt,
                        out);
            break;
        case K::reasoning:
            write_chunk(meta_, usage_,
                        json::array{json::object{{"text", d.text}, {"thought", true}}},
                        std::nullopt, out);
            break;
        case K::tool_call: {
            if (tools_.size() >= 1024 && !tools_.contains(d.index)) break;
            ToolCall& tc = tools_[d.index];
            if (!d.id.empty()) tc.id = d.id;
            if (!d.name.empty()) tc.name = d.name;
            if (!d.signature.empty()) tc.signature = d.signature;
            tc.arguments += d.arguments;
            break;
        }
        case K::finish:
            finish_ = d.finish_reason;
            break;
        case K::error: {
            json::object err{
                {"code", error_http_status(Api::gemini, d.error_code)},
                {"message", d.text},
                {"status", d.error_type.empty() ? std::string(error_type(Api::gemini, d.error_code))
                                                : d.error_type}};
            sse::SseWriter::data(out, json::serialize(json::object{{"error", std::move(err)}}));
            terminated_ = true;
            break;
        }
        case K::done:
            finish(out);
            break;
    }
}

void GeminiStreamEncoder::finish(std::string& out) {
    if (terminated_) return;
    terminated_ = true;
    json::array parts;
    for (auto& [index, tc] : tools_) {
        auto args = parse_json_object(tc.arguments);
        json::object fc{{"name", tc.name}, {"args", args ? std::move(*args) : json::object()}};
        if (!tc.id.empty()) fc["id"] = tc.id;
        parts.push_back(function_call_part(std::move(fc), tc.signature));
    }
    if (parts.empty()) parts.push_back(json::object{{"text", ""}});
    write_chunk(meta_, usage_, std::move(parts), finish_.value_or(FinishReason::stop), out);
}

}  // namespace tokenradar::dialect
