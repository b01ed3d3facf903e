#include <tokenradar/dialect/gemini.hpp>

// The rest of this component and its private helpers.
#include "gemini_function_call.hpp"
#include "json_util.hpp"

#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/sse/sse_writer.hpp>

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

// The thoughtSignature sits on the part, beside functionCall.
std::string read_signature(Reader& r, const json::object& part, const Path& part_path) {
    auto sig = r.string(part, "thoughtSignature", part_path);
    if (!sig) sig = r.string(part, "thought_signature", part_path);
    return sig ? std::string(*sig) : std::string();
}

// Reads candidates[0] of a GenerateContentResponse into text / reasoning / tool calls.
struct CandidateView {
    std::vector<std::pair<bool, std::string_view>> texts;  // (thought, text)
    std::vector<ToolCall> calls;
    std::optional<std::string_view> finish;
    bool prompt_blocked = false;  // promptFeedback.blockReason: no candidates at all
    bool has_candidates = false;  // a non-empty candidates array
};

// The parts of candidates[0].content: text (thought or not) and function calls.
void read_candidate_parts(Reader& r, const json::array& parts, const Path& path,
                          CandidateView& out) {
    for_each_object(r, parts, path, [&](const json::object& part, const Path& part_path) {
        if (auto text = r.string(part, "text", part_path)) {
            out.texts.emplace_back(r.boolean(part, "thought", part_path).value_or(false), *text);
        } else if (const json::object* call = r.object(part, "functionCall", part_path)) {
            Path call_path = part_path.key("functionCall");
            out.calls.push_back(read_function_call(r, *call, call_path, part, part_path,
                                                   /*name_required=*/false));
        }
    });
}

void read_candidate(Reader& r, const json::object& o, const Path& top, CandidateView& out) {
    Path feedback_path = top.key("promptFeedback");
    if (const json::object* feedback = r.object(o, "promptFeedback", top)) {
        out.prompt_blocked = r.string(*feedback, "blockReason", feedback_path).has_value();
    }
    Path candidates_path = top.key("candidates");
    const json::array* candidates = r.array(o, "candidates", top);
    if (!candidates || candidates->empty()) return;
    out.has_candidates = true;
    Path first_path = candidates_path.at(0);
    const json::object* first = r.as_object((*candidates)[0], first_path);
    if (!first) return;
    Path content_path = first_path.key("content");
    if (const json::object* content = r.object(*first, "content", first_path)) {
        Path parts_path = content_path.key("parts");
        if (const json::array* parts = r.array(*content, "parts", content_path))
            read_candidate_parts(r, *parts, parts_path, out);
    }
    out.finish = r.string(*first, "finishReason", first_path);
}

}  // namespace

ToolCall read_function_call(Reader& r, const json::object& call, const Path& call_path,
                            const json::object& part, const Path& part_path, bool name_required) {
    ToolCall tc;
    if (auto id = r.string(call, "id", call_path)) tc.id.assign(*id);
    if (auto name = r.string(call, "name", call_path, name_required)) tc.name.assign(*name);
    const json::object* args = r.object(call, "args", call_path);
    tc.arguments = args ? to_json_text(*args) : "{}";
    tc.signature = read_signature(r, part, part_path);
    return tc;
}

json::object function_call_part(const ToolCall& tc, json::object args) {
    json::object call{{"name", tc.name}, {"args", std::move(args)}};
    if (!tc.id.empty()) call["id"] = tc.id;
    json::object part{{"functionCall", std::move(call)}};
    if (!tc.signature.empty()) part["thoughtSignature"] = tc.signature;
    return part;
}

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
        parts.push_back(function_call_part(tc, args ? std::move(*args) : json::object()));
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
    return finish_event(r, out, first);
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
        parts.push_back(function_call_part(tc, args ? std::move(*args) : json::object()));
    }
    if (parts.empty()) parts.push_back(json::object{{"text", ""}});
    write_chunk(meta_, usage_, std::move(parts), finish_.value_or(FinishReason::stop), out);
}

}  // namespace tokenradar::dialect
