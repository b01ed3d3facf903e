#pragma once
// What the sim answers a completion with, sans-IO: the plan's words as text, as JSON text
// (the request's response_format), or as the arguments of one call of a declared tool. The
// plan still decides timing, chunking and usage; the answer only shapes the bytes of each
// chunk, so JSON and tool calls are paced and metered like text.

#include <tokenradar/dialect/chat.hpp>
#include <tokenradar/sim/latency_model.hpp>
#include <tokenradar/sim/overrides.hpp>
#include <tokenradar/sim/profile.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar::sim {

class Answer {
  public:
    enum class Kind { text, json, tool_call };

    // Chooses and builds the answer of `request` under `plan`:
    // - a tool call when the request declares tools and its tool_choice is required or names a
    //   function (always), auto or absent (x-sim-tool-call, else the profile's tool_call_rate
    //   drawn from plan.answer_seed, and never right after a tool result), never when none;
    // - else JSON text when it asks for response_format json_object / json_schema;
    // - else the plan's text.
    // The tool is the one tool_choice names, else one drawn from the declared tools. JSON
    // (content or arguments) follows the schema: required properties (and, when none is a
    // free string, the first declared string property) with values of their type; the plan's
    // words fill the first free string, so the answer grows with the plan's tokens.
    static Answer make(const dialect::ChatRequest& request, const RequestPlan& plan,
                       const AnswerParams& params, std::optional<ToolCallMode> mode,
                       std::string_view tool_call_id_prefix);

    Kind kind() const noexcept { return kind_; }
    // Content text (text, json) or arguments fragment (tool_call) written with plan chunk `i`;
    // the pieces of all chunks concatenate to whole(). Empty for a plan without chunks.
    std::string piece(std::size_t chunk) const;
    // The whole content text or arguments JSON.
    std::string whole() const;
    // tool_call only: id and name; arguments empty (see piece / whole).
    const dialect::ToolCall& call() const noexcept { return call_; }
    // The finish reason to report: tool_calls for a call, stop for JSON (it is always
    // complete), the plan's for text.
    dialect::FinishReason finish_reason() const noexcept;

  private:
    explicit Answer(const RequestPlan& plan) : plan_(&plan) {}

    const RequestPlan* plan_;
    Kind kind_ = Kind::text;
    std::string json_;               // json, tool_call: the whole JSON text
    std::vector<std::size_t> ends_;  // json, tool_call: end offset in json_ of each chunk's piece
    dialect::ToolCall call_;
};

// A JSON value valid against `schema` (a JSON Schema text; anything unparsable counts as
// {"type":"object"}), serialized; the first free string (no enum, format, pattern or
// maxLength) holds `filler`, escaped. `filler_at` receives the offset of the filler in the
// result (npos when no free string exists: the filler is then not used).
std::string example_json(std::string_view schema, std::string_view filler, std::size_t& filler_at);

}  // namespace tokenradar::sim
