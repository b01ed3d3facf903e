// Anthropic Messages requests: parse and emit (anthropic.hpp). Responses and streams are in
// anthropic.cpp.
#include <tokenradar/dialect/anthropic.hpp>

// The rest of this component and its private helpers.
#include "chat_json.hpp"
#include "generation_options.hpp"
#include "json_util.hpp"

namespace tokenradar::dialect {

namespace {

void read_text(Reader& r, const json::object& block, const Path& path,
               std::vector<ContentPart>& out) {
    if (auto text = r.string(block, "text", path, true)) {
        out.push_back(ContentPart::make_text(std::string(*text)));
        out.back().cache_control = read_cache_control(r, block, path);
    }
}

void read_image(Reader& r, const json::object& block, const Path& path,
                std::vector<ContentPart>& out) {
    Path source_path = path.key("source");
    const json::object* source = r.object(block, "source", path, true);
    if (!source) return;
    auto type = r.string(*source, "type", source_path, true);
    if (!type) return;
    ContentPart image;
    image.cache_control = read_cache_control(r, block, path);
    if (*type == "base64") {
        image.kind = ContentPart::Kind::image_base64;
        if (auto media_type = r.string(*source, "media_type", source_path, true))
            image.media_type.assign(*media_type);
        if (auto data = r.string(*source, "data", source_path, true)) image.data.assign(*data);
    } else if (*type == "url") {
        image.kind = ContentPart::Kind::image_url;
        if (auto url = r.string(*source, "url", source_path, true)) image.url.assign(*url);
    } else {
        r.fail_key(source_path, "type", "expected one of base64, url");
    }
    if (!r.failed()) out.push_back(std::move(image));
}

// A content field: a string (one text part) or an array of blocks, each passed with its
// type to read_block(type, block, block_path).
template <class ReadBlock>
void read_content(Reader& r, const json::value& content, const Path& path,
                  std::vector<ContentPart>& out, ReadBlock&& read_block) {
    if (content.is_string()) {
        out.push_back(ContentPart::make_text(std::string(content.get_string())));
        return;
    }
    if (!content.is_array()) {
        r.fail(path, "expected a string or an array of content blocks");
        return;
    }
    for_each_object(r, content.get_array(), path,
                    [&](const json::object& block, const Path& block_path) {
                        if (auto type = r.string(block, "type", block_path, true))
                            read_block(*type, block, block_path);
                    });
}

// System prompts hold text blocks only; tool results hold text and images.
void read_blocks(Reader& r, const json::value& v, const Path& p, bool images,
                 std::vector<ContentPart>& out) {
    read_content(
        r, v, p, out, [&](std::string_view type, const json::object& block, const Path& path) {
            if (type == "text") {
                read_text(r, block, path, out);
            } else if (type == "image" && images) {
                read_image(r, block, path, out);
            } else {
                r.fail_key(path, "type", images ? "expected one of text, image" : "expected text");
            }
        });
}

ToolCall read_tool_use(Reader& r, const json::object& block, const Path& path) {
    ToolCall call;
    if (auto id = r.string(block, "id", path, true)) call.id.assign(*id);
    if (auto name = r.string(block, "name", path, true)) call.name.assign(*name);
    if (const json::object* input = r.object(block, "input", path))
        call.arguments = to_json_text(*input);
    else
        call.arguments = "{}";
    return call;
}

Message read_tool_result(Reader& r, const json::object& block, const Path& path) {
    Message result;
    result.role = Role::tool;
    if (auto id = r.string(block, "tool_use_id", path, true)) result.tool_call_id.assign(*id);
    if (const json::value* content = Reader::find(block, "content")) {
        Path content_path = path.key("content");
        read_blocks(r, *content, content_path, true, result.content);
    }
    return result;
}

// One block of a message; tool_result blocks go to `tool_results`.
void read_message_block(Reader& r, std::string_view type, const json::object& block,
                        const Path& path, Message& turn, std::vector<Message>& tool_results) {
    if (type == "text") {
        read_text(r, block, path, turn.content);
    } else if (type == "image") {
        read_image(r, block, path, turn.content);
    } else if (type == "tool_use" && turn.role == Role::assistant) {
        turn.tool_calls.push_back(read_tool_use(r, block, path));
    } else if (type == "tool_result" && turn.role == Role::user) {
        tool_results.push_back(read_tool_result(r, block, path));
    } else if (type == "thinking" || type == "redacted_thinking") {
        // History thinking blocks only matter to Anthropic itself; passthrough keeps
        // them through `original`.
    } else {
        r.fail_key(path, "type",
                   turn.role == Role::user ? "expected one of text, image, tool_result"
                                           : "expected one of text, image, tool_use, thinking");
    }
}

void read_message(Reader& r, const json::object& message, const Path& path, ChatRequest& req) {
    auto role = r.string(message, "role", path, true);
    if (!role) return;
    Message turn;
    if (*role == "user") {
        turn.role = Role::user;
    } else if (*role == "assistant") {
        turn.role = Role::assistant;
    } else {
        r.fail_key(path, "role", "expected one of user, assistant");
        return;
    }
    Path content_path = path.key("content");
    const json::value* content = Reader::find(message, "content");
    if (content == nullptr) {
        r.fail(content_path, "required");
        return;
    }
    std::vector<Message> tool_results;
    read_content(r, *content, content_path, turn.content,
                 [&](std::string_view type, const json::object& block, const Path& block_path) {
                     read_message_block(r, type, block, block_path, turn, tool_results);
                 });
    append_turn(req.messages, std::move(turn), std::move(tool_results));
}

// Custom tools; server tools (web_search...) have no schema here and are left out.
void read_tools(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    Path tools_path = top.key("tools");
    const json::array* tools = r.array(body, "tools", top);
    if (!tools) return;
    for_each_object(r, *tools, tools_path, [&](const json::object& tool, const Path& path) {
        auto type = r.string(tool, "type", path);
        if (type && *type != "custom") return;
        ToolDefinition def;
        if (auto name = r.string(tool, "name", path, true)) def.name.assign(*name);
        if (auto description = r.string(tool, "description", path))
            def.description.assign(*description);
        if (const json::object* schema = r.object(tool, "input_schema", path, true)) {
            def.parameters = to_json_text(*schema);
        }
        def.strict = r.boolean(tool, "strict", path).value_or(false);
        def.cache_control = read_cache_control(r, tool, path);
        req.tools.push_back(std::move(def));
    });
}

void read_sampling(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    req.temperature = r.number(body, "temperature", top, false, kProbabilityRange);  // 0-1
    req.top_p = r.number(body, "top_p", top, false, kProbabilityRange);
    Path stop_path = top.key("stop_sequences");
    if (const json::array* stop = r.array(body, "stop_sequences", top))
        read_strings(r, *stop, stop_path, req.stop);
}

json::value blocks_or_string(const std::vector<ContentPart>& parts, json::array extra_first,
                             json::array extra_last) {
    if (extra_first.empty() && extra_last.empty() && parts.size() == 1 &&
        parts[0].kind == ContentPart::Kind::text && parts[0].cache_control.empty()) {
        return json::string(parts[0].text);
    }
    json::array a = std::move(extra_first);
    for (const ContentPart& c : parts) {
        json::object block;
        switch (c.kind) {
            case ContentPart::Kind::text:
                // Anthropic rejects empty text blocks; OpenAI clients send `content: ""` beside
                // tool calls.
                if (c.text.empty() && parts.size() + a.size() + extra_last.size() > 1) continue;
                block = json::object{{"type", "text"}, {"text", c.text}};
                break;
            case ContentPart::Kind::image_url:
                block = json::object{{"type", "image"},
                                     {"source", json::object{{"type", "url"}, {"url", c.url}}}};
                break;
            case ContentPart::Kind::image_base64:
                block = json::object{{"type", "image"},
                                     {"source", json::object{{"type", "base64"},
                                                             {"media_type", c.media_type},
                                                             {"data", c.data}}}};
                break;
        }
        // The client's breakpoint, untouched (type, ttl); more than Anthropic's 4 is its 400.
        write_cache_control(c.cache_control, block);
        a.push_back(std::move(block));
    }
    for (auto& v : extra_last) a.push_back(std::move(v));
    return a;
}

// An assistant message: its content blocks, then a tool_use block per call.
Result<json::value> assistant_content(const Message& m, const Path& message_path) {
    json::array calls;
    Path calls_path = message_path.key("tool_calls");
    for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
        const ToolCall& tc = m.tool_calls[k];
        Path call_path = calls_path.at(k);
        auto input = call_arguments(tc, call_path);
        if (!input) return input.error();
        calls.push_back(json::object{
            {"type", "tool_use"}, {"id", tc.id}, {"name", tc.name}, {"input", std::move(*input)}});
    }
    return blocks_or_string(m.content, {}, std::move(calls));
}

// `messages`, with system messages hoisted into `system` and tool results opening the next
// user message.
Result<json::array> emit_messages(const ChatRequest& req, std::vector<ContentPart>& system) {
    json::array messages;
    json::array pending_results;  // tool results waiting for their user message
    Path root;
    Path messages_path = root.key("messages");
    for (std::size_t i = 0; i < req.messages.size(); ++i) {
        const Message& m = req.messages[i];
        switch (m.role) {
            case Role::system:
                system.insert(system.end(), m.content.begin(), m.content.end());
                break;
            case Role::tool: {
                json::object result{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}};
                if (!m.content.empty()) result["content"] = blocks_or_string(m.content, {}, {});
                pending_results.push_back(std::move(result));
                break;
            }
            case Role::user:
                messages.push_back(json::object{
                    {"role", "user"},
                    {"content", blocks_or_string(m.content, std::move(pending_results), {})}});
                pending_results = json::array();
                break;
            case Role::assistant: {
                if (!pending_results.empty()) {
                    messages.push_back(
                        json::object{{"role", "user"}, {"content", std::move(pending_results)}});
                    pending_results = json::array();
                }
                Path message_path = messages_path.at(i);
                auto content = assistant_content(m, message_path);
                if (!content) return content.error();
                messages.push_back(
                    json::object{{"role", "assistant"}, {"content", std::move(*content)}});
                break;
            }
        }
    }
    if (!pending_results.empty()) {
        messages.push_back(json::object{{"role", "user"}, {"content", std::move(pending_results)}});
    }
    return messages;
}

Result<json::array> tools_json(const std::vector<ToolDefinition>& tools) {
    json::array out;
    for (const ToolDefinition& t : tools) {
        json::object tool{{"name", t.name}};
        if (!t.description.empty()) tool["description"] = t.description;
        auto schema = t.parameters.empty() ? Result<json::object>(json::object{{"type", "object"}})
                                           : tool_parameters(t);
        if (!schema) return schema.error();
        tool["input_schema"] = std::move(*schema);
        if (t.strict) tool["strict"] = true;
        write_cache_control(t.cache_control, tool);
        out.push_back(std::move(tool));
    }
    return out;
}

}  // namespace

Result<ChatRequest> parse_anthropic_request(std::string_view body,
                                            json::monotonic_resource* scratch) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size(), scratch));
    if (!root) return root.error();
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    req.include_usage = true;
    if (auto model = r.string(*root, "model", top, true)) req.model.assign(*model);
    req.max_tokens = r.integer_at_least(*root, "max_tokens", top, 1, true);
    if (const json::value* system = Reader::find(*root, "system")) {
        Message m;
        m.role = Role::system;
        Path system_path = top.key("system");
        read_blocks(r, *system, system_path, false, m.content);
        req.messages.push_back(std::move(m));
    }
    Path messages_path = top.key("messages");
    if (const json::array* messages = r.array(*root, "messages", top, true)) {
        req.messages.reserve(req.messages.size() + messages->size());  // about one per turn
        for_each_object(r, *messages, messages_path,
                        [&](const json::object& message, const Path& path) {
                            read_message(r, message, path, req);
                        });
    }
    read_tools(r, *root, top, req);
    read_sampling(r, *root, top, req);
    req.stream = r.boolean(*root, "stream", top).value_or(false);
    read_anthropic_options(r, *root, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_anthropic_request(const ChatRequest& req) {
    // Members in the order of Anthropic's cache prefix (tools, system, messages), before
    // anything that varies per request: requests sharing a prefix share the body's first bytes
    // (byte-stable for any cache keyed on them; Boost.JSON keeps insertion order).
    json::object body;
    body["model"] = req.model;
    if (!req.tools.empty()) {
        auto tools = tools_json(req.tools);
        if (!tools) return tools.error();
        body["tools"] = std::move(*tools);
    }
    std::vector<ContentPart> system;
    auto messages = emit_messages(req, system);
    if (!messages) return messages.error();
    if (!system.empty()) body["system"] = blocks_or_string(system, {}, {});
    body["messages"] = std::move(*messages);
    body["max_tokens"] = req.max_tokens.value_or(kAnthropicDefaultMaxTokens);
    if (req.temperature) body["temperature"] = *req.temperature;
    if (req.top_p) body["top_p"] = *req.top_p;
    if (!req.stop.empty()) {
        json::array stop;
        for (const auto& s : req.stop) stop.emplace_back(s);
        body["stop_sequences"] = std::move(stop);
    }
    if (auto options = write_anthropic_options(req, body); !options) return options.error();
    if (req.stream) body["stream"] = true;
    return json::serialize(body);
}

}  // namespace tokenradar::dialect
