#include "generation_options.hpp"

namespace tokenradar::dialect {

namespace {

using Mode = ToolChoice::Mode;

std::optional<json::object> schema_object(const std::string& text) {
    if (text.empty()) return json::object{{"type", "object"}};
    return parse_json_object(text);
}

}  // namespace

// OpenAI: tool_choice "auto" | "none" | "required" | {"type":"function","function":{"name"}};
// parallel_tool_calls; response_format {"type":"text"|"json_object"|"json_schema",
// "json_schema":{"name","schema","strict"}}; seed; presence_penalty; frequency_penalty.
void read_openai_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req) {
    if (const json::value* tc = Reader::find(o, "tool_choice")) {
        Path tp = top.key("tool_choice");
        if (tc->is_string()) {
            std::string_view s = tc->get_string();
            if (s == "auto")
                req.tool_choice = ToolChoice{Mode::automatic, {}};
            else if (s == "none")
                req.tool_choice = ToolChoice{Mode::none, {}};
            else if (s == "required")
                req.tool_choice = ToolChoice{Mode::required, {}};
            else
                r.fail(tp, "expected one of auto, none, required or an object");
        } else if (tc->is_object()) {
            const json::object& c = tc->get_object();
            auto type = r.string(c, "type", tp, true);
            if (type == "function") {
                Path fp = tp.key("function");
                if (const json::object* fn = r.object(c, "function", tp, true)) {
                    if (auto name = r.string(*fn, "name", fp, true))
                        req.tool_choice = ToolChoice{Mode::function, std::string(*name)};
                }
            }
            // allowed_tools, custom: not modelled (translate.cpp rejects them by name).
        } else {
            r.fail(tp, "expected a string or an object");
        }
    }
    req.parallel_tool_calls = r.boolean(o, "parallel_tool_calls", top);
    Path fp = top.key("response_format");
    if (const json::object* rf = r.object(o, "response_format", top)) {
        auto type = r.string(*rf, "type", fp, true);
        if (type == "text") {
            req.response_format = ResponseFormat{};
        } else if (type == "json_object") {
            req.response_format = ResponseFormat{ResponseFormat::Kind::json_object, {}, {}, false};
        } else if (type == "json_schema") {
            Path sp = fp.key("json_schema");
            if (const json::object* js = r.object(*rf, "json_schema", fp, true)) {
                ResponseFormat f{ResponseFormat::Kind::json_schema, {}, {}, false};
                if (auto name = r.string(*js, "name", sp)) f.name.assign(*name);
                if (const json::object* schema = r.object(*js, "schema", sp))
                    f.schema = to_json_text(*schema);
                f.strict = r.boolean(*js, "strict", sp).value_or(false);
                req.response_format = std::move(f);
            }
        }
    }
    req.seed = r.integer(o, "seed", top);
    req.presence_penalty = r.number(o, "presence_penalty", top, false, kPenaltyRange);
    req.frequency_penalty = r.number(o, "frequency_penalty", top, false, kPenaltyRange);
}

void write_openai_options(const ChatRequest& req, json::object& o) {
    if (req.tool_choice) {
        switch (req.tool_choice->mode) {
            case Mode::automatic:
                o["tool_choice"] = "auto";
                break;
            case Mode::none:
                o["tool_choice"] = "none";
                break;
            case Mode::required:
                o["tool_choice"] = "required";
                break;
            case Mode::function:
                o["tool_choice"] =
                    json::object{{"type", "function"},
                                 {"function", json::object{{"name", req.tool_choice->name}}}};
                break;
        }
    }
    if (req.parallel_tool_calls) o["parallel_tool_calls"] = *req.parallel_tool_calls;
    if (req.response_format) {
        const ResponseFormat& f = *req.response_format;
        switch (f.kind) {
            case ResponseFormat::Kind::text:
                o["response_format"] = json::object{{"type", "text"}};
                break;
            case ResponseFormat::Kind::json_object:
                o["response_format"] = json::object{{"type", "json_object"}};
                break;
            case ResponseFormat::Kind::json_schema: {
                // OpenAI requires a name; other dialects have none.
                json::object js{{"name", f.name.empty() ? "response" : f.name}};
                if (auto schema = schema_object(f.schema)) js["schema"] = std::move(*schema);
                if (f.strict) js["strict"] = true;
                o["response_format"] =
                    json::object{{"type", "json_schema"}, {"json_schema", std::move(js)}};
                break;
            }
        }
    }
    if (req.seed) o["seed"] = *req.seed;
    if (req.presence_penalty) o["presence_penalty"] = *req.presence_penalty;
    if (req.frequency_penalty) o["frequency_penalty"] = *req.frequency_penalty;
}

// Anthropic: tool_choice {"type":"auto"|"any"|"tool"|"none","name","disable_parallel_tool_use"};
// output_config {"format":{"type":"json_schema","schema"}}; thinking {"type":"enabled",
// "budget_tokens"} | {"type":"disabled"}.
void read_anthropic_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req) {
    Path tp = top.key("tool_choice");
    if (const json::object* tc = r.object(o, "tool_choice", top)) {
        auto type = r.string(*tc, "type", tp, true);
        if (type == "auto")
            req.tool_choice = ToolChoice{Mode::automatic, {}};
        else if (type == "none")
            req.tool_choice = ToolChoice{Mode::none, {}};
        else if (type == "any")
            req.tool_choice = ToolChoice{Mode::required, {}};
        else if (type == "tool") {
            if (auto name = r.string(*tc, "name", tp, true))
                req.tool_choice = ToolChoice{Mode::function, std::string(*name)};
        } else if (type) {
            r.fail_key(tp, "type", "expected one of auto, any, tool, none");
        }
        if (r.boolean(*tc, "disable_parallel_tool_use", tp).value_or(false))
            req.parallel_tool_calls = false;
    }
    Path op = top.key("output_config");
    if (const json::object* oc = r.object(o, "output_config", top)) {
        Path fp = op.key("format");
        if (const json::object* f = r.object(*oc, "format", op)) {
            if (r.string(*f, "type", fp, true) == "json_schema") {
                ResponseFormat rf{ResponseFormat::Kind::json_schema, {}, {}, false};
                if (const json::object* schema = r.object(*f, "schema", fp, true))
                    rf.schema = to_json_text(*schema);
                req.response_format = std::move(rf);
            }
        }
    }
    Path kp = top.key("thinking");
    if (const json::object* th = r.object(o, "thinking", top)) {
        auto type = r.string(*th, "type", kp, true);
        if (type == "enabled")
            req.thinking_budget = r.integer(*th, "budget_tokens", kp, true);
        else if (type == "disabled")
            req.thinking_budget = 0;
    }
}

Result<void> write_anthropic_options(const ChatRequest& req, json::object& o) {
    // Anthropic rejects tool_choice without tools.
    if (!req.tools.empty() && (req.tool_choice || req.parallel_tool_calls == false)) {
        const ToolChoice choice = req.tool_choice.value_or(ToolChoice{});
        json::object tc;
        switch (choice.mode) {
            case Mode::automatic:
                tc["type"] = "auto";
                break;
            case Mode::none:
                tc["type"] = "none";
                break;
            case Mode::required:
                tc["type"] = "any";
                break;
            case Mode::function:
                tc["type"] = "tool";
                tc["name"] = choice.name;
                break;
        }
        if (req.parallel_tool_calls == false && choice.mode != Mode::none)
            tc["disable_parallel_tool_use"] = true;
        o["tool_choice"] = std::move(tc);
    }
    if (req.response_format) {
        const ResponseFormat& f = *req.response_format;
        if (f.kind == ResponseFormat::Kind::json_object) {
            return Error(Errc::unsupported,
                         "response_format: json_object has no Anthropic equivalent (JSON output "
                         "needs a schema there: use json_schema)");
        }
        if (f.kind == ResponseFormat::Kind::json_schema) {
            auto schema = schema_object(f.schema);
            if (!schema)
                return Error(Errc::bad_request,
                             "response_format.json_schema.schema: expected a "
                             "JSON object");
            o["output_config"] = json::object{
                {"format", json::object{{"type", "json_schema"}, {"schema", std::move(*schema)}}}};
        }
    }
    if (req.thinking_budget) {
        if (*req.thinking_budget > 0)
            o["thinking"] =
                json::object{{"type", "enabled"}, {"budget_tokens", *req.thinking_budget}};
        else
            o["thinking"] = json::object{{"type", "disabled"}};
    }
    return {};
}

// Gemini: toolConfig.functionCallingConfig {"mode":"AUTO"|"NONE"|"ANY",
// "allowedFunctionNames"}; generationConfig responseMimeType + responseJsonSchema (or the
// older OpenAPI-subset responseSchema), seed, presencePenalty, frequencyPenalty,
// thinkingConfig.thinkingBudget.
void read_gemini_options(Reader& r, const json::object& o, const Path& top, ChatRequest& req) {
    if (const json::value* tcv = proto_field(o, "toolConfig", "tool_config")) {
        Path tp = top.key("toolConfig");
        const json::object* tc = r.as_object(*tcv, tp);
        const json::value* fcv =
            tc ? proto_field(*tc, "functionCallingConfig", "function_calling_config") : nullptr;
        Path fp = tp.key("functionCallingConfig");
        if (const json::object* fc = fcv ? r.as_object(*fcv, fp) : nullptr) {
            auto mode = r.string(*fc, "mode", fp);
            std::vector<std::string> names;
            if (const json::value* nv =
                    proto_field(*fc, "allowedFunctionNames", "allowed_function_names")) {
                Path np = fp.key("allowedFunctionNames");
                if (!nv->is_array()) {
                    r.fail(np, "expected an array");
                } else {
                    read_strings(r, nv->get_array(), np, names);
                }
            }
            if (mode == "AUTO")
                req.tool_choice = ToolChoice{Mode::automatic, {}};
            else if (mode == "NONE")
                req.tool_choice = ToolChoice{Mode::none, {}};
            else if (mode == "ANY" && names.empty())
                req.tool_choice = ToolChoice{Mode::required, {}};
            else if (mode == "ANY" && names.size() == 1)
                req.tool_choice = ToolChoice{Mode::function, names[0]};
            // VALIDATED, or ANY among several functions: not modelled.
        }
    }
    const json::value* gcv = proto_field(o, "generationConfig", "generation_config");
    Path gp = top.key("generationConfig");
    const json::object* gc = gcv ? r.as_object(*gcv, gp) : nullptr;
    if (gc == nullptr) return;
    auto mime = r.string(*gc, "responseMimeType", gp);
    if (!mime) mime = r.string(*gc, "response_mime_type", gp);
    if (mime == "application/json") {
        ResponseFormat f{ResponseFormat::Kind::json_object, {}, {}, false};
        const json::value* schema = proto_field(*gc, "responseJsonSchema", "response_json_schema");
        if (!schema) schema = proto_field(*gc, "responseSchema", "response_schema");
        if (schema) {
            Path sp = gp.key("responseJsonSchema");
            if (const json::object* so = r.as_object(*schema, sp)) {
                f.kind = ResponseFormat::Kind::json_schema;
                f.schema = to_json_text(*so);
            }
        }
        req.response_format = std::move(f);
    }
    req.seed = r.integer(*gc, "seed", gp);
    req.presence_penalty = r.number(*gc, "presencePenalty", gp, false, kPenaltyRange);
    req.frequency_penalty = r.number(*gc, "frequencyPenalty", gp, false, kPenaltyRange);
    if (const json::value* tv = proto_field(*gc, "thinkingConfig", "thinking_config")) {
        Path kp = gp.key("thinkingConfig");
        if (const json::object* th = r.as_object(*tv, kp)) {
            auto budget = r.integer(*th, "thinkingBudget", kp);
            if (budget && *budget >= 0) req.thinking_budget = budget;  // -1 (dynamic): not modelled
        }
    }
}

void write_gemini_options(const ChatRequest& req, json::object& o, json::object& gc) {
    if (req.tool_choice && !req.tools.empty()) {
        json::object fc;
        switch (req.tool_choice->mode) {
            case Mode::automatic:
                fc["mode"] = "AUTO";
                break;
            case Mode::none:
                fc["mode"] = "NONE";
                break;
            case Mode::required:
                fc["mode"] = "ANY";
                break;
            case Mode::function:
                fc["mode"] = "ANY";
                fc["allowedFunctionNames"] = json::array{json::string(req.tool_choice->name)};
                break;
        }
        o["toolConfig"] = json::object{{"functionCallingConfig", std::move(fc)}};
    }
    if (req.response_format && req.response_format->kind != ResponseFormat::Kind::text) {
        gc["responseMimeType"] = "application/json";
        if (req.response_format->kind == ResponseFormat::Kind::json_schema) {
            if (auto schema = parse_json_object(req.response_format->schema))
                gc["responseJsonSchema"] = std::move(*schema);
        }
    }
    if (req.seed) gc["seed"] = *req.seed;
    if (req.presence_penalty) gc["presencePenalty"] = *req.presence_penalty;
    if (req.frequency_penalty) gc["frequencyPenalty"] = *req.frequency_penalty;
    if (req.thinking_budget)
        gc["thinkingConfig"] = json::object{{"thinkingBudget", *req.thinking_budget}};
}

}  // namespace tokenradar::dialect
