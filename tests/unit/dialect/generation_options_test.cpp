// Tests of src/dialect/generation_options.cpp (a private file) through the dialects' public
// parse / emit functions.
#include "../../../src/dialect/generation_options.hpp"

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <tokenradar/dialect/anthropic.hpp>
#include <tokenradar/dialect/gemini.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <gtest/gtest.h>

namespace tokenradar::dialect {
namespace {

using Mode = ToolChoice::Mode;

ChatRequest with_tools() {
    ChatRequest req;
    req.model = "m";
    req.messages.push_back(Message{Role::user, {ContentPart::make_text("hi")}, {}, {}, {}});
    req.tools.push_back(ToolDefinition{"f", "does f", R"({"type":"object"})", false, {}});
    req.tools.push_back(ToolDefinition{"g", "", R"({"type":"object"})", false, {}});
    return req;
}

TEST(GenerationOptions, RoundTripThroughEachDialectWhatItCanExpress) {
    const ResponseFormat schema{ResponseFormat::Kind::json_schema, "", R"({"type":"object"})",
                                false};
    for (const ToolChoice& choice :
         {ToolChoice{Mode::automatic, {}}, ToolChoice{Mode::none, {}},
          ToolChoice{Mode::required, {}}, ToolChoice{Mode::function, "g"}}) {
        ChatRequest req = with_tools();
        req.tool_choice = choice;
        req.response_format = schema;
        req.tools[0].strict = true;
        // OpenAI: all but the thinking budget (it has an effort, not a budget).
        ChatRequest oa = req;
        oa.parallel_tool_calls = false;
        oa.seed = 7;
        oa.presence_penalty = 0.5;
        oa.frequency_penalty = -0.5;
        oa.response_format->name = "answer";
        oa.response_format->strict = true;
        auto oa_body = emit_openai_request(oa);
        ASSERT_TRUE(oa_body);
        auto oa_back = parse_openai_request(*oa_body);
        ASSERT_TRUE(oa_back) << oa_back.error().message;
        EXPECT_EQ(*oa_back, oa) << *oa_body;
        // Anthropic: tool choice, parallel calls (not with none), schema, thinking, strict.
        ChatRequest an = req;
        an.parallel_tool_calls = choice.mode == Mode::none ? std::nullopt : std::optional(false);
        an.thinking_budget = 2048;
        an.max_tokens = 4000;  // Anthropic requires one
        an.include_usage = true;
        auto an_body = emit_anthropic_request(an);
        ASSERT_TRUE(an_body) << an_body.error().message;
        auto an_back = parse_anthropic_request(*an_body);
        ASSERT_TRUE(an_back) << an_back.error().message;
        EXPECT_EQ(*an_back, an) << *an_body;
        // Gemini: tool choice, schema, seed, penalties, thinking; no strict, no parallel limit.
        ChatRequest ge = req;
        ge.tools[0].strict = false;
        ge.seed = 7;
        ge.presence_penalty = 0.5;
        ge.frequency_penalty = -0.5;
        ge.thinking_budget = 0;
        ge.include_usage = true;
        auto ge_body = emit_gemini_request(ge);
        ASSERT_TRUE(ge_body) << ge_body.error().message;
        auto ge_back = parse_gemini_request(*ge_body, "m", false);
        ASSERT_TRUE(ge_back) << ge_back.error().message;
        EXPECT_EQ(*ge_back, ge) << *ge_body;
    }
}

TEST(GenerationOptions, ReadsNativeShapes) {
    auto an = parse_anthropic_request(R"({"model":"c","max_tokens":5,"messages":[],
        "tools":[{"name":"f","input_schema":{"type":"object"},"strict":true}],
        "tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},
        "output_config":{"format":{"type":"json_schema","schema":{"type":"object"}},"effort":"low"},
        "thinking":{"type":"enabled","budget_tokens":1024}})");
    ASSERT_TRUE(an) << an.error().message;
    EXPECT_EQ(an->tool_choice, (ToolChoice{Mode::function, "f"}));
    EXPECT_EQ(an->parallel_tool_calls, false);
    ASSERT_TRUE(an->response_format);
    EXPECT_EQ(an->response_format->kind, ResponseFormat::Kind::json_schema);
    EXPECT_EQ(an->response_format->schema, R"({"type":"object"})");
    EXPECT_EQ(an->thinking_budget, 1024);
    EXPECT_TRUE(an->tools.at(0).strict);

    // Gemini, proto3 snake_case spelling, the older OpenAPI responseSchema.
    auto ge = parse_gemini_request(R"({"contents":[],
        "tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["f"]}},
        "generation_config":{"responseMimeType":"application/json",
            "responseSchema":{"type":"OBJECT"},"seed":3,"presencePenalty":1.5,
            "thinkingConfig":{"thinkingBudget":512}}})",
                                   "m", false);
    ASSERT_TRUE(ge) << ge.error().message;
    EXPECT_EQ(ge->tool_choice, (ToolChoice{Mode::function, "f"}));
    ASSERT_TRUE(ge->response_format);
    EXPECT_EQ(ge->response_format->schema, R"({"type":"OBJECT"})");
    EXPECT_EQ(ge->seed, 3);
    EXPECT_EQ(ge->presence_penalty, 1.5);
    EXPECT_EQ(ge->thinking_budget, 512);

    // Shapes the neutral model cannot hold are left unset, not refused: passthrough must work.
    auto oa = parse_openai_request(R"({"model":"m","messages":[],
        "tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}},
        "response_format":{"type":"grammar"}})");
    ASSERT_TRUE(oa) << oa.error().message;
    EXPECT_FALSE(oa->tool_choice);
    EXPECT_FALSE(oa->response_format);
    auto ge2 = parse_gemini_request(R"({"contents":[],
        "toolConfig":{"functionCallingConfig":{"mode":"VALIDATED"}},
        "generationConfig":{"responseMimeType":"text/x.enum","thinkingConfig":{"thinkingBudget":-1}}})",
                                    "m", false);
    ASSERT_TRUE(ge2) << ge2.error().message;
    EXPECT_FALSE(ge2->tool_choice);
    EXPECT_FALSE(ge2->response_format);
    EXPECT_FALSE(ge2->thinking_budget);
}

TEST(GenerationOptions, WrongTypesNameTheField) {
    struct Case {
        Api api;
        const char* body;
        const char* message;
    } cases[] = {
        {Api::openai, R"({"model":"m","messages":[],"tool_choice":5})",
         "tool_choice: expected a string or an object"},
        {Api::openai, R"({"model":"m","messages":[],"tool_choice":"sometimes"})",
         "tool_choice: expected one of auto, none, required or an object"},
        {Api::openai, R"({"model":"m","messages":[],"response_format":{"type":"json_schema"}})",
         "response_format.json_schema: required"},
        {Api::openai, R"({"model":"m","messages":[],"seed":"7"})", "seed: expected an integer"},
        {Api::anthropic, R"({"model":"m","max_tokens":1,"messages":[],"tool_choice":{"type":"x"}})",
         "tool_choice.type: expected one of auto, any, tool, none"},
        {Api::anthropic,
         R"({"model":"m","max_tokens":1,"messages":[],"thinking":{"type":"enabled"}})",
         "thinking.budget_tokens: required"},
        {Api::gemini,
         R"({"contents":[],"toolConfig":{"functionCallingConfig":{"allowedFunctionNames":"f"}}})",
         "toolConfig.functionCallingConfig.allowedFunctionNames: expected an array"},
        {Api::gemini, R"({"contents":[],"generationConfig":{"presencePenalty":"high"}})",
         "generationConfig.presencePenalty: expected a number"},
    };
    for (const auto& c : cases) {
        auto r = parse_request(c.api, c.body, "m", false);
        ASSERT_FALSE(r) << c.body;
        EXPECT_EQ(r.error().message, c.message);
    }
}

TEST(GenerationOptions, WhatADialectCannotExpress) {
    ChatRequest req = with_tools();
    req.response_format = ResponseFormat{ResponseFormat::Kind::json_object, {}, {}, false};
    auto an = emit_anthropic_request(req);
    ASSERT_FALSE(an);
    EXPECT_EQ(an.error().code, Errc::unsupported);
    EXPECT_EQ(an.error().message.rfind("response_format: json_object has no Anthropic", 0), 0u);
    // Without tools there is nothing to choose from: no tool_choice / toolConfig is written.
    ChatRequest bare;
    bare.model = "m";
    bare.tool_choice = ToolChoice{Mode::required, {}};
    bare.parallel_tool_calls = false;
    EXPECT_EQ(emit_anthropic_request(bare)->find("tool_choice"), std::string::npos);
    EXPECT_EQ(emit_gemini_request(bare)->find("toolConfig"), std::string::npos);
}

}  // namespace
}  // namespace tokenradar::dialect
