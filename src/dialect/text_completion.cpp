#include <tokenradar/dialect/text_completion.hpp>

// The rest of this component and its private helpers.
#include "json_util.hpp"
#include "openai_common.hpp"

#include <tokenradar/sse/sse_writer.hpp>

#include <fmt/format.h>

namespace tokenradar::dialect {

namespace {

constexpr std::string_view kPromptShapes =
    "expected a string, an array of strings or an array of token ids";

// One prompt of token ids as text: its numbers, space-separated (the sim counts its words).
std::optional<std::string> token_prompt(const json::array& ids) {
    std::string text;
    for (const json::value& id : ids) {
        if (!id.is_int64() && !id.is_uint64()) return std::nullopt;
        if (!text.empty()) text += ' ';
        text += json::serialize(id);
    }
    return text;
}

void add_prompt(ChatRequest& req, std::string text) {
    Message message;
    message.role = Role::user;
    message.content.push_back(ContentPart::make_text(std::move(text)));
    req.messages.push_back(std::move(message));
}

// The most prompts one batch may hold. Each becomes a message: without a bound, a 4 MiB body
// of `"",` items would be a million of them, hundreds of MB for one request.
constexpr std::size_t kMaxBatchPrompts = 2048;

// `prompt`: a string, an array of strings (a batch), an array of token ids, or an array of
// those (a batch of token prompts). Required, as OpenAI requires it.
void read_prompt(Reader& r, const json::object& body, const Path& top, ChatRequest& req) {
    const json::value* prompt = Reader::find(body, "prompt");
    if (prompt == nullptr) {
        r.fail_key(top, "prompt", "required");
        return;
    }
    if (prompt->is_string()) {
        add_prompt(req, std::string(prompt->get_string()));
        return;
    }
    const json::array* items = prompt->if_array();
    if (items == nullptr || items->empty()) {
        r.fail_key(top, "prompt", kPromptShapes);
        return;
    }
    if ((*items)[0].is_number()) {
        if (auto text = token_prompt(*items)) {
            add_prompt(req, std::move(*text));
        } else {
            r.fail_key(top, "prompt", kPromptShapes);
        }
        return;
    }
    if (items->size() > kMaxBatchPrompts) {
        r.fail_key(
            top, "prompt",
            fmt::format("at most {} prompts in a batch, got {}", kMaxBatchPrompts, items->size()));
        return;
    }
    Path prompt_path = top.key("prompt");
    for (std::size_t i = 0; i < items->size(); ++i) {
        const json::value& item = (*items)[i];
        std::optional<std::string> text;
        if (item.is_string()) {
            text.emplace(item.get_string());
        } else if (item.is_array()) {
            text = token_prompt(item.get_array());
        }
        if (!text) {
            r.fail(prompt_path.at(i), "expected a string or an array of token ids");
            return;
        }
        add_prompt(req, std::move(*text));
    }
}

// Choice 0 of an answer or a chunk: its text and finish reason.
struct ChoiceZero {
    std::optional<std::string_view> text;
    std::optional<std::string_view> finish;
};

// `choices`, of which only index 0 is read; an absent (or null) array reads as none.
ChoiceZero read_choices(Reader& r, const json::object& o, const Path& top, bool required) {
    ChoiceZero zero;
    Path choices_path = top.key("choices");
    const json::array* choices = r.array(o, "choices", top, required);
    if (choices == nullptr) return zero;
    for_each_object(r, *choices, choices_path, [&](const json::object& choice, const Path& path) {
        if (r.integer(choice, "index", path).value_or(0) != 0) return;
        zero.text = r.string(choice, "text", path);
        zero.finish = r.string(choice, "finish_reason", path);
    });
    return zero;
}

}  // namespace

Result<ChatRequest> parse_text_completion_request(std::string_view body) {
    auto root = parse_object(body, Errc::bad_request, request_storage(body.size()));
    if (!root) return root.error();
    Reader r(Errc::bad_request);
    Path top;
    ChatRequest req;
    if (auto model = r.string(*root, "model", top, true)) req.model.assign(*model);
    if (!r.failed()) read_prompt(r, *root, top, req);
    if (!r.failed()) read_openai_sampling(r, *root, top, req);
    if (r.failed()) return r.take_error();
    adopt(req.original, std::move(*root));
    return req;
}

Result<ChatResponse> parse_text_completion(std::string_view body) {
    ResponseArena arena;  // outlives `root`; the response copies what it keeps
    auto root = parse_object(body, Errc::protocol_error, arena.storage());
    if (!root) return root.error();
    const json::object& o = *root;
    Reader r(Errc::protocol_error);
    Path top;
    if (auto object = r.string(o, "object", top); object && *object != "text_completion") {
        r.fail_key(top, "object", "expected \"text_completion\"");
    }
    ChatResponse resp;
    read_openai_answer_envelope(r, o, top, resp);
    const ChoiceZero zero = read_choices(r, o, top, true);
    if (zero.text) resp.text.assign(*zero.text);
    if (zero.finish) resp.finish_reason = openai_finish(*zero.finish);
    if (r.failed()) return r.take_error();
    return resp;
}

std::string emit_text_completion(const ChatResponse& resp) {
    return write_openai_answer(
        resp, "text_completion",
        json::object{{"text", resp.text}, {"index", 0}, {"logprobs", nullptr}});
}

TextCompletionStreamDecoder::TextCompletionStreamDecoder() : json_(std::make_unique<EventJson>()) {}
TextCompletionStreamDecoder::~TextCompletionStreamDecoder() = default;

Result<void> TextCompletionStreamDecoder::decode(std::string_view /*event*/, std::string_view data,
                                                 std::vector<StreamDelta>& out) {
    using K = StreamDelta::Kind;
    if (is_openai_done(data)) {
        out.push_back(StreamDelta::make(K::done));
        return {};
    }
    auto parsed = json_->parse(data);
    if (!parsed) return parsed.error();
    const json::object& chunk = **parsed;
    Reader r(Errc::protocol_error);
    Path top;
    const std::size_t first = out.size();
    if (const json::object* error = r.object(chunk, "error", top)) {
        Path error_path = top.key("error");
        StreamDelta d = openai_error_delta(r, *error, error_path);
        if (r.failed()) return r.take_error();
        out.push_back(std::move(d));
        return {};
    }
    auto id = r.string(chunk, "id", top);
    auto model = r.string(chunk, "model", top);
    if (!identified_ && (id || model)) {
        StreamDelta& role = out.emplace_back();
        role.kind = K::role;
        role.id.assign(id.value_or(""));
        role.name.assign(model.value_or(""));
    }
    const ChoiceZero zero = read_choices(r, chunk, top, false);
    if (zero.text && !zero.text->empty())
        out.push_back(StreamDelta::make_text(std::string(*zero.text)));
    if (zero.finish) {
        StreamDelta& d = out.emplace_back();
        d.kind = K::finish;
        d.finish_reason = openai_finish(*zero.finish);
    }
    Path usage_path = top.key("usage");
    if (const json::object* usage = r.object(chunk, "usage", top)) {
        StreamDelta d = StreamDelta::make(K::usage);
        d.usage = read_openai_usage(r, *usage, usage_path);
        out.push_back(std::move(d));
    }
    auto finished = finish_event(r, out, first);
    if (finished && (id || model)) identified_ = true;
    return finished;
}

void TextCompletionStreamEncoder::write_chunk(std::string_view text, const FinishReason* finish,
                                              std::string& out) const {
    json::object choice{{"text", text}, {"index", 0}, {"logprobs", nullptr}};
    if (finish != nullptr) {
        choice["finish_reason"] = openai_finish_text(*finish);
    } else {
        choice["finish_reason"] = nullptr;
    }
    json::object chunk{{"id", meta_.id},
                       {"object", "text_completion"},
                       {"created", meta_.created},
                       {"model", meta_.model}};
    chunk["choices"] = json::array{std::move(choice)};
    sse::SseWriter::data_line(out, json::serialize(chunk));  // JSON text: one line
}

void TextCompletionStreamEncoder::encode(const StreamDelta& d, std::string& out) {
    using K = StreamDelta::Kind;
    if (terminated_) return;
    switch (d.kind) {
        case K::role:
            meta_.adopt(d);
            break;
        case K::text:
            if (!d.text.empty()) write_chunk(d.text, nullptr, out);
            break;
        case K::finish:
            write_chunk({}, &d.finish_reason, out);
            break;
        case K::usage:
            usage_.merge(d.usage);
            break;
        case K::error:
            // The upstream's own error type goes in `code`, as the gateway's translator does.
            sse::SseWriter::data(out, openai_error_body(d.error_code, d.text, {}, d.error_type));
            terminated_ = true;
            break;
        case K::done:
            finish(out);
            break;
        case K::reasoning:
        case K::tool_call:
        case K::ignorable:
            break;
    }
}

void TextCompletionStreamEncoder::finish(std::string& out) {
    if (terminated_) return;
    terminated_ = true;
    write_openai_stream_end(meta_, "text_completion", usage_, out);
}

}  // namespace tokenradar::dialect
