#include <tokenradar/dialect/anthropic.hpp>

// The rest of this component and its private helpers.
#include "generation_options.hpp"
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

bool read_image(Reader& r, const json::object& b, const Path& bp, ContentPart& c) {
    Path sp = bp.key("source");
    const json::object* src = r.object(b, "source", bp, true);
    if (!src) return false;
    auto type = r.string(*src, "type", sp, true);
    if (!type) return false;
    if (*type == "base64") {
        c.kind = ContentPart::Kind::image_base64;
        if (auto mt = r.string(*src, "media_type", sp, true)) c.media_type.assign(*mt);
        if (auto d = r.string(*src, "data", sp, true)) c.data.assign(*d);
    } else if (*type == "url") {
        c.kind = ContentPart::Kind::image_url;
        if (auto u = r.string(*src, "url", sp, true)) c.url.assign(*u);
    } else {
        r.fail_key(sp, "type", "expected one of base64, url");
    }
    return !r.failed();
}

// System prompts hold text blocks only; tool results hold text and images.
void read_blocks(Reader& r, const json::value& v, const Path& p, bool images,
                 std::vector<ContentPart>& out) {
    if (v.is_string()) {
        out.push_back(ContentPart::make_text(std::string(v.get_string())));
        return;
    }
    if (!v.is_array()) {
        r.fail(p, "expected a string or an array of content blocks");
        return;
    }
    for (std::size_t j = 0; j < v.get_array().size() && !r.failed(); ++j) {
        Path bp = p.at(j);
        const json::object* b = r.as_object(v.get_array()[j], bp);
        if (!b) return;
        auto type = r.string(*b, "type", bp, true);
        if (!type) return;
        if (*type == "text") {
            if (auto t = r.string(*b, "text", bp, true))
                out.push_back(ContentPart::make_text(std::string(*t)));
        } else if (*type == "image" && images) {
            ContentPart c;
            if (read_image(r, *b, bp, c)) out.push_back(std::move(c));
        } else {
            r.fail_key(bp, "type", images ? "expected one of text, image" : "expected text");
            return;
        }
    }
}

json::value blocks_or_string(const std::vector<ContentPart>& parts, json::array extra_first,
                             json::array extra_last) {
    if (extra_first.empty() && extra_last.empty() && parts.size() == 1 &&
        parts[0].kind == ContentPart::Kind::text) {
        return json::string(parts[0].text);
    }
    json::array a = std::move(extra_first);
    for (const ContentPart& c : parts) {
        switch (c.kind) {
            case ContentPart::Kind::text:
                // Anthropic rejects empty text blocks; OpenAI clients send `content: ""` beside
                // tool calls.
                if (c.text.empty() && parts.size() + a.size() + extra_last.size() > 1) break;
                a.push_back(json::object{{"type", "text"}, {"text", c.text}});
                break;
            case ContentPart::Kind::image_url:
                a.push_back(json::object{
                    {"type", "image"}, {"source", json::object{{"type", "url"}, {"url", c.url}}}});
                break;
            case ContentPart::Kind::image_base64:
                a.push_back(json::object{{"type", "image"},
                                         {"source", json::object{{"type", "base64"},
                                                                 {"media_type", c.media_type},
                                                                 {"data", c.data}}}});
                break;
        }
    }
    for (auto& v : extra_last) a.push_back(std::move(v));
    return a;
}

}  // namespace

Result<ChatRequest> parse_anthropic_request(std::string_view body) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size()));
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    req.include_usage = true;
    if (auto model = r.string(o, "model", top, true)) req.model.assign(*model);
    req.max_tokens = r.integer_at_least(o, "max_tokens", top, 1, true);
    if (const json::value* sys = Reader::find(o, "system")) {
        Message m;
        m.role = Role::system;
        Path sp = top.key("system");
        read_blocks(r, *sys, sp, false, m.content);
        req.messages.push_back(std::move(m));
    }
    Path mp = top.key("messages");
    const json::array* msgs = r.array(o, "messages", top, true);
    for (std::size_t i = 0; msgs && i < msgs->size() && !r.failed(); ++i) {
        Path ip = mp.at(i);
        const json::object* m = r.as_object((*msgs)[i], ip);
        if (!m) break;
        auto role = r.string(*m, "role", ip, true);
        if (!role) break;
        Message msg;
        if (*role == "user")
            msg.role = Role::user;
        else if (*role == "assistant")
            msg.role = Role::assistant;
        else {
            r.fail_key(ip, "role", "expected one of user, assistant");
            break;
        }
        Path cp = ip.key("content");
        const json::value* content = Reader::find(*m, "content");
        if (content == nullptr) {
            r.fail(cp, "required");
            break;
        }
        if (content->is_string()) {
            msg.content.push_back(ContentPart::make_text(std::string(content->get_string())));
            req.messages.push_back(std::move(msg));
            continue;
        }
        if (!content->is_array()) {
            r.fail(cp, "expected a string or an array of content blocks");
            break;
        }
        std::vector<Message> tool_results;
        const json::array& blocks = content->get_array();
        for (std::size_t j = 0; j < blocks.size() && !r.failed(); ++j) {
            Path bp = cp.at(j);
            const json::object* b = r.as_object(blocks[j], bp);
            if (!b) break;
            auto type = r.string(*b, "type", bp, true);
            if (!type) break;
            if (*type == "text") {
                if (auto t = r.string(*b, "text", bp, true))
                    msg.content.push_back(ContentPart::make_text(std::string(*t)));
            } else if (*type == "image") {
                ContentPart c;
                if (read_image(r, *b, bp, c)) msg.content.push_back(std::move(c));
            } else if (*type == "tool_use" && msg.role == Role::assistant) {
                ToolCall tc;
                if (auto id = r.string(*b, "id", bp, true)) tc.id.assign(*id);
                if (auto name = r.string(*b, "name", bp, true)) tc.name.assign(*name);
                if (const json::object* input = r.object(*b, "input", bp))
                    tc.arguments = to_json_text(*input);
                else
                    tc.arguments = "{}";
                msg.tool_calls.push_back(std::move(tc));
            } else if (*type == "tool_result" && msg.role == Role::user) {
                Message tr;
                tr.role = Role::tool;
                if (auto id = r.string(*b, "tool_use_id", bp, true)) tr.tool_call_id.assign(*id);
                if (const json::value* c = Reader::find(*b, "content")) {
                    Path rp = bp.key("content");
                    read_blocks(r, *c, rp, true, tr.content);
                }
                tool_results.push_back(std::move(tr));
            } else if (*type == "thinking" || *type == "redacted_thinking") {
                // History thinking blocks only matter to Anthropic itself; passthrough keeps
                // them through `original`.
            } else {
                r.fail_key(bp, "type",
                           msg.role == Role::user
                               ? "expected one of text, image, tool_result"
                               : "expected one of text, image, tool_use, thinking");
            }
        }
        for (auto& tr : tool_results) req.messages.push_back(std::move(tr));
        if (tool_results.empty() || !msg.content.empty() || !msg.tool_calls.empty()) {
            req.messages.push_back(std::move(msg));
        }
    }
    Path tp = top.key("tools");
    if (const json::array* tools = r.array(o, "tools", top)) {
        for (std::size_t i = 0; i < tools->size() && !r.failed(); ++i) {
            Path ip = tp.at(i);
            const json::object* t = r.as_object((*tools)[i], ip);
            if (!t) break;
            auto type = r.string(*t, "type", ip);
            if (type && *type != "custom")
                continue;  // server tools (web_search...) have no schema here
            ToolDefinition def;
            if (auto name = r.string(*t, "name", ip, true)) def.name.assign(*name);
            if (auto d = r.string(*t, "description", ip)) def.description.assign(*d);
            if (const json::object* schema = r.object(*t, "input_schema", ip, true)) {
                def.parameters = to_json_text(*schema);
            }
            def.strict = r.boolean(*t, "strict", ip).value_or(false);
            req.tools.push_back(std::move(def));
        }
    }
    req.temperature = r.number(o, "temperature", top, false, kProbabilityRange);  // Anthropic: 0-1
    req.top_p = r.number(o, "top_p", top, false, kProbabilityRange);
    Path sp = top.key("stop_sequences");
    if (const json::array* stop = r.array(o, "stop_sequences", top)) {
        for (std::size_t i = 0; i < stop->size(); ++i) {
            if (!(*stop)[i].is_string()) {
                r.fail(sp.at(i), "expected a string");
                break;
            }
            req.stop.emplace_back((*stop)[i].get_string());
        }
    }
    req.stream = r.boolean(o, "stream", top).value_or(false);
    read_anthropic_options(r, o, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_anthropic_request(const ChatRequest& req) {
    json::object o;
    o["model"] = req.model;
    o["max_tokens"] = req.max_tokens.value_or(kAnthropicDefaultMaxTokens);
    std::vector<ContentPart> system;
    json::array msgs;
    json::array pending_results;  // tool results waiting for their user message
    Path root;
    Path mp = root.key("messages");
    for (std::size_t i = 0; i < req.messages.size(); ++i) {
        const Message& m = req.messages[i];
        switch (m.role) {
            case Role::system:
                system.insert(system.end(), m.content.begin(), m.content.end());
                break;
            case Role::tool: {
                json::object b{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}};
                if (!m.content.empty()) b["content"] = blocks_or_string(m.content, {}, {});
                pending_results.push_back(std::move(b));
                break;
            }
            case Role::user:
                msgs.push_back(json::object{
                    {"role", "user"},
                    {"content", blocks_or_string(m.content, std::move(pending_results), {})}});
                pending_results = json::array();
                break;
            case Role::assistant: {
                if (!pending_results.empty()) {
                    msgs.push_back(
                        json::object{{"role", "user"}, {"content", std::move(pending_results)}});
                    pending_results = json::array();
                }
                json::array calls;
                Path ip = mp.at(i);
                Path tp = ip.key("tool_calls");
                for (std::size_t k = 0; k < m.tool_calls.size(); ++k) {
                    const ToolCall& tc = m.tool_calls[k];
                    auto input = tc.arguments.empty() ? std::optional<json::object>(json::object())
                                                      : parse_json_object(tc.arguments);
                    if (!input) {
                        Path kp = tp.at(k);
                        Path ap = kp.key("arguments");
                        return Error(Errc::bad_request, ap.str() + ": expected a JSON object");
                    }
                    calls.push_back(json::object{{"type", "tool_use"},
                                                 {"id", tc.id},
                                                 {"name", tc.name},
                                                 {"input", std::move(*input)}});
                }
                msgs.push_back(
                    json::object{{"role", "assistant"},
                                 {"content", blocks_or_string(m.content, {}, std::move(calls))}});
                break;
            }
        }
    }
    if (!pending_results.empty()) {
        msgs.push_back(json::object{{"role", "user"}, {"content", std::move(pending_results)}});
    }
    if (!system.empty()) o["system"] = blocks_or_string(system, {}, {});
    o["messages"] = std::move(msgs);
    if (!req.tools.empty()) {
        json::array tools;
        for (const ToolDefinition& t : req.tools) {
            json::object jt{{"name", t.name}};
            if (!t.description.empty()) jt["description"] = t.description;
            auto schema = t.parameters.empty()
                              ? std::optional<json::object>(json::object{{"type", "object"}})
                              : parse_json_object(t.parameters);
            if (!schema)
                return Error(Errc::bad_request,
                             "tools: parameters of " + t.name + ": expected a JSON object");
            jt["input_schema"] = std::move(*schema);
            if (t.strict) jt["strict"] = true;
            tools.push_back(std::move(jt));
        }
        o["tools"] = std::move(tools);
    }
    if (req.temperature) o["temperature"] = *req.temperature;
    if (req.top_p) o["top_p"] = *req.top_p;
    if (!req.stop.empty()) {
        json::array stop;
        for (const auto& s : req.stop) stop.emplace_back(s);
        o["stop_sequences"] = std::move(stop);
    }
    if (auto options = write_anthropic_options(req, o); !options) return options.error();
    if (req.stream) o["stream"] = true;
    return json::serialize(o);
}

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

Result<void> AnthropicStreamDecoder::decode(std::string_view event, std::string_view data,
                                            std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& o = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    std::size_t first = out.size();
    std::string_view type = event;
    if (auto t = r.string(o, "type", top)) type = *t;
    if (type == "message_start") {
        Path mp = top.key("message");
        if (const json::object* m = r.object(o, "message", top, true)) {
            StreamDelta role = StreamDelta::make(K::role);
            if (auto id = r.string(*m, "id", mp)) role.id.assign(*id);
            if (auto model = r.string(*m, "model", mp)) role.name.assign(*model);
            out.push_back(std::move(role));
            Path up = mp.key("usage");
            if (const json::object* u = r.object(*m, "usage", mp)) {
                StreamDelta d = StreamDelta::make(K::usage);
                d.usage = read_usage(r, *u, up);
                out.push_back(std::move(d));
            }
        }
    } else if (type == "content_block_start") {
        auto index = r.integer(o, "index", top, true);
        Path bp = top.key("content_block");
        const json::object* b = r.object(o, "content_block", top, true);
        if (b && index) {
            auto btype = r.string(*b, "type", bp, true);
            if (btype == "tool_use") {
                StreamDelta d = StreamDelta::make(K::tool_call);
                d.index = static_cast<int>(tool_index_by_block_.size());
                if (tool_index_by_block_.size() < 4096) tool_index_by_block_[*index] = d.index;
                if (auto id = r.string(*b, "id", bp)) d.id.assign(*id);
                if (auto name = r.string(*b, "name", bp)) d.name.assign(*name);
                out.push_back(std::move(d));
            } else if (btype == "text") {
                if (auto t = r.string(*b, "text", bp); t && !t->empty()) {
                    out.push_back(StreamDelta::make_text(std::string(*t)));
                }
            }
        }
    } else if (type == "content_block_delta") {
        auto index = r.integer(o, "index", top, true);
        Path dp = top.key("delta");
        const json::object* d = r.object(o, "delta", top, true);
        if (d && index) {
            auto dtype = r.string(*d, "type", dp, true);
            if (dtype == "text_delta") {
                if (auto t = r.string(*d, "text", dp, true); t && !t->empty()) {
                    out.push_back(StreamDelta::make_text(std::string(*t)));
                }
            } else if (dtype == "thinking_delta") {
                if (auto t = r.string(*d, "thinking", dp, true); t && !t->empty()) {
                    StreamDelta sd = StreamDelta::make(K::reasoning);
                    sd.text.assign(*t);
                    out.push_back(std::move(sd));
                }
            } else if (dtype == "input_json_delta") {
                auto it = tool_index_by_block_.find(*index);
                auto pj = r.string(*d, "partial_json", dp, true);
                if (it != tool_index_by_block_.end() && pj) {
                    StreamDelta sd = StreamDelta::make(K::tool_call);
                    sd.index = it->second;
                    sd.arguments.assign(*pj);
                    out.push_back(std::move(sd));
                }
            }
        }
    } else if (type == "message_delta") {
        Path dp = top.key("delta");
        if (const json::object* d = r.object(o, "delta", top)) {
            if (auto sr = r.string(*d, "stop_reason", dp)) {
                StreamDelta sd = StreamDelta::make(K::finish);
                sd.finish_reason = parse_stop_reason(*sr);
                out.push_back(std::move(sd));
            }
        }
        Path up = top.key("usage");
        if (const json::object* u = r.object(o, "usage", top)) {
            StreamDelta sd = StreamDelta::make(K::usage);
            sd.usage = read_usage(r, *u, up);
            out.push_back(std::move(sd));
        }
    } else if (type == "message_stop") {
        out.push_back(StreamDelta::make(K::done));
    } else if (type == "error") {
        StreamDelta sd = StreamDelta::make(K::error);
        Path ep = top.key("error");
        if (const json::object* e = r.object(o, "error", top)) {
            if (auto t = r.string(*e, "type", ep)) sd.error_type.assign(*t);
            if (auto m = r.string(*e, "message", ep)) sd.text.assign(*m);
        }
        sd.error_code =
            errc_from_error_type(Api::anthropic, sd.error_type).value_or(Errc::upstream_http_error);
        out.push_back(std::move(sd));
    }
    // ping, content_block_stop, signature/citation deltas and unknown future events carry
    // nothing we model.
    if (r.failed()) {
        out.resize(first);
        return r.take_error();
    }
    if (out.size() == first) out.push_back(StreamDelta::make(K::ignorable));
    return {};
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
