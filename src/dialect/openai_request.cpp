// OpenAI Chat Completions requests: parse and emit (openai.hpp). Responses and streams are
// in openai.cpp.
#include <tokenradar/dialect/openai.hpp>

// The rest of this component and its private helpers.
#include "chat_json.hpp"
#include "generation_options.hpp"
#include "json_util.hpp"
#include "openai_common.hpp"
#include "openai_tool_calls.hpp"

namespace tokenradar::dialect {

namespace {

constexpr std::string_view kRoles = "expected one of system, user, assistant, tool";

std::optional<Role> parse_role(std::string_view s) {
    if (s == "system" || s == "developer") return Role::system;
    if (s == "user") return Role::user;
    if (s == "assistant") return Role::assistant;
    if (s == "tool") return Role::tool;
    return std::nullopt;
}

// "data:image/png;base64,AAAA" -> (image/png, AAAA)
bool split_data_url(std::string_view url, std::string& media_type, std::string& data) {
    constexpr std::string_view kPrefix = "data:";
    constexpr std::string_view kB64 = ";base64,";
    if (url.substr(0, kPrefix.size()) != kPrefix) return false;
    std::size_t b = url.find(kB64);
    if (b == std::string_view::npos) return false;
    media_type.assign(url.substr(kPrefix.size(), b - kPrefix.size()));
    data.assign(url.substr(b + kB64.size()));
    return true;
}

// An image_url part: {"image_url": {"url": ...}} or, as some clients send it, a bare string.
void read_image_url(Reader& r, const json::object& part, const Path& path,
                    std::vector<ContentPart>& out) {
    Path image_path = path.key("image_url");
    std::optional<std::string_view> url;
    if (const json::value* image = Reader::find(part, "image_url"); image && image->is_string()) {
        url = std::string_view(image->get_string());
    } else if (const json::object* fields = r.object(part, "image_url", path, true)) {
        url = r.string(*fields, "url", image_path, true);
    }
    if (!url) return;
    ContentPart c;
    c.cache_control = read_cache_control(r, part, path);
    if (split_data_url(*url, c.media_type, c.data)) {
        c.kind = ContentPart::Kind::image_base64;
    } else {
        c.kind = ContentPart::Kind::image_url;
        c.url.assign(*url);
    }
    out.push_back(std::move(c));
}

void read_content(Reader& r, const json::value& v, const Path& p, std::vector<ContentPart>& out) {
    if (v.is_null()) return;
    if (v.is_string()) {
        out.push_back(ContentPart::make_text(std::string(v.get_string())));
        return;
    }
    if (!v.is_array()) {
        r.fail(p, "expected a string or an array of content parts");
        return;
    }
    for_each_object(r, v.get_array(), p, [&](const json::object& part, const Path& part_path) {
        auto type = r.string(part, "type", part_path, true);
        if (!type) return;
        if (*type == "text" || *type == "refusal") {
            auto text = r.string(part, *type == "text" ? "text" : "refusal", part_path, true);
            if (!text) return;
            out.push_back(ContentPart::make_text(std::string(*text)));
            out.back().cache_control = read_cache_control(r, part, part_path);
        } else if (*type == "image_url") {
            read_image_url(r, part, part_path, out);
        } else {
            r.fail(part_path.key("type"), "expected one of text, image_url");
        }
    });
}

void read_message(Reader& r, const json::object& message, const Path& path, ChatRequest& req) {
    auto role = r.string(message, "role", path, true);
    if (!role) return;
    auto parsed_role = parse_role(*role);
    if (!parsed_role) {
        r.fail_key(path, "role", kRoles);
        return;
    }
    Message msg;
    msg.role = *parsed_role;
    if (const json::value* content = Reader::find(message, "content")) {
        Path content_path = path.key("content");
        read_content(r, *content, content_path, msg.content);
    }
    // LiteLLM's message-level form (the only one a string content can carry): the breakpoint
    // is on the message's last block.
    if (std::string cache_control = read_cache_control(r, message, path);
        !cache_control.empty() && !msg.content.empty() && msg.content.back().cache_control.empty())
        msg.content.back().cache_control = std::move(cache_control);
    if (msg.role == Role::assistant) {
        Path calls_path = path.key("tool_calls");
        if (const json::array* calls = r.array(message, "tool_calls", path)) {
            read_tool_calls(r, *calls, calls_path, msg.tool_calls);
        }
    }
    if (msg.role == Role::tool) {
        if (auto id = r.string(message, "tool_call_id", path, true)) msg.tool_call_id.assign(*id);
        if (auto name = r.string(message, "name", path)) msg.name.assign(*name);
    }
    req.messages.push_back(std::move(msg));
}

// Function tools; each must have a `function`.
void read_tools(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    Path tools_path = top.key("tools");
    const json::array* tools = r.array(body, "tools", top);
    if (!tools) return;
    for_each_object(r, *tools, tools_path, [&](const json::object& tool, const Path& path) {
        Path function_path = path.key("function");
        const json::object* function = r.object(tool, "function", path, true);
        if (!function) return;
        ToolDefinition def;
        if (auto name = r.string(*function, "name", function_path, true)) def.name.assign(*name);
        if (auto description = r.string(*function, "description", function_path))
            def.description.assign(*description);
        if (const json::object* params = r.object(*function, "parameters", function_path)) {
            def.parameters = to_json_text(*params);
        }
        def.strict = r.boolean(*function, "strict", function_path).value_or(false);
        def.cache_control = read_cache_control(r, tool, path);
        req.tools.push_back(std::move(def));
    });
}

// `stop`: a string or an array of strings.
void read_stop(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    const json::value* stop = Reader::find(body, "stop");
    if (!stop) return;
    if (stop->is_string()) {
        req.stop.emplace_back(stop->get_string());
    } else if (stop->is_array()) {
        Path stop_path = top.key("stop");
        read_strings(r, stop->get_array(), stop_path, req.stop);
    } else {
        r.fail_key(top, "stop", "expected a string or an array of strings");
    }
}

// The builders below make every value in the one storage `sp` (values of another storage are
// copied when they are inserted, not moved).

json::value content_json(const std::vector<ContentPart>& parts, const json::storage_ptr& sp) {
    if (parts.size() == 1 && parts[0].kind == ContentPart::Kind::text &&
        parts[0].cache_control.empty()) {
        return json::string(parts[0].text, sp);
    }
    json::array a(sp);
    a.reserve(parts.size());
    for (const ContentPart& c : parts) {
        json::object part(sp);
        switch (c.kind) {
            case ContentPart::Kind::text:
                part.emplace("type", "text");
                part.emplace("text", c.text);
                break;
            case ContentPart::Kind::image_url:
                part.emplace("type", "image_url");
                part.emplace("image_url", json::object({{"url", c.url}}, sp));
                break;
            case ContentPart::Kind::image_base64:
                part.emplace("type", "image_url");
                part.emplace(
                    "image_url",
                    json::object({{"url", "data:" + c.media_type + ";base64," + c.data}}, sp));
                break;
        }
        write_cache_control(c.cache_control, part);
        a.push_back(std::move(part));
    }
    return a;
}

json::object message_json(const Message& m, const json::storage_ptr& sp) {
    json::object message(sp);
    message.reserve(4);
    message.emplace("role", to_string(m.role));
    if (m.role == Role::assistant && m.content.empty()) {
        message.emplace("content", nullptr);
    } else {
        message.emplace("content", content_json(m.content, sp));
    }
    if (!m.tool_calls.empty()) message.emplace("tool_calls", tool_calls_json(m.tool_calls, sp));
    if (m.role == Role::tool) {
        message.emplace("tool_call_id", m.tool_call_id);
        if (!m.name.empty()) message.emplace("name", m.name);
    }
    return message;
}

Result<json::array> tools_json(const std::vector<ToolDefinition>& tools,
                               const json::storage_ptr& sp) {
    json::array out(sp);
    for (const ToolDefinition& t : tools) {
        json::object function({{"name", t.name}}, sp);
        if (!t.description.empty()) function.emplace("description", t.description);
        if (!t.parameters.empty()) {
            auto params = tool_parameters(t);
            if (!params) return params.error();
            function.emplace("parameters", std::move(*params));
        }
        if (t.strict) function.emplace("strict", true);
        json::object tool({{"type", "function"}}, sp);
        tool.emplace("function", std::move(function));
        write_cache_control(t.cache_control, tool);
        out.push_back(std::move(tool));
    }
    return out;
}

}  // namespace

void read_openai_sampling(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    req.max_tokens = r.integer_at_least(body, "max_completion_tokens", top, 0);
    if (!req.max_tokens) req.max_tokens = r.integer_at_least(body, "max_tokens", top, 0);
    req.temperature = r.number(body, "temperature", top, false, kTemperatureRange);
    req.top_p = r.number(body, "top_p", top, false, kProbabilityRange);
    read_stop(r, body, top, req);
    req.stream = r.boolean(body, "stream", top).value_or(false);
    Path stream_options_path = top.key("stream_options");
    if (const json::object* stream_options = r.object(body, "stream_options", top)) {
        req.include_usage =
            r.boolean(*stream_options, "include_usage", stream_options_path).value_or(false);
    }
    read_openai_options(r, body, top, req);
}

Result<ChatRequest> parse_openai_request(std::string_view body) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size()));
    if (!root) return root.error();
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    if (auto model = r.string(*root, "model", top, true)) req.model.assign(*model);
    Path messages_path = top.key("messages");
    if (const json::array* messages = r.array(*root, "messages", top, true)) {
        req.messages.reserve(messages->size());
        for_each_object(r, *messages, messages_path,
                        [&](const json::object& message, const Path& path) {
                            read_message(r, message, path, req);
                        });
    }
    read_tools(r, *root, top, req);
    read_openai_sampling(r, *root, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_openai_request(const ChatRequest& req) {
    // The DOM lives only until it is serialized: one arena, freed at once.
    json::monotonic_resource arena;
    auto o = openai_request_json(req, &arena);
    if (!o) return o.error();
    return json::serialize(*o);
}

Result<json::object> openai_request_json(const ChatRequest& req, const json::storage_ptr& sp) {
    json::object o(sp);
    o.reserve(16);
    o.emplace("model", req.model);
    json::array messages(sp);
    messages.reserve(req.messages.size());
    for (const Message& m : req.messages) messages.push_back(message_json(m, sp));
    o.emplace("messages", std::move(messages));
    if (!req.tools.empty()) {
        auto tools = tools_json(req.tools, sp);
        if (!tools) return tools.error();
        o.emplace("tools", std::move(*tools));
    }
    if (req.max_tokens) o.emplace("max_tokens", *req.max_tokens);
    if (req.temperature) o.emplace("temperature", *req.temperature);
    if (req.top_p) o.emplace("top_p", *req.top_p);
    if (!req.stop.empty()) {
        json::array stop(sp);
        for (const auto& s : req.stop) stop.emplace_back(s);
        o.emplace("stop", std::move(stop));
    }
    write_openai_options(req, o);
    if (req.stream) {
        o.emplace("stream", true);
        if (req.include_usage)
            o.emplace("stream_options", json::object({{"include_usage", true}}, sp));
    }
    return o;
}

}  // namespace tokenradar::dialect
