#include <tokenradar/dialect/openai.hpp>

// The rest of this component and its private helpers.
#include "generation_options.hpp"
#include "json_util.hpp"
#include "openai_chunk_scan.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

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

FinishReason parse_finish(std::string_view s) {
    if (s == "stop") return FinishReason::stop;
    if (s == "length") return FinishReason::length;
    if (s == "tool_calls" || s == "function_call") return FinishReason::tool_calls;
    if (s == "content_filter") return FinishReason::content_filter;
    return FinishReason::other;
}

std::string_view emit_finish(FinishReason r) {
    switch (r) {
        case FinishReason::length:
            return "length";
        case FinishReason::tool_calls:
            return "tool_calls";
        case FinishReason::content_filter:
            return "content_filter";
        default:
            return "stop";
    }
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
    const json::array& parts = v.get_array();
    for (std::size_t j = 0; j < parts.size() && !r.failed(); ++j) {
        Path pp = p.at(j);
        const json::object* part = r.as_object(parts[j], pp);
        if (!part) return;
        auto type = r.string(*part, "type", pp, true);
        if (!type) return;
        if (*type == "text" || *type == "refusal") {
            auto text = r.string(*part, *type == "text" ? "text" : "refusal", pp, true);
            if (text) out.push_back(ContentPart::make_text(std::string(*text)));
        } else if (*type == "image_url") {
            Path ip = pp.key("image_url");
            std::optional<std::string_view> url;
            if (const json::value* iv = Reader::find(*part, "image_url"); iv && iv->is_string()) {
                url = std::string_view(iv->get_string());
            } else if (const json::object* img = r.object(*part, "image_url", pp, true)) {
                url = r.string(*img, "url", ip, true);
            }
            if (!url) return;
            ContentPart c;
            if (split_data_url(*url, c.media_type, c.data)) {
                c.kind = ContentPart::Kind::image_base64;
            } else {
                c.kind = ContentPart::Kind::image_url;
                c.url.assign(*url);
            }
            out.push_back(std::move(c));
        } else {
            r.fail(pp.key("type"), "expected one of text, image_url");
        }
    }
}

json::value content_json(const std::vector<ContentPart>& parts) {
    if (parts.size() == 1 && parts[0].kind == ContentPart::Kind::text) {
        return json::string(parts[0].text);
    }
    json::array a;
    for (const ContentPart& c : parts) {
        switch (c.kind) {
            case ContentPart::Kind::text:
                a.push_back(json::object{{"type", "text"}, {"text", c.text}});
                break;
            case ContentPart::Kind::image_url:
                a.push_back(json::object{{"type", "image_url"},
                                         {"image_url", json::object{{"url", c.url}}}});
                break;
            case ContentPart::Kind::image_base64:
                a.push_back(json::object{
                    {"type", "image_url"},
                    {"image_url",
                     json::object{{"url", "data:" + c.media_type + ";base64," + c.data}}}});
                break;
        }
    }
    return a;
}

// Google's OpenAI-compatible endpoint carries Gemini's thoughtSignature of a function call
// as tool_calls[].extra_content.google.thought_signature.
std::string read_signature(Reader& r, const json::object& call, const Path& cp) {
    Path ep = cp.key("extra_content");
    const json::object* extra = r.object(call, "extra_content", cp);
    Path gp = ep.key("google");
    const json::object* google = extra ? r.object(*extra, "google", ep) : nullptr;
    auto sig = google ? r.string(*google, "thought_signature", gp) : std::nullopt;
    return sig ? std::string(*sig) : std::string();
}

json::object signature_json(std::string_view signature) {
    return json::object{{"google", json::object{{"thought_signature", signature}}}};
}

void read_tool_calls(Reader& r, const json::array& calls, const Path& p,
                     std::vector<ToolCall>& out) {
    for (std::size_t k = 0; k < calls.size() && !r.failed(); ++k) {
        Path cp = p.at(k);
        const json::object* call = r.as_object(calls[k], cp);
        if (!call) return;
        ToolCall tc;
        if (auto id = r.string(*call, "id", cp)) tc.id.assign(*id);
        Path fp = cp.key("function");
        const json::object* fn = r.object(*call, "function", cp, true);
        if (!fn) return;
        if (auto name = r.string(*fn, "name", fp, true)) tc.name.assign(*name);
        if (auto args = r.string(*fn, "arguments", fp)) tc.arguments.assign(*args);
        tc.signature = read_signature(r, *call, cp);
        out.push_back(std::move(tc));
    }
}

json::array tool_calls_json(const std::vector<ToolCall>& calls) {
    json::array a;
    for (const ToolCall& tc : calls) {
        json::object call{
            {"id", tc.id},
            {"type", "function"},
            {"function", json::object{{"name", tc.name}, {"arguments", tc.arguments}}}};
        if (!tc.signature.empty()) call["extra_content"] = signature_json(tc.signature);
        a.push_back(std::move(call));
    }
    return a;
}

Usage read_usage(Reader& r, const json::object& u, const Path& p) {
    Usage out;
    out.prompt_tokens = r.integer(u, "prompt_tokens", p);
    out.output_tokens = r.integer(u, "completion_tokens", p);
    Path pd = p.key("prompt_tokens_details");
    if (const json::object* d = r.object(u, "prompt_tokens_details", p)) {
        out.cached_prompt_tokens = r.integer(*d, "cached_tokens", pd);
    }
    Path cd = p.key("completion_tokens_details");
    if (const json::object* d = r.object(u, "completion_tokens_details", p)) {
        out.reasoning_tokens = r.integer(*d, "reasoning_tokens", cd);
    }
    return out;
}

json::object usage_json(const Usage& u) {
    json::object o;
    std::int64_t prompt = u.prompt_tokens.value_or(0);
    std::int64_t output = u.output_tokens.value_or(0);
    o["prompt_tokens"] = prompt;
    o["completion_tokens"] = output;
    o["total_tokens"] = prompt + output;
    if (u.cached_prompt_tokens) {
        o["prompt_tokens_details"] = json::object{{"cached_tokens", *u.cached_prompt_tokens}};
    }
    if (u.reasoning_tokens) {
        o["completion_tokens_details"] = json::object{{"reasoning_tokens", *u.reasoning_tokens}};
    }
    return o;
}

}  // namespace

Result<ChatRequest> parse_openai_request(std::string_view body) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size()));
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    if (auto model = r.string(o, "model", top, true)) req.model.assign(*model);
    Path mp = top.key("messages");
    const json::array* msgs = r.array(o, "messages", top, true);
    for (std::size_t i = 0; msgs && i < msgs->size() && !r.failed(); ++i) {
        Path ip = mp.at(i);
        const json::object* m = r.as_object((*msgs)[i], ip);
        if (!m) break;
        Message msg;
        auto role = r.string(*m, "role", ip, true);
        if (!role) break;
        auto parsed = parse_role(*role);
        if (!parsed) {
            r.fail_key(ip, "role", kRoles);
            break;
        }
        msg.role = *parsed;
        if (const json::value* c = Reader::find(*m, "content")) {
            Path cp = ip.key("content");
            read_content(r, *c, cp, msg.content);
        }
        if (msg.role == Role::assistant) {
            Path tp = ip.key("tool_calls");
            if (const json::array* calls = r.array(*m, "tool_calls", ip)) {
                read_tool_calls(r, *calls, tp, msg.tool_calls);
            }
        }
        if (msg.role == Role::tool) {
            if (auto id = r.string(*m, "tool_call_id", ip, true)) msg.tool_call_id.assign(*id);
            if (auto name = r.string(*m, "name", ip)) msg.name.assign(*name);
        }
        req.messages.push_back(std::move(msg));
    }
    Path tp = top.key("tools");
    if (const json::array* tools = r.array(o, "tools", top)) {
        for (std::size_t i = 0; i < tools->size() && !r.failed(); ++i) {
            Path ip = tp.at(i);
            const json::object* t = r.as_object((*tools)[i], ip);
            if (!t) break;
            Path fp = ip.key("function");
            const json::object* fn = r.object(*t, "function", ip, true);
            if (!fn) break;
            ToolDefinition def;
            if (auto name = r.string(*fn, "name", fp, true)) def.name.assign(*name);
            if (auto d = r.string(*fn, "description", fp)) def.description.assign(*d);
            if (const json::object* params = r.object(*fn, "parameters", fp)) {
                def.parameters = to_json_text(*params);
            }
            def.strict = r.boolean(*fn, "strict", fp).value_or(false);
            req.tools.push_back(std::move(def));
        }
    }
    req.max_tokens = r.integer_at_least(o, "max_completion_tokens", top, 0);
    if (!req.max_tokens) req.max_tokens = r.integer_at_least(o, "max_tokens", top, 0);
    req.temperature = r.number(o, "temperature", top, false, kTemperatureRange);
    req.top_p = r.number(o, "top_p", top, false, kProbabilityRange);
    if (const json::value* stop = Reader::find(o, "stop")) {
        if (stop->is_string()) {
            req.stop.emplace_back(stop->get_string());
        } else if (stop->is_array()) {
            Path sp = top.key("stop");
            for (std::size_t i = 0; i < stop->get_array().size(); ++i) {
                const json::value& s = stop->get_array()[i];
                if (!s.is_string()) {
                    r.fail(sp.at(i), "expected a string");
                    break;
                }
                req.stop.emplace_back(s.get_string());
            }
        } else {
            r.fail_key(top, "stop", "expected a string or an array of strings");
        }
    }
    req.stream = r.boolean(o, "stream", top).value_or(false);
    Path sop = top.key("stream_options");
    if (const json::object* so = r.object(o, "stream_options", top)) {
        req.include_usage = r.boolean(*so, "include_usage", sop).value_or(false);
    }
    read_openai_options(r, o, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<std::string> emit_openai_request(const ChatRequest& req) {
    json::object o;
    o["model"] = req.model;
    json::array msgs;
    for (const Message& m : req.messages) {
        json::object jm;
        jm["role"] = to_string(m.role);
        if (m.role == Role::assistant && m.content.empty()) {
            jm["content"] = nullptr;
        } else {
            jm["content"] = content_json(m.content);
        }
        if (!m.tool_calls.empty()) jm["tool_calls"] = tool_calls_json(m.tool_calls);
        if (m.role == Role::tool) {
            jm["tool_call_id"] = m.tool_call_id;
            if (!m.name.empty()) jm["name"] = m.name;
        }
        msgs.push_back(std::move(jm));
    }
    o["messages"] = std::move(msgs);
    if (!req.tools.empty()) {
        json::array tools;
        for (const ToolDefinition& t : req.tools) {
            json::object fn{{"name", t.name}};
            if (!t.description.empty()) fn["description"] = t.description;
            if (!t.parameters.empty()) {
                auto params = parse_json_object(t.parameters);
                if (!params)
                    return Error(Errc::bad_request,
                                 "tools: parameters of " + t.name + ": expected a JSON object");
                fn["parameters"] = std::move(*params);
            }
            if (t.strict) fn["strict"] = true;
            tools.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
        }
        o["tools"] = std::move(tools);
    }
    if (req.max_tokens) o["max_tokens"] = *req.max_tokens;
    if (req.temperature) o["temperature"] = *req.temperature;
    if (req.top_p) o["top_p"] = *req.top_p;
    if (!req.stop.empty()) {
        json::array stop;
        for (const auto& s : req.stop) stop.emplace_back(s);
        o["stop"] = std::move(stop);
    }
    write_openai_options(req, o);
    if (req.stream) {
        o["stream"] = true;
        if (req.include_usage) o["stream_options"] = json::object{{"include_usage", true}};
    }
    return json::serialize(o);
}

Result<ChatResponse> parse_openai_response(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::protocol_error);
    Path top;
    ChatResponse resp;
    if (auto id = r.string(o, "id", top)) resp.id.assign(*id);
    if (auto model = r.string(o, "model", top)) resp.model.assign(*model);
    resp.created = r.integer(o, "created", top).value_or(0);
    Path cp = top.key("choices");
    const json::array* choices = r.array(o, "choices", top, true);
    if (choices && !choices->empty()) {
        Path c0 = cp.at(0);
        if (const json::object* choice = r.as_object((*choices)[0], c0)) {
            Path mp = c0.key("message");
            if (const json::object* m = r.object(*choice, "message", c0, true)) {
                if (auto text = r.string(*m, "content", mp)) resp.text.assign(*text);
                if (auto rc = r.string(*m, "reasoning_content", mp))
                    resp.reasoning.assign(*rc);
                else if (auto rs = r.string(*m, "reasoning", mp))
                    resp.reasoning.assign(*rs);
                Path tp = mp.key("tool_calls");
                if (const json::array* calls = r.array(*m, "tool_calls", mp)) {
                    read_tool_calls(r, *calls, tp, resp.tool_calls);
                }
            }
            if (auto fr = r.string(*choice, "finish_reason", c0))
                resp.finish_reason = parse_finish(*fr);
        }
    }
    Path up = top.key("usage");
    if (const json::object* u = r.object(o, "usage", top)) resp.usage = read_usage(r, *u, up);
    if (r.failed()) return r.take_error();
    return resp;
}

std::string emit_openai_response(const ChatResponse& resp) {
    json::object msg;
    msg["role"] = "assistant";
    if (resp.text.empty() && !resp.tool_calls.empty())
        msg["content"] = nullptr;
    else
        msg["content"] = resp.text;
    if (!resp.reasoning.empty()) msg["reasoning_content"] = resp.reasoning;
    if (!resp.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(resp.tool_calls);
    json::object choice{{"index", 0}, {"message", std::move(msg)}, {"logprobs", nullptr}};
    if (resp.finish_reason)
        choice["finish_reason"] = emit_finish(*resp.finish_reason);
    else
        choice["finish_reason"] = nullptr;
    json::object o{{"id", resp.id},
                   {"object", "chat.completion"},
                   {"created", resp.created},
                   {"model", resp.model}};
    o["choices"] = json::array{std::move(choice)};
    if (!resp.usage.empty()) o["usage"] = usage_json(resp.usage);
    return json::serialize(o);
}

Result<void> OpenAiStreamDecoder::decode(std::string_view /*event*/, std::string_view data,
                                         std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    std::string_view trimmed = data;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n'))
        trimmed.remove_suffix(1);
    if (trimmed == "[DONE]") {
        out.push_back(StreamDelta::make(K::done));
        return {};
    }
    if (scan_ && scan_->scan(data)) {
        ++fast_events_;
        // Deltas built in place: a StreamDelta holds seven strings, and building one and then
        // moving it into `out` cost ~100 instructions per relayed event.
        const std::size_t before = out.size();
        if (!scan_->text().empty()) {
            StreamDelta& d = out.emplace_back();
            d.kind = K::text;
            d.text.assign(scan_->text());
        }
        if (auto fr = scan_->finish()) {
            StreamDelta& d = out.emplace_back();
            d.kind = K::finish;
            d.finish_reason = parse_finish(*fr);
        }
        if (out.size() == before) out.emplace_back().kind = K::ignorable;
        return {};
    }
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
        if (auto t = r.string(*err, "type", ep)) d.error_type.assign(*t);
        d.error_code =
            errc_from_error_type(Api::openai, d.error_type).value_or(Errc::upstream_http_error);
        if (auto code = Reader::find(*err, "code"); code && code->is_string()) {
            if (auto e = errc_from_error_type(Api::openai, code->get_string())) d.error_code = *e;
        }
        if (r.failed()) return r.take_error();
        out.push_back(std::move(d));
        return {};
    }
    Path cp = top.key("choices");
    if (const json::array* choices = r.array(o, "choices", top)) {
        for (std::size_t i = 0; i < choices->size(); ++i) {
            Path ip = cp.at(i);
            const json::object* choice = r.as_object((*choices)[i], ip);
            if (!choice) break;
            if (r.integer(*choice, "index", ip).value_or(0) != 0) continue;
            Path dp = ip.key("delta");
            if (const json::object* delta = r.object(*choice, "delta", ip)) {
                if (auto role = r.string(*delta, "role", dp)) {
                    StreamDelta d = StreamDelta::make(K::role);
                    if (auto id = r.string(o, "id", top)) d.id.assign(*id);
                    if (auto model = r.string(o, "model", top)) d.name.assign(*model);
                    out.push_back(std::move(d));
                }
                // DeepSeek / vLLM send reasoning_content, OpenRouter reasoning; some send
                // both with the same text, so the first non-empty one wins.
                for (std::string_view key : {"reasoning_content", "reasoning"}) {
                    if (auto rc = r.string(*delta, key, dp); rc && !rc->empty()) {
                        StreamDelta d = StreamDelta::make(K::reasoning);
                        d.text.assign(*rc);
                        out.push_back(std::move(d));
                        break;
                    }
                }
                if (auto text = r.string(*delta, "content", dp); text && !text->empty()) {
                    out.push_back(StreamDelta::make_text(std::string(*text)));
                }
                Path tp = dp.key("tool_calls");
                if (const json::array* calls = r.array(*delta, "tool_calls", dp)) {
                    for (std::size_t k = 0; k < calls->size(); ++k) {
                        Path kp = tp.at(k);
                        const json::object* call = r.as_object((*calls)[k], kp);
                        if (!call) break;
                        StreamDelta d = StreamDelta::make(K::tool_call);
                        auto index = r.integer(*call, "index", kp).value_or(0);
                        if (index < 0 || index > 1 << 20)
                            r.fail_key(kp, "index", "expected a small non-negative integer");
                        d.index = static_cast<int>(index);
                        if (auto id = r.string(*call, "id", kp)) d.id.assign(*id);
                        Path fp = kp.key("function");
                        if (const json::object* fn = r.object(*call, "function", kp)) {
                            if (auto name = r.string(*fn, "name", fp)) d.name.assign(*name);
                            if (auto args = r.string(*fn, "arguments", fp))
                                d.arguments.assign(*args);
                        }
                        d.signature = read_signature(r, *call, kp);
                        out.push_back(std::move(d));
                    }
                }
            }
            if (auto fr = r.string(*choice, "finish_reason", ip)) {
                StreamDelta d = StreamDelta::make(K::finish);
                d.finish_reason = parse_finish(*fr);
                out.push_back(std::move(d));
            }
        }
    }
    Path up = top.key("usage");
    if (const json::object* u = r.object(o, "usage", top)) {
        StreamDelta d = StreamDelta::make(K::usage);
        d.usage = read_usage(r, *u, up);
        out.push_back(std::move(d));
    }
    if (r.failed()) {
        out.resize(first);
        return r.take_error();
    }
    if (out.size() == first) out.push_back(StreamDelta::make(K::ignorable));
    return {};
}

namespace {

void write_chunk(const StreamMeta& meta, json::object delta, const char* finish, std::string& out) {
    json::object choice{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}};
    if (finish)
        choice["finish_reason"] = finish;
    else
        choice["finish_reason"] = nullptr;
    json::object chunk{{"id", meta.id},
                       {"object", "chat.completion.chunk"},
                       {"created", meta.created},
                       {"model", meta.model}};
    chunk["choices"] = json::array{std::move(choice)};
    if (meta.include_usage) chunk["usage"] = nullptr;
    sse::SseWriter::data_line(out, json::serialize(chunk));  // JSON text: one line
}

}  // namespace

// Text and reasoning deltas are most of a stream: they are written from a cached prefix and
// suffix instead of a JSON object per chunk. The bytes equal write_chunk's (a test checks).
void OpenAiStreamEncoder::write_text_chunk(std::string_view field, std::string_view text,
                                           std::string& out) {
    if (text_prefix_.empty()) {
        text_prefix_ =
            "data: {\"id\":" + json::serialize(json::string(meta_.id)) +
            ",\"object\":\"chat.completion.chunk\",\"created\":" + std::to_string(meta_.created) +
            ",\"model\":" + json::serialize(json::string(meta_.model)) +
            ",\"choices\":[{\"index\":0,\"delta\":{";
        text_suffix_ = std::string("},\"logprobs\":null,\"finish_reason\":null}]") +
                       (meta_.include_usage ? ",\"usage\":null}\n\n" : "}\n\n");
    }
    out += text_prefix_;
    out += '"';
    out += field;
    out += "\":";
    out += json::serialize(json::string_view(text));
    out += text_suffix_;
}

void OpenAiStreamEncoder::ensure_role(std::string& out) {
    if (role_sent_) return;
    role_sent_ = true;
    write_chunk(meta_, json::object{{"role", "assistant"}, {"content", ""}}, nullptr, out);
}

void OpenAiStreamEncoder::encode(const StreamDelta& d, std::string& out) {
    using K = StreamDelta::Kind;
    if (terminated_) return;
    switch (d.kind) {
        case K::role:
            meta_.adopt(d);
            ensure_role(out);
            break;
        case K::text:
            ensure_role(out);
            write_text_chunk("content", d.text, out);
            break;
        case K::reasoning:
            ensure_role(out);
            write_text_chunk("reasoning_content", d.text, out);
            break;
        case K::tool_call: {
            ensure_role(out);
            json::object call{{"index", d.index}};
            json::object fn;
            if (!d.id.empty()) {
                call["id"] = d.id;
                call["type"] = "function";
                fn["name"] = d.name;
            } else if (!d.name.empty()) {
                fn["name"] = d.name;
            }
            fn["arguments"] = d.arguments;
            call["function"] = std::move(fn);
            if (!d.signature.empty()) call["extra_content"] = signature_json(d.signature);
            write_chunk(meta_, json::object{{"tool_calls", json::array{std::move(call)}}}, nullptr,
                        out);
            break;
        }
        case K::usage:
            usage_.merge(d.usage);
            break;
        case K::finish: {
            ensure_role(out);
            std::string reason(emit_finish(d.finish_reason));
            write_chunk(meta_, json::object{}, reason.c_str(), out);
            break;
        }
        case K::error: {
            json::object err{
                {"message", d.text},
                {"type", d.error_type.empty() ? std::string(error_type(Api::openai, d.error_code))
                                              : d.error_type},
                {"param", nullptr},
                {"code", nullptr}};
            sse::SseWriter::data(out, json::serialize(json::object{{"error", std::move(err)}}));
            terminated_ = true;
            break;
        }
        case K::done:
            finish(out);
            break;
        case K::ignorable:
            break;
    }
}

void OpenAiStreamEncoder::finish(std::string& out) {
    if (terminated_) return;
    terminated_ = true;
    if (meta_.include_usage && !usage_.empty()) {
        json::object chunk{{"id", meta_.id},           {"object", "chat.completion.chunk"},
                           {"created", meta_.created}, {"model", meta_.model},
                           {"choices", json::array{}}, {"usage", usage_json(usage_)}};
        sse::SseWriter::data_line(out, json::serialize(chunk));  // JSON text: one line
    }
    sse::SseWriter::data(out, "[DONE]");
}

}  // namespace tokenradar::dialect

namespace tokenradar::dialect {
OpenAiStreamDecoder::OpenAiStreamDecoder(bool fast_path) : json_(std::make_unique<EventJson>()) {
    if (fast_path) scan_ = std::make_unique<OpenAiChunkScanner>();
}
OpenAiStreamDecoder::~OpenAiStreamDecoder() = default;
}  // namespace tokenradar::dialect
