// The Responses API from a client's side (responses.hpp): the request bench sends, and the
// `response` object and typed stream events it reads back. Shapes from OpenAI's API reference
// (POST /v1/responses, "Streaming API responses") and the openai-node SDK's types (6.x), the
// same sources as the server side in responses.cpp and responses_request.cpp.
#include <tokenradar/dialect/responses.hpp>

#include "json_util.hpp"

#include <tokenradar/dialect/codec.hpp>

#include <fmt/format.h>

namespace tokenradar::dialect {

namespace {

Error not_written(std::string_view field, std::string_view why) {
    return Error(Errc::unsupported,
                 fmt::format("{}: {} (a Responses request has no place for it)", field, why));
}

// The first field a Responses request cannot carry, or nullopt.
std::optional<Error> refuse_unwritable(const ChatRequest& r) {
    if (!r.stop.empty()) return not_written("stop", "stop sequences");
    if (r.seed) return not_written("seed", "a sampling seed");
    if (r.presence_penalty.value_or(0) != 0) return not_written("presence_penalty", "a penalty");
    if (r.frequency_penalty.value_or(0) != 0) return not_written("frequency_penalty", "a penalty");
    if (r.thinking_budget) return not_written("thinking_budget", "a budget (reasoning.effort is)");
    return std::nullopt;
}

// A Responses message has no tool role (tool results are function_call_output items).
std::string_view role_name(Role role) { return role == Role::tool ? "user" : to_string(role); }

// A message's text parts as Responses content parts (output_text for the assistant's own
// turns, input_text otherwise); images are refused by path.
Result<json::array> content_parts(const Message& m, std::size_t message_index) {
    json::array parts;
    const std::string_view type = m.role == Role::assistant ? "output_text" : "input_text";
    for (std::size_t j = 0; j < m.content.size(); ++j) {
        const ContentPart& part = m.content[j];
        if (part.kind != ContentPart::Kind::text) {
            return not_written(fmt::format("messages[{}].content[{}]", message_index, j),
                               "an image");
        }
        parts.push_back(json::object{{"type", type}, {"text", part.text}});
    }
    return parts;
}

std::string joined_text(const Message& m) {
    std::string text;
    for (const ContentPart& part : m.content) text += part.text;
    return text;
}

Result<json::array> input_items(const std::vector<Message>& messages) {
    json::array items;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const Message& m = messages[i];
        if (m.role == Role::tool) {
            items.push_back(json::object{{"type", "function_call_output"},
                                         {"call_id", m.tool_call_id},
                                         {"output", joined_text(m)}});
            continue;
        }
        if (!m.content.empty() || m.tool_calls.empty()) {
            auto parts = content_parts(m, i);
            if (!parts) return parts.error();
            items.push_back(json::object{
                {"type", "message"}, {"role", role_name(m.role)}, {"content", std::move(*parts)}});
        }
        for (const ToolCall& call : m.tool_calls) {
            items.push_back(json::object{{"type", "function_call"},
                                         {"call_id", call.id},
                                         {"name", call.name},
                                         {"arguments", call.arguments}});
        }
    }
    return items;
}

// Schema text -> its JSON (an empty text: an empty object schema).
Result<json::value> schema_json(std::string_view text, std::string_view field) {
    if (text.empty()) return json::value(json::object());
    auto parsed = parse_json_object(text);
    if (!parsed) return Error(Errc::bad_request, fmt::format("{}: not a JSON object", field));
    return json::value(std::move(*parsed));
}

Result<json::array> tools_json(const std::vector<ToolDefinition>& tools) {
    json::array out;
    for (std::size_t i = 0; i < tools.size(); ++i) {
        const ToolDefinition& tool = tools[i];
        auto parameters = schema_json(tool.parameters, fmt::format("tools[{}].parameters", i));
        if (!parameters) return parameters.error();
        json::object t{{"type", "function"}, {"name", tool.name}};
        if (!tool.description.empty()) t["description"] = tool.description;
        t["parameters"] = std::move(*parameters);
        t["strict"] = tool.strict;
        out.push_back(std::move(t));
    }
    return out;
}

json::value tool_choice_json(const ToolChoice& choice) {
    switch (choice.mode) {
        case ToolChoice::Mode::none:
            return "none";
        case ToolChoice::Mode::required:
            return "required";
        case ToolChoice::Mode::function:
            return json::object{{"type", "function"}, {"name", choice.name}};
        case ToolChoice::Mode::automatic:
            break;
    }
    return "auto";
}

Result<json::object> text_format_json(const ResponseFormat& format) {
    switch (format.kind) {
        case ResponseFormat::Kind::json_object:
            return json::object{{"type", "json_object"}};
        case ResponseFormat::Kind::json_schema: {
            auto schema = schema_json(format.schema, "response_format.schema");
            if (!schema) return schema.error();
            return json::object{{"type", "json_schema"},
                                {"name", format.name},
                                {"schema", std::move(*schema)},
                                {"strict", format.strict}};
        }
        case ResponseFormat::Kind::text:
            break;
    }
    return json::object{{"type", "text"}};
}

Usage read_usage(Reader& r, const json::object& usage, const Path& up) {
    Usage u;
    u.prompt_tokens = r.integer(usage, "input_tokens", up);
    u.output_tokens = r.integer(usage, "output_tokens", up);
    if (const json::object* in = r.object(usage, "input_tokens_details", up)) {
        Path ip = up.key("input_tokens_details");
        u.cached_prompt_tokens = r.integer(*in, "cached_tokens", ip);
    }
    if (const json::object* out = r.object(usage, "output_tokens_details", up)) {
        Path op = up.key("output_tokens_details");
        u.reasoning_tokens = r.integer(*out, "reasoning_tokens", op);
    }
    return u;
}

// A response object's status and incomplete_details, and whether it called functions.
FinishReason finish_reason_of(Reader& r, const json::object& response, const Path& top,
                              bool called) {
    auto status = r.string(response, "status", top);
    if (status == "incomplete") {
        if (const json::object* details = r.object(response, "incomplete_details", top)) {
            Path dp = top.key("incomplete_details");
            auto reason = r.string(*details, "reason", dp);
            if (reason == "max_output_tokens") return FinishReason::length;
            if (reason == "content_filter") return FinishReason::content_filter;
        }
        return FinishReason::other;
    }
    if (status == "failed") return FinishReason::error;
    return called ? FinishReason::tool_calls : FinishReason::stop;
}

// The text of an item's parts of `type` (message output_text; reasoning summary_text and
// reasoning_text).
void append_parts(Reader& r, const json::object& item, std::string_view key, std::string_view type,
                  const Path& ip, std::string& out) {
    const json::array* parts = r.array(item, key, ip);
    if (parts == nullptr) return;
    Path pp = ip.key(key);
    for_each_object(r, *parts, pp, [&](const json::object& part, const Path& path) {
        auto part_type = r.string(part, "type", path);
        if (part_type != type) return;  // refusals and other parts carry no answer text
        if (auto text = r.string(part, "text", path)) out.append(*text);
    });
}

void read_output(Reader& r, const json::array& output, const Path& op, ChatResponse& resp) {
    for_each_object(r, output, op, [&](const json::object& item, const Path& ip) {
        auto type = r.string(item, "type", ip, true);
        if (type == "message") {
            append_parts(r, item, "content", "output_text", ip, resp.text);
        } else if (type == "reasoning") {
            append_parts(r, item, "summary", "summary_text", ip, resp.reasoning);
            append_parts(r, item, "content", "reasoning_text", ip, resp.reasoning);
        } else if (type == "function_call") {
            ToolCall call;
            if (auto id = r.string(item, "call_id", ip, true)) call.id.assign(*id);
            if (auto name = r.string(item, "name", ip, true)) call.name.assign(*name);
            if (auto arguments = r.string(item, "arguments", ip, true))
                call.arguments.assign(*arguments);
            resp.tool_calls.push_back(std::move(call));
        }
        // Built-in tool calls (web_search_call...) carry no answer text.
    });
}

void read_response(Reader& r, const json::object& o, const Path& top, ChatResponse& resp) {
    if (auto id = r.string(o, "id", top)) resp.id.assign(*id);
    if (auto model = r.string(o, "model", top)) resp.model.assign(*model);
    if (auto created = r.integer(o, "created_at", top)) resp.created = *created;
    Path op = top.key("output");
    if (const json::array* output = r.array(o, "output", top, true))
        read_output(r, *output, op, resp);
    if (const json::object* usage = r.object(o, "usage", top)) {
        Path up = top.key("usage");
        resp.usage = read_usage(r, *usage, up);
    }
    resp.finish_reason = finish_reason_of(r, o, top, !resp.tool_calls.empty());
}

// The `error` event ({code, message}) or a failed response's `error`.
StreamDelta error_delta(Reader& r, const json::object& error, const Path& ep) {
    StreamDelta d = StreamDelta::make(StreamDelta::Kind::error);
    if (auto code = r.string(error, "code", ep)) d.error_type.assign(*code);
    if (auto message = r.string(error, "message", ep)) d.text.assign(*message);
    d.error_code = errc_from_error_type(Api::openai_responses, d.error_type)
                       .value_or(Errc::upstream_http_error);
    return d;
}

// response.failed's error, when no `error` event told it before.
StreamDelta failure_delta(Reader& r, const json::object& response, const Path& rp) {
    if (const json::object* error = r.object(response, "error", rp)) {
        Path ep = rp.key("error");
        return error_delta(r, *error, ep);
    }
    StreamDelta d = StreamDelta::make(StreamDelta::Kind::error);
    d.text = "response.failed without an error";
    return d;
}

}  // namespace

Result<std::string> emit_responses_request(const ChatRequest& request) {
    if (auto refused = refuse_unwritable(request)) return std::move(*refused);
    auto input = input_items(request.messages);
    if (!input) return input.error();
    json::object o{{"model", request.model}, {"input", std::move(*input)}};
    if (!request.tools.empty()) {
        auto tools = tools_json(request.tools);
        if (!tools) return tools.error();
        o["tools"] = std::move(*tools);
    }
    if (request.tool_choice) o["tool_choice"] = tool_choice_json(*request.tool_choice);
    if (request.parallel_tool_calls) o["parallel_tool_calls"] = *request.parallel_tool_calls;
    if (request.response_format) {
        auto format = text_format_json(*request.response_format);
        if (!format) return format.error();
        o["text"] = json::object{{"format", std::move(*format)}};
    }
    if (const json::value* effort = Reader::find(request.original, "reasoning_effort");
        effort != nullptr && effort->is_string()) {
        o["reasoning"] = json::object{{"effort", effort->get_string()}};
    }
    if (request.max_tokens) o["max_output_tokens"] = *request.max_tokens;
    if (request.temperature) o["temperature"] = *request.temperature;
    if (request.top_p) o["top_p"] = *request.top_p;
    if (request.stream) o["stream"] = true;
    o["store"] = false;
    return json::serialize(o);
}

Result<ChatResponse> parse_responses_response(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    Reader r(Errc::protocol_error);
    Path top;
    ChatResponse resp;
    if (auto object = r.string(*root, "object", top); object && *object != "response")
        r.fail_key(top, "object", "expected \"response\"");
    if (!r.failed()) read_response(r, *root, top, resp);
    if (r.failed()) return r.take_error();
    return resp;
}

ResponsesStreamDecoder::ResponsesStreamDecoder() : json_(std::make_unique<EventJson>()) {}
ResponsesStreamDecoder::~ResponsesStreamDecoder() = default;

Result<void> ResponsesStreamDecoder::decode(std::string_view event, std::string_view data,
                                            std::vector<StreamDelta>& out) {
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& fields = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    const std::size_t first = out.size();
    std::string_view type = event;
    if (auto t = r.string(fields, "type", top)) type = *t;
    if (type == "response.output_text.delta") {
        if (auto text = r.string(fields, "delta", top, true))
            out.push_back(StreamDelta::make_text(std::string(*text)));
    } else if (type == "response.reasoning_text.delta" ||
               type == "response.reasoning_summary_text.delta") {
        if (auto text = r.string(fields, "delta", top, true)) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::reasoning);
            d.text.assign(*text);
            out.push_back(std::move(d));
        }
    } else if (type == "response.function_call_arguments.delta") {
        auto item = r.integer(fields, "output_index", top, true);
        auto arguments = r.string(fields, "delta", top, true);
        auto call = item ? tool_index_by_item_.find(*item) : tool_index_by_item_.end();
        if (!r.failed() && call == tool_index_by_item_.end()) {
            r.fail_key(top, "output_index", "names no function_call item added before");
        } else if (!r.failed()) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::tool_call);
            d.index = call->second;
            d.arguments.assign(*arguments);
            out.push_back(std::move(d));
        }
    } else if (type == "response.output_item.added") {
        const json::object* item = r.object(fields, "item", top, true);
        auto index = r.integer(fields, "output_index", top, true);
        Path ip = top.key("item");
        if (item != nullptr && index && r.string(*item, "type", ip) == "function_call") {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::tool_call);
            const auto next = static_cast<int>(tool_index_by_item_.size());
            d.index = tool_index_by_item_.emplace(*index, next).first->second;
            if (auto id = r.string(*item, "call_id", ip)) d.id.assign(*id);
            if (auto name = r.string(*item, "name", ip)) d.name.assign(*name);
            if (auto arguments = r.string(*item, "arguments", ip)) d.arguments.assign(*arguments);
            out.push_back(std::move(d));
        }
    } else if (type == "response.created" || type == "response.completed" ||
               type == "response.incomplete" || type == "response.failed") {
        const json::object* response = r.object(fields, "response", top, true);
        Path rp = top.key("response");
        ChatResponse snapshot;
        if (response != nullptr) read_response(r, *response, rp, snapshot);
        if (!r.failed() && type == "response.created") {
            StreamDelta role = StreamDelta::make(StreamDelta::Kind::role);
            role.id = std::move(snapshot.id);
            role.name = std::move(snapshot.model);
            out.push_back(std::move(role));
        } else if (!r.failed()) {
            StreamDelta usage = StreamDelta::make(StreamDelta::Kind::usage);
            usage.usage = snapshot.usage;
            if (!usage.usage.empty()) out.push_back(std::move(usage));
            if (type == "response.failed") {
                if (!saw_error_) out.push_back(failure_delta(r, *response, rp));
            } else {
                StreamDelta finish = StreamDelta::make(StreamDelta::Kind::finish);
                // A snapshot's function calls say tool_calls; the stream's count too, in
                // case a server sends completed without repeating its items.
                finish.finish_reason =
                    !tool_index_by_item_.empty() && snapshot.finish_reason == FinishReason::stop
                        ? FinishReason::tool_calls
                        : *snapshot.finish_reason;
                out.push_back(std::move(finish));
            }
            out.push_back(StreamDelta::make(StreamDelta::Kind::done));
        }
    } else if (type == "error") {
        saw_error_ = true;
        out.push_back(error_delta(r, fields, top));
    }
    // response.in_progress, content_part / output_item / text `done` events, refusal and
    // built-in tool events and unknown future ones carry nothing we model.
    return finish_event(r, out, first);
}

}  // namespace tokenradar::dialect
