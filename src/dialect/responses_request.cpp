// The Responses door's request: OpenAI Responses -> the neutral model (responses.hpp).
// Shapes from OpenAI's API reference (POST /v1/responses) and the openai-node SDK's types
// (resources/responses/responses.d.ts, 6.x).
#include <tokenradar/dialect/responses.hpp>

#include "json_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace tokenradar::dialect {

namespace {

using Mode = ToolChoice::Mode;

// The fields read into the neutral model; every other field is checked by `other_field`.
constexpr std::array<std::string_view, 13> kRead{"model",
                                                 "input",
                                                 "instructions",
                                                 "tools",
                                                 "tool_choice",
                                                 "max_output_tokens",
                                                 "temperature",
                                                 "top_p",
                                                 "stream",
                                                 "parallel_tool_calls",
                                                 "reasoning",
                                                 "text",
                                                 "previous_response_id"};

Error not_carried(std::string_view path, std::string_view why) {
    return Error(Errc::bad_request,
                 fmt::format("{}: {}; the gateway's Responses door cannot carry it to an upstream",
                             path, why));
}

// A field the neutral model does not hold: accepted when it cannot change the answer
// (metadata, user, store: nothing is stored...), else refused by name.
std::optional<Error> other_field(std::string_view key, const json::value& v) {
    if (key == "metadata") {
        if (v.is_null() || v.is_object()) return std::nullopt;
        return Error(Errc::bad_request, "metadata: expected an object");
    }
    if (key == "user" || key == "safety_identifier" || key == "prompt_cache_key" ||
        key == "service_tier" || key == "prompt_cache_retention") {
        if (v.is_null() || v.is_string()) return std::nullopt;
        return Error(Errc::bad_request, fmt::format("{}: expected a string", key));
    }
    if (key == "store") {
        // The gateway keeps no responses: `store: true` is accepted (SDKs default to it) and
        // nothing is stored, so no later previous_response_id can name this answer.
        if (v.is_null() || v.is_bool()) return std::nullopt;
        return Error(Errc::bad_request, "store: expected a boolean");
    }
    if (key == "stream_options" || key == "include") {
        if (v.is_null() || (v.is_array() && v.get_array().empty()) || v.is_object())
            return std::nullopt;
        return not_carried(key, "no extra output can be included");
    }
    if (key == "truncation") {
        if (v.is_null() || v == "disabled") return std::nullopt;
        return not_carried(key, "only \"disabled\"");
    }
    if (key == "background") {
        if (v.is_null() || v == false) return std::nullopt;
        return not_carried(key, "the gateway keeps no responses to poll");
    }
    if (key == "conversation") {
        if (v.is_null()) return std::nullopt;
        return not_carried(key, "the gateway keeps no conversation state: send the whole input");
    }
    if (v.is_null()) return std::nullopt;
    return not_carried(key, "not translated");
}

std::optional<Role> message_role(std::string_view s) {
    if (s == "user") return Role::user;
    if (s == "assistant") return Role::assistant;
    if (s == "system" || s == "developer") return Role::system;
    return std::nullopt;
}

// `content` (at `cp`): a string, or input_text / output_text parts.
void read_content(Reader& r, const json::value* content, const Path& cp, Message& msg) {
    if (content == nullptr) {
        r.fail(cp, "required");
        return;
    }
    if (content->is_string()) {
        msg.content.push_back(ContentPart::make_text(std::string(content->get_string())));
        return;
    }
    if (!content->is_array()) {
        r.fail(cp, "expected a string or an array of content parts");
        return;
    }
    for_each_object(r, content->get_array(), cp, [&](const json::object& part, const Path& pp) {
        auto type = r.string(part, "type", pp, true);
        if (!type) return;
        if (*type != "input_text" && *type != "output_text") {
            r.fail_key(
                pp, "type",
                fmt::format("{} is not translated (only input_text and output_text)", *type));
            return;
        }
        if (auto text = r.string(part, "text", pp, true))
            msg.content.push_back(ContentPart::make_text(std::string(*text)));
    });
}

// The assistant message a function_call item belongs to: the one just before it, or a new one.
Message& assistant_turn(std::vector<Message>& messages) {
    if (messages.empty() || messages.back().role != Role::assistant) {
        Message m;
        m.role = Role::assistant;
        messages.push_back(std::move(m));
    }
    return messages.back();
}

void read_item(Reader& r, const json::object& item, const Path& path, ChatRequest& req) {
    const json::value* type_value = Reader::find(item, "type");
    std::string_view type = "message";  // EasyInputMessage: {role, content} without a type
    if (type_value != nullptr) {
        if (!type_value->is_string()) {
            r.fail_key(path, "type", "expected a string");
            return;
        }
        type = type_value->get_string();
    }
    if (type == "message") {
        Message msg;
        if (auto role = r.string(item, "role", path, true)) {
            auto parsed = message_role(*role);
            if (!parsed) {
                r.fail_key(path, "role", "expected one of user, assistant, system, developer");
                return;
            }
            msg.role = *parsed;
        }
        Path cp = path.key("content");
        read_content(r, Reader::find(item, "content"), cp, msg);
        if (!r.failed()) req.messages.push_back(std::move(msg));
    } else if (type == "function_call") {
        ToolCall call;
        if (auto id = r.string(item, "call_id", path, true)) call.id.assign(*id);
        if (auto name = r.string(item, "name", path, true)) call.name.assign(*name);
        if (auto arguments = r.string(item, "arguments", path, true))
            call.arguments.assign(*arguments);
        if (!r.failed()) assistant_turn(req.messages).tool_calls.push_back(std::move(call));
    } else if (type == "function_call_output") {
        Message msg;
        msg.role = Role::tool;
        if (auto id = r.string(item, "call_id", path, true)) msg.tool_call_id.assign(*id);
        Path op = path.key("output");
        read_content(r, Reader::find(item, "output"), op, msg);
        if (!r.failed()) req.messages.push_back(std::move(msg));
    } else if (type == "item_reference") {
        r.fail_key(path, "type", "item_reference: the gateway keeps no items to refer to");
    } else {
        r.fail_key(path, "type",
                   fmt::format("{} is not translated (only message, function_call and "
                               "function_call_output)",
                               type));
    }
}

void read_input(Reader& r, const json::object& root, const Path& top, ChatRequest& req) {
    const json::value* input = Reader::find(root, "input");
    Path ip = top.key("input");
    if (input == nullptr) {
        r.fail(ip, "required");
        return;
    }
    if (input->is_string()) {
        Message msg;
        msg.content.push_back(ContentPart::make_text(std::string(input->get_string())));
        req.messages.push_back(std::move(msg));
        return;
    }
    if (!input->is_array()) {
        r.fail(ip, "expected a string or an array of items");
        return;
    }
    req.messages.reserve(req.messages.size() + input->get_array().size());  // at most one each
    for_each_object(r, input->get_array(), ip, [&](const json::object& item, const Path& path) {
        read_item(r, item, path, req);
    });
}

// Function tools are flat here ({type, name, description, parameters, strict}).
void read_tools(Reader& r, const json::object& root, const Path& top, ChatRequest& req) {
    Path tp = top.key("tools");
    const json::array* tools = r.array(root, "tools", top);
    if (!tools) return;
    for_each_object(r, *tools, tp, [&](const json::object& tool, const Path& path) {
        auto type = r.string(tool, "type", path, true);
        if (!type) return;
        if (*type != "function") {
            r.fail_key(path, "type",
                       fmt::format("{}: only function tools translate (built-in tools run on "
                                   "OpenAI's side only)",
                                   *type));
            return;
        }
        ToolDefinition def;
        if (auto name = r.string(tool, "name", path, true)) def.name.assign(*name);
        if (auto description = r.string(tool, "description", path))
            def.description.assign(*description);
        if (const json::object* params = r.object(tool, "parameters", path))
            def.parameters = to_json_text(*params);
        def.strict = r.boolean(tool, "strict", path).value_or(false);
        req.tools.push_back(std::move(def));
    });
}

void read_tool_choice(Reader& r, const json::object& root, const Path& top, ChatRequest& req) {
    const json::value* tc = Reader::find(root, "tool_choice");
    if (tc == nullptr) return;
    Path tp = top.key("tool_choice");
    if (tc->is_string()) {
        const std::string_view s = tc->get_string();
        if (s == "auto") {
            req.tool_choice = ToolChoice{Mode::automatic, {}};
        } else if (s == "none") {
            req.tool_choice = ToolChoice{Mode::none, {}};
        } else if (s == "required") {
            req.tool_choice = ToolChoice{Mode::required, {}};
        } else {
            r.fail(tp, "expected one of auto, none, required or {type: function, name}");
        }
        return;
    }
    const json::object* c = r.as_object(*tc, tp);
    if (c == nullptr) return;
    auto type = r.string(*c, "type", tp, true);
    if (type && *type != "function") {
        r.fail_key(tp, "type", fmt::format("{} is not translated (only function)", *type));
        return;
    }
    if (auto name = r.string(*c, "name", tp, true))
        req.tool_choice = ToolChoice{Mode::function, std::string(*name)};
}

// text.format: text | json_object | json_schema {name, schema, strict} (flat, unlike Chat's).
void read_text(Reader& r, const json::object& root, const Path& top, ChatRequest& req) {
    Path tp = top.key("text");
    const json::object* text = r.object(root, "text", top);
    if (text == nullptr) return;
    for (const auto& [key, value] : *text) {
        if (key == "format" || value.is_null() || (key == "verbosity" && value == "medium"))
            continue;
        r.fail_key(tp, key, "not translated");
        return;
    }
    Path fp = tp.key("format");
    const json::object* format = r.object(*text, "format", tp);
    if (format == nullptr) return;
    auto type = r.string(*format, "type", fp, true);
    if (!type) return;
    if (*type == "text") {
        req.response_format = ResponseFormat{};
    } else if (*type == "json_object") {
        req.response_format = ResponseFormat{ResponseFormat::Kind::json_object, {}, {}, false};
    } else if (*type == "json_schema") {
        ResponseFormat f{ResponseFormat::Kind::json_schema, {}, {}, false};
        if (auto name = r.string(*format, "name", fp, true)) f.name.assign(*name);
        if (const json::object* schema = r.object(*format, "schema", fp, true))
            f.schema = to_json_text(*schema);
        f.strict = r.boolean(*format, "strict", fp).value_or(false);
        req.response_format = std::move(f);
    } else {
        r.fail_key(fp, "type", "expected one of text, json_object, json_schema");
    }
}

// reasoning {effort, summary}: the effort goes on as Chat's reasoning_effort (each upstream
// then takes or refuses it, translate.hpp); a summary has no Chat equivalent.
std::optional<std::string> read_reasoning(Reader& r, const json::object& root, const Path& top) {
    Path rp = top.key("reasoning");
    const json::object* reasoning = r.object(root, "reasoning", top);
    if (reasoning == nullptr) return std::nullopt;
    for (const auto& [key, value] : *reasoning) {
        if (key == "effort" || value.is_null()) continue;
        r.fail_key(rp, key, "no reasoning summaries through Chat Completions upstreams");
        return std::nullopt;
    }
    auto effort = r.string(*reasoning, "effort", rp);
    if (!effort) return std::nullopt;
    return std::string(*effort);
}

}  // namespace

Result<ChatRequest> parse_responses_request(std::string_view body) {
    // Read, never kept: a local arena, freed at once (`root` goes first).
    json::monotonic_resource arena(2 * body.size() + 1024);
    auto root = parse_object(body, Errc::bad_request, &arena);
    if (!root) return root.error();
    for (const auto& [key, value] : *root) {
        if (std::find(kRead.begin(), kRead.end(), std::string_view(key)) != kRead.end()) continue;
        if (auto refused = other_field(key, value)) return std::move(*refused);
    }
    if (Reader::find(*root, "previous_response_id") != nullptr) {
        return Error(Errc::bad_request,
                     "previous_response_id: the gateway keeps no conversation state (nothing is "
                     "stored); send the whole conversation in `input`");
    }
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    if (auto model = r.string(*root, "model", top, true)) req.model.assign(*model);
    if (auto instructions = r.string(*root, "instructions", top)) {
        Message system;
        system.role = Role::system;
        system.content.push_back(ContentPart::make_text(std::string(*instructions)));
        req.messages.push_back(std::move(system));
    }
    read_input(r, *root, top, req);
    read_tools(r, *root, top, req);
    read_tool_choice(r, *root, top, req);
    read_text(r, *root, top, req);
    req.max_tokens = r.integer_at_least(*root, "max_output_tokens", top, 1);
    req.temperature = r.number(*root, "temperature", top, false, kTemperatureRange);
    req.top_p = r.number(*root, "top_p", top, false, kProbabilityRange);
    req.stream = r.boolean(*root, "stream", top).value_or(false);
    req.parallel_tool_calls = r.boolean(*root, "parallel_tool_calls", top);
    std::optional<std::string> effort = read_reasoning(r, *root, top);
    if (r.failed()) return r.take_error();
    if (effort) req.original["reasoning_effort"] = *effort;
    return req;
}

}  // namespace tokenradar::dialect
