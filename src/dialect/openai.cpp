#include <tokenradar/dialect/openai.hpp>

// The rest of this component and its private helpers.
#include "json_util.hpp"
#include "openai_chunk_scan.hpp"
#include "openai_common.hpp"
#include "openai_tool_calls.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

namespace tokenradar::dialect {

FinishReason openai_finish(std::string_view s) {
    if (s == "stop") return FinishReason::stop;
    if (s == "length") return FinishReason::length;
    if (s == "tool_calls" || s == "function_call") return FinishReason::tool_calls;
    if (s == "content_filter") return FinishReason::content_filter;
    return FinishReason::other;
}

std::string_view openai_finish_text(FinishReason r) {
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

namespace {

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

json::object signature_json(std::string_view signature, const json::storage_ptr& sp = {}) {
    return json::object({{"google", json::object({{"thought_signature", signature}}, sp)}}, sp);
}

}  // namespace

Usage read_openai_usage(Reader& r, const json::object& u, const Path& p) {
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

json::object openai_usage_json(const Usage& u) {
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

void read_tool_calls(Reader& r, const json::array& calls, const Path& path,
                     std::vector<ToolCall>& out) {
    for_each_object(r, calls, path, [&](const json::object& call, const Path& call_path) {
        ToolCall tc;
        if (auto id = r.string(call, "id", call_path)) tc.id.assign(*id);
        Path function_path = call_path.key("function");
        const json::object* function = r.object(call, "function", call_path, true);
        if (!function) return;
        if (auto name = r.string(*function, "name", function_path, true)) tc.name.assign(*name);
        if (auto args = r.string(*function, "arguments", function_path)) tc.arguments.assign(*args);
        tc.signature = read_signature(r, call, call_path);
        out.push_back(std::move(tc));
    });
}

json::array tool_calls_json(const std::vector<ToolCall>& calls, const json::storage_ptr& sp) {
    json::array a(sp);
    for (const ToolCall& tc : calls) {
        json::object call({{"id", tc.id}, {"type", "function"}}, sp);
        call.emplace("function",
                     json::object({{"name", tc.name}, {"arguments", tc.arguments}}, sp));
        if (!tc.signature.empty()) call.emplace("extra_content", signature_json(tc.signature, sp));
        a.push_back(std::move(call));
    }
    return a;
}

Result<ChatResponse> parse_openai_response(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::protocol_error);
    Path top;
    ChatResponse resp;
    read_openai_answer_envelope(r, o, top, resp);
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
                resp.finish_reason = openai_finish(*fr);
        }
    }
    if (r.failed()) return r.take_error();
    return resp;
}

void read_openai_answer_envelope(Reader& r, const json::object& o, const Path& top,
                                 ChatResponse& resp) {
    if (auto id = r.string(o, "id", top)) resp.id.assign(*id);
    if (auto model = r.string(o, "model", top)) resp.model.assign(*model);
    resp.created = r.integer(o, "created", top).value_or(0);
    Path up = top.key("usage");
    if (const json::object* u = r.object(o, "usage", top))
        resp.usage = read_openai_usage(r, *u, up);
}

std::string write_openai_answer(const ChatResponse& resp, std::string_view object,
                                json::object choice) {
    if (resp.finish_reason)
        choice["finish_reason"] = openai_finish_text(*resp.finish_reason);
    else
        choice["finish_reason"] = nullptr;
    json::object o{
        {"id", resp.id}, {"object", object}, {"created", resp.created}, {"model", resp.model}};
    o["choices"] = json::array{std::move(choice)};
    if (!resp.usage.empty()) o["usage"] = openai_usage_json(resp.usage);
    return json::serialize(o);
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
    return write_openai_answer(
        resp, "chat.completion",
        json::object{{"index", 0}, {"message", std::move(msg)}, {"logprobs", nullptr}});
}

namespace {

// A chunk the scanner took (openai_chunk_scan.hpp): its role, text, finish and usage deltas in
// the full decoder's order, built in place: a StreamDelta holds seven strings, and building
// one and then moving it into `out` cost ~100 instructions per relayed event.
void append_scanned(const OpenAiChunkScanner& scan, std::vector<StreamDelta>& out) {
    const std::size_t before = out.size();
    if (scan.role()) {
        StreamDelta& d = out.emplace_back();
        d.kind = StreamDelta::Kind::role;
        d.id.assign(scan.id());
        d.name.assign(scan.model());
    }
    if (const std::string_view text = scan.text(); !text.empty()) {
        StreamDelta& d = out.emplace_back();
        d.kind = StreamDelta::Kind::text;
        d.text.assign(text);
    }
    if (auto reason = scan.finish()) {
        StreamDelta& d = out.emplace_back();
        d.kind = StreamDelta::Kind::finish;
        d.finish_reason = openai_finish(*reason);
    }
    if (const Usage* usage = scan.usage()) {
        StreamDelta& d = out.emplace_back();
        d.kind = StreamDelta::Kind::usage;
        d.usage = *usage;
    }
    if (out.size() == before) out.emplace_back().kind = StreamDelta::Kind::ignorable;
}

}  // namespace

bool is_openai_done(std::string_view data) noexcept {
    while (!data.empty() && (data.back() == ' ' || data.back() == '\n')) data.remove_suffix(1);
    return data == "[DONE]";
}

StreamDelta openai_error_delta(Reader& r, const json::object& error, const Path& path) {
    StreamDelta d = StreamDelta::make(StreamDelta::Kind::error);
    if (auto message = r.string(error, "message", path)) d.text.assign(*message);
    if (auto type = r.string(error, "type", path)) d.error_type.assign(*type);
    d.error_code =
        errc_from_error_type(Api::openai, d.error_type).value_or(Errc::upstream_http_error);
    if (auto code = Reader::find(error, "code"); code && code->is_string()) {
        if (auto errc = errc_from_error_type(Api::openai, code->get_string())) d.error_code = *errc;
    }
    return d;
}

namespace {

// delta.tool_calls: one tool_call delta per entry, its arguments a fragment.
void decode_tool_calls(Reader& r, const json::array& calls, const Path& path,
                       std::vector<StreamDelta>& out) {
    for_each_object(r, calls, path, [&](const json::object& call, const Path& call_path) {
        StreamDelta d = StreamDelta::make(StreamDelta::Kind::tool_call);
        auto index = r.integer(call, "index", call_path).value_or(0);
        if (index < 0 || index > 1 << 20)
            r.fail_key(call_path, "index", "expected a small non-negative integer");
        d.index = static_cast<int>(index);
        if (auto id = r.string(call, "id", call_path)) d.id.assign(*id);
        Path function_path = call_path.key("function");
        if (const json::object* function = r.object(call, "function", call_path)) {
            if (auto name = r.string(*function, "name", function_path)) d.name.assign(*name);
            if (auto args = r.string(*function, "arguments", function_path))
                d.arguments.assign(*args);
        }
        d.signature = read_signature(r, call, call_path);
        out.push_back(std::move(d));
    });
}

// The delta of choice 0: role (with the chunk's id and model), reasoning, content, tool calls.
void decode_delta(Reader& r, const json::object& chunk, const Path& top, const json::object& delta,
                  const Path& delta_path, std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    if (auto role = r.string(delta, "role", delta_path)) {
        StreamDelta d = StreamDelta::make(K::role);
        if (auto id = r.string(chunk, "id", top)) d.id.assign(*id);
        if (auto model = r.string(chunk, "model", top)) d.name.assign(*model);
        out.push_back(std::move(d));
    }
    // DeepSeek / vLLM send reasoning_content, OpenRouter reasoning; some send
    // both with the same text, so the first non-empty one wins.
    for (std::string_view key : {"reasoning_content", "reasoning"}) {
        if (auto reasoning = r.string(delta, key, delta_path); reasoning && !reasoning->empty()) {
            StreamDelta d = StreamDelta::make(K::reasoning);
            d.text.assign(*reasoning);
            out.push_back(std::move(d));
            break;
        }
    }
    if (auto text = r.string(delta, "content", delta_path); text && !text->empty()) {
        out.push_back(StreamDelta::make_text(std::string(*text)));
    }
    Path calls_path = delta_path.key("tool_calls");
    if (const json::array* calls = r.array(delta, "tool_calls", delta_path)) {
        decode_tool_calls(r, *calls, calls_path, out);
    }
}

// The choices of a chunk; only index 0 is decoded.
void decode_choices(Reader& r, const json::object& chunk, const Path& top,
                    std::vector<StreamDelta>& out) {
    Path choices_path = top.key("choices");
    const json::array* choices = r.array(chunk, "choices", top);
    if (!choices) return;
    for_each_object(r, *choices, choices_path, [&](const json::object& choice, const Path& path) {
        if (r.integer(choice, "index", path).value_or(0) != 0) return;
        Path delta_path = path.key("delta");
        if (const json::object* delta = r.object(choice, "delta", path)) {
            decode_delta(r, chunk, top, *delta, delta_path, out);
        }
        if (auto reason = r.string(choice, "finish_reason", path)) {
            StreamDelta d = StreamDelta::make(StreamDelta::Kind::finish);
            d.finish_reason = openai_finish(*reason);
            out.push_back(std::move(d));
        }
    });
}

}  // namespace

Result<void> OpenAiStreamDecoder::decode(std::string_view /*event*/, std::string_view data,
                                         std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    if (is_openai_done(data)) {
        out.push_back(StreamDelta::make(K::done));
        return {};
    }
    if (scan_ && scan_->scan(data)) {
        ++fast_events_;
        append_scanned(*scan_, out);
        return {};
    }
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& chunk = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    std::size_t first = out.size();
    if (const json::object* error = r.object(chunk, "error", top)) {
        Path error_path = top.key("error");
        StreamDelta d = openai_error_delta(r, *error, error_path);
        if (r.failed()) return r.take_error();
        out.push_back(std::move(d));
        return {};
    }
    decode_choices(r, chunk, top, out);
    Path usage_path = top.key("usage");
    if (const json::object* usage = r.object(chunk, "usage", top)) {
        StreamDelta d = StreamDelta::make(K::usage);
        d.usage = read_openai_usage(r, *usage, usage_path);
        out.push_back(std::move(d));
    }
    return finish_event(r, out, first);
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
            std::string reason(openai_finish_text(d.finish_reason));
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

void write_openai_stream_end(const StreamMeta& meta, std::string_view object, const Usage& usage,
                             std::string& out) {
    if (meta.include_usage && !usage.empty()) {
        json::object chunk{
            {"id", meta.id},       {"object", object},         {"created", meta.created},
            {"model", meta.model}, {"choices", json::array{}}, {"usage", openai_usage_json(usage)}};
        sse::SseWriter::data_line(out, json::serialize(chunk));  // JSON text: one line
    }
    sse::SseWriter::data(out, "[DONE]");
}

void OpenAiStreamEncoder::finish(std::string& out) {
    if (terminated_) return;
    terminated_ = true;
    write_openai_stream_end(meta_, "chat.completion.chunk", usage_, out);
}

}  // namespace tokenradar::dialect

namespace tokenradar::dialect {
OpenAiStreamDecoder::OpenAiStreamDecoder(bool fast_path) : json_(std::make_unique<EventJson>()) {
    if (fast_path) scan_ = std::make_unique<OpenAiChunkScanner>();
}
OpenAiStreamDecoder::~OpenAiStreamDecoder() = default;
}  // namespace tokenradar::dialect
