// The Responses door's answers: a `response` object and its typed stream events
// (responses.hpp). Shapes and event order from OpenAI's streaming reference ("Streaming API
// responses") and the openai-node SDK's types and accumulator
// (lib/responses/ResponseAccumulator.ts, 6.x): every event carries `type` and
// `sequence_number` (from 0), item events `output_index` and `item_id`, text events
// `content_index`; lifecycle events carry the whole response, which the SDK takes as its new
// snapshot, so response.completed repeats every output item.
#include <tokenradar/dialect/responses.hpp>

#include "json_util.hpp"

#include <tokenradar/sse/sse_writer.hpp>

#include <fmt/format.h>

#include <optional>
#include <vector>

namespace tokenradar::dialect {

namespace {

struct OutputItem {
    enum class Kind { message, function_call };
    Kind kind = Kind::message;
    std::string id;  // msg_... / fc_...
    std::string text;
    std::string call_id;
    std::string name;
    std::string arguments;
    bool done = false;
};

// What a response object says besides its items.
struct ResponseHead {
    std::string id;  // the upstream's (the response is resp_<id>), or a resp_ id of its own
    std::string model;
    std::int64_t created = 0;
};

json::object text_part(std::string_view text) {
    return json::object{{"type", "output_text"},
                        {"text", text},
                        {"annotations", json::array()},
                        {"logprobs", json::array()}};
}

json::object item_json(const OutputItem& item) {
    const std::string_view status = item.done ? "completed" : "in_progress";
    if (item.kind == OutputItem::Kind::function_call) {
        return json::object{{"type", "function_call"},     {"id", item.id},
                            {"call_id", item.call_id},     {"name", item.name},
                            {"arguments", item.arguments}, {"status", status}};
    }
    json::array content;
    if (item.done || !item.text.empty()) content.push_back(text_part(item.text));  // so far
    return json::object{{"type", "message"},
                        {"id", item.id},
                        {"status", status},
                        {"role", "assistant"},
                        {"content", std::move(content)}};
}

json::object usage_json(const Usage& u) {
    const std::int64_t input = u.prompt_tokens.value_or(0);
    const std::int64_t output = u.output_tokens.value_or(0);
    return json::object{{"input_tokens", input},
                        {"input_tokens_details",
                         json::object{{"cached_tokens", u.cached_prompt_tokens.value_or(0)}}},
                        {"output_tokens", output},
                        {"output_tokens_details",
                         json::object{{"reasoning_tokens", u.reasoning_tokens.value_or(0)}}},
                        {"total_tokens", input + output}};
}

// Why an answer stopped short, as incomplete_details.reason; nullopt when it completed.
std::optional<std::string_view> incomplete_reason(std::optional<FinishReason> finish) {
    if (finish == FinishReason::length) return "max_output_tokens";
    if (finish == FinishReason::content_filter) return "content_filter";
    return std::nullopt;
}

// `status` in_progress (no usage yet), completed / incomplete (from `finish`) or failed.
json::object response_json(const ResponseHead& head, std::string_view status,
                           const std::vector<OutputItem>& items, const Usage* usage,
                           std::optional<FinishReason> finish = std::nullopt) {
    json::array output;
    for (const OutputItem& item : items) output.push_back(item_json(item));
    json::value incomplete;  // null
    if (status == "completed" || status == "incomplete") {
        if (auto reason = incomplete_reason(finish)) {
            status = "incomplete";
            incomplete = json::object{{"reason", *reason}};
        }
    }
    json::value usage_value;
    if (usage != nullptr) usage_value = usage_json(*usage);
    return json::object{{"id", head.id.starts_with("resp_") ? head.id : "resp_" + head.id},
                        {"object", "response"},
                        {"created_at", head.created},
                        {"status", status},
                        {"error", nullptr},
                        {"incomplete_details", std::move(incomplete)},
                        {"model", head.model},
                        {"output", std::move(output)},
                        {"usage", std::move(usage_value)},
                        {"store", false}};  // the gateway keeps nothing
}

}  // namespace

std::string emit_responses_response(const ChatResponse& response, std::int64_t created) {
    const ResponseHead head{response.id, response.model,
                            response.created != 0 ? response.created : created};
    std::vector<OutputItem> items;
    if (!response.text.empty() || response.tool_calls.empty()) {
        OutputItem message;
        message.id = fmt::format("msg_{}_0", response.id);  // as the stream numbers items
        message.text = response.text;
        message.done = true;
        items.push_back(std::move(message));
    }
    for (const ToolCall& call : response.tool_calls) {
        OutputItem item;
        item.kind = OutputItem::Kind::function_call;
        item.id = fmt::format("fc_{}_{}", response.id, items.size());
        item.call_id = call.id;
        item.name = call.name;
        item.arguments = call.arguments;
        item.done = true;
        items.push_back(std::move(item));
    }
    return json::serialize(
        response_json(head, "completed", items, &response.usage, response.finish_reason));
}

struct ResponsesStreamEncoder::State {
    StreamMeta meta;
    std::vector<OutputItem> items;
    std::vector<int> item_of_tool;  // tool-call index -> its item's output_index (-1: none)
    int current = -1;               // the open item's output_index
    Usage usage;
    std::optional<FinishReason> finish;
    std::int64_t sequence = 0;
    bool started = false;
    bool terminated = false;

    ResponseHead head() const { return ResponseHead{meta.id, meta.model, meta.created}; }

    // One event: {"type", "sequence_number", ...fields}.
    void event(std::string& out, std::string_view type, json::object&& fields) {
        json::object o{{"type", type}, {"sequence_number", sequence++}};
        for (auto& [key, value] : fields) o.emplace(key, std::move(value));
        sse::SseWriter::event(out, type, json::serialize(o));
    }

    void start(std::string& out) {
        if (started) return;
        started = true;
        event(out, "response.created",
              json::object{{"response", response_json(head(), "in_progress", items, nullptr)}});
        event(out, "response.in_progress",
              json::object{{"response", response_json(head(), "in_progress", items, nullptr)}});
    }

    int open(std::string& out, OutputItem item) {
        close(out);
        const int index = static_cast<int>(items.size());
        items.push_back(std::move(item));
        current = index;
        const OutputItem& it = items.back();
        event(out, "response.output_item.added",
              json::object{{"output_index", index}, {"item", item_json(it)}});
        if (it.kind == OutputItem::Kind::message) {
            event(out, "response.content_part.added",
                  json::object{{"item_id", it.id},
                               {"output_index", index},
                               {"content_index", 0},
                               {"part", text_part("")}});
        }
        return index;
    }

    void open_message(std::string& out) {
        if (current >= 0 && items[current].kind == OutputItem::Kind::message) return;
        OutputItem message;
        message.id = fmt::format("msg_{}_{}", meta.id, items.size());
        open(out, std::move(message));
    }

    void close(std::string& out) {
        if (current < 0) return;
        OutputItem& it = items[current];
        const int index = current;
        current = -1;
        it.done = true;
        if (it.kind == OutputItem::Kind::message) {
            event(out, "response.output_text.done",
                  json::object{{"item_id", it.id},
                               {"output_index", index},
                               {"content_index", 0},
                               {"text", it.text},
                               {"logprobs", json::array()}});
            event(out, "response.content_part.done",
                  json::object{{"item_id", it.id},
                               {"output_index", index},
                               {"content_index", 0},
                               {"part", text_part(it.text)}});
        } else {
            event(out, "response.function_call_arguments.done",
                  json::object{{"item_id", it.id},
                               {"output_index", index},
                               {"name", it.name},
                               {"arguments", it.arguments}});
        }
        event(out, "response.output_item.done",
              json::object{{"output_index", index}, {"item", item_json(it)}});
    }

    // The hot path (one event per upstream text delta): written as text, the same bytes
    // event() writes, without building an object per delta.
    void text(std::string& out, const std::string& delta) {
        open_message(out);
        OutputItem& it = items[current];
        it.text += delta;
        out +=
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
            "\"sequence_number\":";
        out += std::to_string(sequence++);
        out += ",\"item_id\":";
        out += json::serialize(json::string_view(it.id));
        out += ",\"output_index\":";
        out += std::to_string(current);
        out += ",\"content_index\":0,\"delta\":";
        out += json::serialize(json::string_view(delta));
        out += ",\"logprobs\":[]}\n\n";
    }

    void tool_call(std::string& out, const StreamDelta& d) {
        if (d.index < 0) return;
        const auto slot = static_cast<std::size_t>(d.index);
        if (slot >= item_of_tool.size()) item_of_tool.resize(slot + 1, -1);
        if (item_of_tool[slot] < 0) {
            OutputItem call;
            call.kind = OutputItem::Kind::function_call;
            call.id = fmt::format("fc_{}_{}", meta.id, items.size());
            call.call_id = d.id;
            call.name = d.name;
            item_of_tool[slot] = open(out, std::move(call));
        }
        const int index = item_of_tool[slot];
        OutputItem& it = items[index];
        if (it.call_id.empty()) it.call_id = d.id;
        if (it.name.empty()) it.name = d.name;
        if (d.arguments.empty() || it.done) return;  // a closed call's late arguments: dropped
        it.arguments += d.arguments;
        event(out, "response.function_call_arguments.delta",
              json::object{{"item_id", it.id}, {"output_index", index}, {"delta", d.arguments}});
    }

    void complete(std::string& out) {
        start(out);
        if (items.empty()) open_message(out);  // an empty answer is an empty message
        close(out);
        json::object response = response_json(head(), "completed", items, &usage, finish);
        const bool incomplete = response["status"] == "incomplete";
        event(out, incomplete ? "response.incomplete" : "response.completed",
              json::object{{"response", std::move(response)}});
        terminated = true;
    }

    void fail(std::string& out, const StreamDelta& d) {
        start(out);
        const std::string code = d.error_type.empty() ? "server_error" : d.error_type;
        event(out, "error", json::object{{"code", code}, {"message", d.text}, {"param", nullptr}});
        json::object response = response_json(head(), "failed", items, &usage);
        response["error"] = json::object{{"code", code}, {"message", d.text}};
        event(out, "response.failed", json::object{{"response", std::move(response)}});
        terminated = true;
    }
};

ResponsesStreamEncoder::ResponsesStreamEncoder(StreamMeta meta)
    : state_(std::make_unique<State>()) {
    state_->meta = std::move(meta);
}

ResponsesStreamEncoder::~ResponsesStreamEncoder() = default;

void ResponsesStreamEncoder::encode(const StreamDelta& d, std::string& out) {
    State& s = *state_;
    if (s.terminated) return;
    switch (d.kind) {
        case StreamDelta::Kind::role:
            s.meta.adopt(d);
            s.start(out);
            break;
        case StreamDelta::Kind::text:
            if (d.text.empty()) break;
            s.start(out);
            s.text(out, d.text);
            break;
        case StreamDelta::Kind::tool_call:
            s.start(out);
            s.tool_call(out, d);
            break;
        case StreamDelta::Kind::usage:
            s.usage.merge(d.usage);
            break;
        case StreamDelta::Kind::finish:
            s.finish = d.finish_reason;
            break;
        case StreamDelta::Kind::error:
            s.fail(out, d);
            break;
        case StreamDelta::Kind::done:
            s.complete(out);
            break;
        case StreamDelta::Kind::reasoning:  // counted in usage; not an output item here
        case StreamDelta::Kind::ignorable:
            break;
    }
}

void ResponsesStreamEncoder::finish(std::string& out) {
    if (!state_->terminated) state_->complete(out);
}

}  // namespace tokenradar::dialect
