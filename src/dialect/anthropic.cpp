#include <tokenradar/dialect/anthropic.hpp>

// The rest of this component and its private helpers.
#include "json_util.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

namespace tokenradar::dialect {

namespace {

FinishReason parse_stop_reason(std::string_view s) {
    if (s == "end_turn" || s == "stop_sequence") return FinishReason::stop;
    if (s == "max_tokens" || s == "model_context_window_exceeded") return FinishReason::length;
    if (s == "tool_use") return FinishReason::tool_calls;
    if (s == "refusal") return FinishReason::content_filter;
    return FinishReason::other;
}

std::string_view emit_stop_reason(FinishReason r) {
    switch (r) {
        case FinishReason::length:
            return "max_tokens";
        case FinishReason::tool_calls:
            return "tool_use";
        case FinishReason::content_filter:
            return "refusal";
        default:
            return "end_turn";
    }
}

// Anthropic's input_tokens excludes cache reads and writes; ours includes them.
Usage read_usage(Reader& r, const json::object& u, const Path& p) {
    Usage out;
    auto input = r.integer(u, "input_tokens", p);
    auto read = r.integer(u, "cache_read_input_tokens", p);
    auto created = r.integer(u, "cache_creation_input_tokens", p);
    if (input) out.prompt_tokens = *input + read.value_or(0) + created.value_or(0);
    out.cached_prompt_tokens = read;
    out.cache_creation_tokens = created;
    out.output_tokens = r.integer(u, "output_tokens", p);
    return out;
}

// message_start and responses always carry input_tokens and output_tokens; message_delta
// carries output_tokens and the input fields only when known.
json::object usage_json(const Usage& u, bool with_input_default) {
    json::object o;
    if (u.prompt_tokens || with_input_default) {
        std::int64_t input = u.prompt_tokens.value_or(0) - u.cached_prompt_tokens.value_or(0) -
                             u.cache_creation_tokens.value_or(0);
        o["input_tokens"] = input < 0 ? 0 : input;
    }
    if (u.cache_creation_tokens) o["cache_creation_input_tokens"] = *u.cache_creation_tokens;
    if (u.cached_prompt_tokens) o["cache_read_input_tokens"] = *u.cached_prompt_tokens;
    o["output_tokens"] = u.output_tokens.value_or(0);
    return o;
}

}  // namespace

Result<ChatResponse> parse_anthropic_response(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::protocol_error);
    Path top;
    ChatResponse resp;
    if (auto id = r.string(o, "id", top)) resp.id.assign(*id);
    if (auto model = r.string(o, "model", top)) resp.model.assign(*model);
    Path cp = top.key("content");
    if (const json::array* blocks = r.array(o, "content", top, true)) {
        for (std::size_t j = 0; j < blocks->size() && !r.failed(); ++j) {
            Path bp = cp.at(j);
            const json::object* b = r.as_object((*blocks)[j], bp);
            if (!b) break;
            auto type = r.string(*b, "type", bp, true);
            if (!type) break;
            if (*type == "text") {
                if (auto t = r.string(*b, "text", bp)) resp.text.append(*t);
            } else if (*type == "thinking") {
                if (auto t = r.string(*b, "thinking", bp)) resp.reasoning.append(*t);
            } else if (*type == "tool_use") {
                ToolCall tc;
                if (auto id = r.string(*b, "id", bp)) tc.id.assign(*id);
                if (auto name = r.string(*b, "name", bp)) tc.name.assign(*name);
                if (const json::object* input = r.object(*b, "input", bp))
                    tc.arguments = to_json_text(*input);
                resp.tool_calls.push_back(std::move(tc));
            }
        }
    }
    if (auto sr = r.string(o, "stop_reason", top)) resp.finish_reason = parse_stop_reason(*sr);
    Path up = top.key("usage");
    if (const json::object* u = r.object(o, "usage", top)) resp.usage = read_usage(r, *u, up);
    if (r.failed()) return r.take_error();
    return resp;
}

std::string emit_anthropic_response(const ChatResponse& resp) {
    json::array content;
    if (!resp.reasoning.empty()) {
        content.push_back(
            json::object{{"type", "thinking"}, {"thinking", resp.reasoning}, {"signature", ""}});
    }
    if (!resp.text.empty()) content.push_back(json::object{{"type", "text"}, {"text", resp.text}});
    for (const ToolCall& tc : resp.tool_calls) {
        auto input = parse_json_object(tc.arguments);
        content.push_back(json::object{{"type", "tool_use"},
                                       {"id", tc.id},
                                       {"name", tc.name},
                                       {"input", input ? std::move(*input) : json::object()}});
    }
    json::object o{{"id", resp.id},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"model", resp.model},
                   {"content", std::move(content)}};
    if (resp.finish_reason)
        o["stop_reason"] = emit_stop_reason(*resp.finish_reason);
    else
        o["stop_reason"] = nullptr;
    o["stop_sequence"] = nullptr;
    o["usage"] = usage_json(resp.usage, true);
    return json::serialize(o);
}

AnthropicStreamDecoder::AnthropicStreamDecoder() : json_(std::make_unique<EventJson>()) {}
AnthropicStreamDecoder::~AnthropicStreamDecoder() = default;

namespace {

using ToolIndexByBlock = std::map<std::int64_t, int>;

void decode_message_start(Reader& r, const json::object& event, const Path& top, Usage& started,
                          std::vector<StreamDelta>& out) {
    Path message_path = top.key("message");
    const json::object* message = r.object(event, "message", top, true);
    if (!message) return;
    StreamDelta role = StreamDelta::make(StreamDelta::Kind::role);
    if (auto id = r.string(*message, "id", message_path)) role.id.assign(*id);
    if (auto model = r.string(*message, "model", message_path)) role.name.assign(*model);
    out.push_back(std::move(role));
    Path usage_path = message_path.key("usage");
    if (const json::object* usage = r.object(*message, "usage", message_path)) {
        StreamDelta d = StreamDelta::make(StreamDelta::Kind::usage);
        d.usage = read_usage(r, *usage, usage_path);
        started = d.usage;
        out.push_back(std::move(d));
    }
}

// A tool_use block starts a tool call, numbered in order of appearance; a text block may
// carry its first text.
void decode_block_start(Reader& r, const json::object& event, const Path& top,
                        ToolIndexByBlock& tool_index_by_block, std::vector<StreamDelta>& out) {
    auto index = r.integer(event, "index", top, true);
    Path block_path = top.key("content_block");
    const json::object* block = r.object(event, "content_block", top, true);
    if (!block || !index) return;
    auto type = r.string(*block, "type", block_path, true);
    if (type == "tool_use") {
        StreamDelta d = StreamDelta::make(StreamDelta::Kind::tool_call);
        d.index = static_cast<int>(tool_index_by_block.size());
        if (tool_index_by_block.size() < 4096) tool_index_by_block[*index] = d.index;
        if (auto id = r.string(*block, "id", block_path)) d.id.assign(*id);
        if (auto name = r.string(*block, "name", block_path)) d.name.assign(*name);
        out.push_back(std::move(d));
    } else if (type == "text") {
        if (auto text = r.string(*block, "text", block_path); text && !text->empty()) {
            out.push_back(StreamDelta::make_text(std::string(*text)));
        }
    }
}

void decode_block_delta(Reader& r, const json::object& event, const Path& top,
                        const ToolIndexByBlock& tool_index_by_block,
                        std::vector<StreamDelta>& out) {
    auto index = r.integer(event, "index", top, true);
    Path delta_path = top.key("delta");
    const json::object* delta = r.object(event, "delta", top, true);
    if (!delta || !index) return;
    auto type = r.string(*delta, "type", delta_path, true);
    if (type == "text_delta") {
        if (auto text = r.string(*delta, "text", delta_path, true); text && !text->empty()) {
            out.push_back(StreamDelta::make_text(std::string(*text)));
        }
    } else if (type == "thinking_delta") {
        if (auto text = r.string(*delta, "thinking", delta_path, true); text && !text->empty()) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::reasoning);
            d.text.assign(*text);
            out.push_back(std::move(d));
        }
    } else if (type == "input_json_delta") {
        auto tool = tool_index_by_block.find(*index);
        auto partial_json = r.string(*delta, "partial_json", delta_path, true);
        if (tool != tool_index_by_block.end() && partial_json) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::tool_call);
            d.index = tool->second;
            d.arguments.assign(*partial_json);
            out.push_back(std::move(d));
        }
    }
}

void decode_message_delta(Reader& r, const json::object& event, const Path& top,
                          const Usage& started, std::vector<StreamDelta>& out) {
    Path delta_path = top.key("delta");
    if (const json::object* delta = r.object(event, "delta", top)) {
        if (auto reason = r.string(*delta, "stop_reason", delta_path)) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::finish);
            d.finish_reason = parse_stop_reason(*reason);
            out.push_back(std::move(d));
        }
    }
    Path usage_path = top.key("usage");
    if (const json::object* usage = r.object(event, "usage", top)) {
        StreamDelta d = StreamDelta::make(StreamDelta::Kind::usage);
        d.usage = read_usage(r, *usage, usage_path);
        // Counts here are cumulative. An input_tokens without the cache fields (servers that
        // copy only the input count) leaves message_start's cache reads and writes standing:
        // without them our prompt count (which includes them) would drop below the cached one.
        if (d.usage.prompt_tokens && !d.usage.cached_prompt_tokens &&
            !d.usage.cache_creation_tokens) {
            *d.usage.prompt_tokens += started.cached_prompt_tokens.value_or(0) +
                                      started.cache_creation_tokens.value_or(0);
        }
        out.push_back(std::move(d));
    }
}

StreamDelta error_delta(Reader& r, const json::object& event, const Path& top) {
    StreamDelta d = StreamDelta::make(StreamDelta::Kind::error);
    Path error_path = top.key("error");
    if (const json::object* error = r.object(event, "error", top)) {
        if (auto type = r.string(*error, "type", error_path)) d.error_type.assign(*type);
        if (auto message = r.string(*error, "message", error_path)) d.text.assign(*message);
    }
    d.error_code =
        errc_from_error_type(Api::anthropic, d.error_type).value_or(Errc::upstream_http_error);
    return d;
}

}  // namespace

Result<void> AnthropicStreamDecoder::decode(std::string_view event, std::string_view data,
                                            std::vector<StreamDelta>& out) {
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& fields = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    std::size_t first = out.size();
    std::string_view type = event;
    if (auto t = r.string(fields, "type", top)) type = *t;
    if (type == "message_start") {
        decode_message_start(r, fields, top, started_, out);
    } else if (type == "content_block_start") {
        decode_block_start(r, fields, top, tool_index_by_block_, out);
    } else if (type == "content_block_delta") {
        decode_block_delta(r, fields, top, tool_index_by_block_, out);
    } else if (type == "message_delta") {
        decode_message_delta(r, fields, top, started_, out);
    } else if (type == "message_stop") {
        out.push_back(StreamDelta::make(StreamDelta::Kind::done));
    } else if (type == "error") {
        out.push_back(error_delta(r, fields, top));
    }
    // ping, content_block_stop, signature/citation deltas and unknown future events carry
    // nothing we model.
    return finish_event(r, out, first);
}

namespace {

void write_event(std::string_view name, const json::object& o, std::string& out) {
    sse::SseWriter::event(out, name, json::serialize(o));
}

}  // namespace

void AnthropicStreamEncoder::ensure_started(std::string& out) {
    if (started_) return;
    started_ = true;
    json::object msg{{"id", meta_.id},           {"type", "message"},
                     {"role", "assistant"},      {"model", meta_.model},
                     {"content", json::array{}}, {"stop_reason", nullptr},
                     {"stop_sequence", nullptr}, {"usage", usage_json(usage_, true)}};
    write_event("message_start",
                json::object{{"type", "message_start"}, {"message", std::move(msg)}}, out);
}

void AnthropicStreamEncoder::close_block(std::string& out) {
    if (block_ == Block::none) return;
    write_event("content_block_stop",
                json::object{{"type", "content_block_stop"}, {"index", block_index_}}, out);
    block_ = Block::none;
}

void AnthropicStreamEncoder::open_block(Block kind, const StreamDelta& d, std::string& out) {
    close_block(out);
    ++block_index_;
    block_ = kind;
    json::object cb;
    switch (kind) {
        case Block::text:
            cb = {{"type", "text"}, {"text", ""}};
            break;
        case Block::thinking:
            cb = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
            break;
        case Block::tool:
            tool_index_ = d.index;
            cb = {{"type", "tool_use"},
                  {"id", d.id.empty() ? "toolu_" + std::to_string(d.index) : d.id},
                  {"name", d.name},
                  {"input", json::object{}}};
            break;
        case Block::none:
            break;
    }
    write_event("content_block_start",
                json::object{{"type", "content_block_start"},
                             {"index", block_index_},
                             {"content_block", std::move(cb)}},
                out);
}

void AnthropicStreamEncoder::encode(const StreamDelta& d, std::string& out) {
    using K = StreamDelta::Kind;
    if (terminated_) return;
    switch (d.kind) {
        case K::role:
            meta_.adopt(d);
            ensure_started(out);
            break;
        case K::usage:
            usage_.merge(d.usage);
            break;
        case K::text:
            ensure_started(out);
            if (block_ != Block::text) open_block(Block::text, d, out);
            write_event(
                "content_block_delta",
                json::object{{"type", "content_block_delta"},
                             {"index", block_index_},
                             {"delta", json::object{{"type", "text_delta"}, {"text", d.text}}}},
                out);
            break;
        case K::reasoning:
            ensure_started(out);
            if (block_ != Block::thinking) open_block(Block::thinking, d, out);
            write_event("content_block_delta",
                        json::object{{"type", "content_block_delta"},
                                     {"index", block_index_},
                                     {"delta", json::object{{"type", "thinking_delta"},
                                                            {"thinking", d.text}}}},
                        out);
            break;
        case K::tool_call:
            ensure_started(out);
            if (block_ != Block::tool || tool_index_ != d.index) open_block(Block::tool, d, out);
            if (!d.arguments.empty()) {
                write_event("content_block_delta",
                            json::object{{"type", "content_block_delta"},
                                         {"index", block_index_},
                                         {"delta", json::object{{"type", "input_json_delta"},
                                                                {"partial_json", d.arguments}}}},
                            out);
            }
            break;
        case K::finish:
            finish_ = d.finish_reason;
            break;
        case K::error: {
            std::string type = d.error_type.empty()
                                   ? std::string(error_type(Api::anthropic, d.error_code))
                                   : d.error_type;
            write_event("error",
                        json::object{{"type", "error"},
                                     {"error", json::object{{"type", type}, {"message", d.text}}}},
                        out);
            terminated_ = true;
            break;
        }
        case K::done:
            finish(out);
            break;
        case K::ignorable:
            if (started_) write_event("ping", json::object{{"type", "ping"}}, out);
            break;
    }
}

void AnthropicStreamEncoder::finish(std::string& out) {
    if (terminated_) return;
    ensure_started(out);
    close_block(out);
    json::object delta{{"stop_reason", emit_stop_reason(finish_.value_or(FinishReason::stop))},
                       {"stop_sequence", nullptr}};
    write_event("message_delta",
                json::object{{"type", "message_delta"},
                             {"delta", std::move(delta)},
                             {"usage", usage_json(usage_, false)}},
                out);
    write_event("message_stop", json::object{{"type", "message_stop"}}, out);
    terminated_ = true;
}

}  // namespace tokenradar::dialect
