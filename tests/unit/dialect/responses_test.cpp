#include <tokenradar/dialect/responses.hpp>

// clang-format off
#include "dialect_test_util.hpp"
// clang-format on

#include <tokenradar/dialect/egress.hpp>
#include <tokenradar/dialect/openai.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace tokenradar::dialect {
namespace {

namespace json = boost::json;
using namespace testing_util;

// A golden output: compared with the fixture, or written when TOKENRADAR_UPDATE_FIXTURES is set
// (tests/fixtures/responses/README.md).
void expect_golden(const std::string& rel, const std::string& actual) {
    if (std::getenv("TOKENRADAR_UPDATE_FIXTURES") != nullptr) {
        std::ofstream(fixture_dir() / rel, std::ios::binary) << actual;
        return;
    }
    EXPECT_EQ(actual, read_fixture(rel)) << rel;
}

// An OpenAI stream fixture through the Responses door, in pieces of 7 bytes.
std::string through_door(const std::string& openai_sse) {
    Egress egress(ClientApi::openai_responses, 1700000000);
    std::string out;
    for (std::size_t i = 0; i < openai_sse.size(); i += 7)
        egress.stream(std::string_view(openai_sse).substr(i, 7), out);
    egress.end(out);
    return out;
}

// The events of a Responses stream: each `event:` must equal its data's type and the sequence
// numbers must count from 0.
std::vector<json::object> events_of(const std::string& sse) {
    std::vector<json::object> events;
    sse::SseParser parser;
    (void)parser.feed(sse, [&](const sse::SseEvent& e) {
        json::object o = json::parse(e.data).as_object();
        EXPECT_EQ(o.at("type").as_string(), e.event);
        EXPECT_EQ(o.at("sequence_number").to_number<std::size_t>(), events.size());
        events.push_back(std::move(o));
    });
    return events;
}

std::vector<std::string> types_of(const std::vector<json::object>& events) {
    std::vector<std::string> types;
    for (const auto& e : events) types.emplace_back(e.at("type").as_string());
    return types;
}

TEST(ResponsesRequest, ReadsEveryField) {
    auto req = parse_responses_request(read_fixture("responses/request_full.json"));
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_EQ(req->model, "fast");
    ASSERT_EQ(req->messages.size(), 7u);
    EXPECT_EQ(req->messages[0].role, Role::system);
    EXPECT_EQ(req->messages[0].content[0].text, "Use tools when they help.");
    EXPECT_EQ(req->messages[1].role, Role::system);  // developer
    EXPECT_EQ(req->messages[2].content[0].text, "Weather in Paris and the files here?");
    const Message& assistant = req->messages[3];
    EXPECT_EQ(assistant.role, Role::assistant);
    EXPECT_EQ(assistant.content[0].text, "Checking.");
    ASSERT_EQ(assistant.tool_calls.size(), 2u);  // both function_call items join the message
    EXPECT_EQ(assistant.tool_calls[0].id, "call_weather");
    EXPECT_EQ(assistant.tool_calls[0].name, "get_weather");
    EXPECT_EQ(assistant.tool_calls[0].arguments, R"({"location":"Paris"})");
    EXPECT_EQ(assistant.tool_calls[1].id, "call_files");
    EXPECT_EQ(req->messages[4].role, Role::tool);
    EXPECT_EQ(req->messages[4].tool_call_id, "call_weather");
    EXPECT_EQ(req->messages[4].content[0].text, R"({"celsius":21})");
    EXPECT_EQ(req->messages[5].tool_call_id, "call_files");
    EXPECT_EQ(req->messages[5].content[0].text, "a.txt");
    EXPECT_EQ(req->messages[6].content[0].text, "Thanks. Summarise.");
    ASSERT_EQ(req->tools.size(), 2u);
    EXPECT_EQ(req->tools[0].name, "get_weather");
    EXPECT_EQ(req->tools[0].description, "Current weather");
    EXPECT_TRUE(req->tools[0].strict);
    EXPECT_FALSE(req->tools[1].strict);
    EXPECT_EQ(json::parse(req->tools[1].parameters).at("type"), "object");
    ASSERT_TRUE(req->tool_choice);
    EXPECT_EQ(req->tool_choice->mode, ToolChoice::Mode::function);
    EXPECT_EQ(req->tool_choice->name, "get_weather");
    EXPECT_EQ(req->parallel_tool_calls, false);
    EXPECT_EQ(req->max_tokens, 256);
    EXPECT_EQ(req->temperature, 0.5);
    EXPECT_EQ(req->top_p, 0.9);
    EXPECT_TRUE(req->stream);
    ASSERT_TRUE(req->response_format);
    EXPECT_EQ(req->response_format->kind, ResponseFormat::Kind::json_schema);
    EXPECT_EQ(req->response_format->name, "summary");
    EXPECT_TRUE(req->response_format->strict);
    EXPECT_EQ(req->original.at("reasoning_effort"), "low");
}

TEST(ResponsesRequest, AStringInputIsOneUserMessage) {
    auto req = parse_responses_request(R"({"model":"m","input":"Hi"})");
    ASSERT_TRUE(req) << req.error().message;
    ASSERT_EQ(req->messages.size(), 1u);
    EXPECT_EQ(req->messages[0].role, Role::user);
    EXPECT_EQ(req->messages[0].content[0].text, "Hi");
    EXPECT_FALSE(req->stream);
    EXPECT_FALSE(req->max_tokens);
}

TEST(ResponsesRequest, HarmlessFieldsAreAcceptedAndDropped) {
    auto req = parse_responses_request(
        R"({"model":"m","input":"Hi","store":true,"metadata":{"a":"b"},"user":"u",
            "service_tier":"auto","include":[],"background":false,"truncation":"disabled",
            "reasoning":{"effort":null,"summary":null},"text":{"verbosity":"medium"}})");
    ASSERT_TRUE(req) << req.error().message;
    EXPECT_FALSE(req->original.contains("reasoning_effort"));
}

TEST(ResponsesRequest, ErrorsNameTheField) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {R"({"input":"Hi"})", "model: required"},
        {R"({"model":"m"})", "input: required"},
        {R"({"model":"m","input":3})", "input: expected a string or an array"},
        {R"({"model":"m","input":"Hi","previous_response_id":"resp_1"})",
         "previous_response_id: the gateway keeps no conversation state"},
        {R"({"model":"m","input":"Hi","conversation":"conv_1"})", "conversation:"},
        {R"({"model":"m","input":[{"role":"robot","content":"x"}]})", "input[0].role"},
        {R"({"model":"m","input":[{"role":"user"}]})", "input[0].content: required"},
        {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})",
         "input[0].content[0].type: input_image is not translated"},
        {R"({"model":"m","input":[{"type":"reasoning","summary":[]}]})",
         "input[0].type: reasoning is not translated"},
        {R"({"model":"m","input":[{"type":"item_reference","id":"x"}]})",
         "input[0].type: item_reference"},
        {R"({"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]})",
         "input[0].call_id: required"},
        {R"({"model":"m","input":[{"type":"function_call_output","call_id":"c"}]})",
         "input[0].output: required"},
        {R"({"model":"m","input":"Hi","tools":[{"type":"web_search"}]})",
         "tools[0].type: web_search: only function tools"},
        {R"({"model":"m","input":"Hi","tools":[{"type":"function"}]})", "tools[0].name: required"},
        {R"({"model":"m","input":"Hi","tool_choice":"sometimes"})", "tool_choice: expected one of"},
        {R"({"model":"m","input":"Hi","tool_choice":{"type":"file_search"}})",
         "tool_choice.type: file_search is not translated"},
        {R"({"model":"m","input":"Hi","max_output_tokens":0})", "max_output_tokens"},
        {R"({"model":"m","input":"Hi","temperature":3})", "temperature"},
        {R"({"model":"m","input":"Hi","stream":"yes"})", "stream"},
        {R"({"model":"m","input":"Hi","reasoning":{"effort":"low","summary":"auto"}})",
         "reasoning.summary"},
        {R"({"model":"m","input":"Hi","text":{"format":{"type":"xml"}}})", "text.format.type"},
        {R"({"model":"m","input":"Hi","text":{"format":{"type":"json_schema"}}})",
         "text.format.name: required"},
        {R"({"model":"m","input":"Hi","background":true})", "background:"},
        {R"({"model":"m","input":"Hi","top_logprobs":2})", "top_logprobs: not translated"},
        {R"({"model":"m","input":"Hi","metadata":3})", "metadata: expected an object"},
        {R"({"model":"m","input":"Hi","store":"no"})", "store: expected a boolean"},
        {"not json", ""},
    };
    for (const auto& [body, needle] : cases) {
        SCOPED_TRACE(body);
        auto req = parse_responses_request(body);
        ASSERT_FALSE(req);
        EXPECT_EQ(req.error().code, make_error_code(Errc::bad_request));
        EXPECT_NE(req.error().message.find(needle), std::string::npos) << req.error().message;
    }
}

TEST(ResponsesRequest, TheDoorBuildsItsChatCompletionsEquivalent) {
    auto chat = parse_client_request(ClientApi::openai_responses,
                                     read_fixture("responses/request_full.json"));
    ASSERT_TRUE(chat) << chat.error().message;
    EXPECT_TRUE(chat->include_usage);
    const json::object& o = chat->original;
    EXPECT_EQ(o.at("model"), "fast");
    EXPECT_EQ(o.at("max_tokens"), 256);
    EXPECT_EQ(o.at("reasoning_effort"), "low");
    EXPECT_EQ(o.at("parallel_tool_calls"), false);
    EXPECT_EQ(o.at("messages").as_array().size(), 7u);
    EXPECT_EQ(o.at("tool_choice").at("function").at("name"), "get_weather");
    EXPECT_EQ(o.at("response_format").at("type"), "json_schema");
    // And it reads back as the same neutral request.
    auto again = parse_openai_request(json::serialize(o));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->messages, chat->messages);
    EXPECT_EQ(again->tools, chat->tools);
}

TEST(ResponsesRequest, UpstreamRefusalsUseResponsesFieldNames) {
    const ClientApi door = ClientApi::openai_responses;
    EXPECT_EQ(client_field_message(door, "reasoning_effort: high cannot be served"),
              "reasoning.effort: high cannot be served");
    EXPECT_EQ(client_field_message(door, "max_tokens: too many"), "max_output_tokens: too many");
    EXPECT_EQ(client_field_message(door, "response_format.json_schema: x"), "text.format: x");
    EXPECT_EQ(client_field_message(door, "messages[2].content: x"), "input[2].content: x");
    EXPECT_EQ(client_field_message(door, "tools[1].function.strict: x"), "tools[1].strict: x");
    EXPECT_EQ(client_field_message(door, "seed: x"), "seed: x");
    EXPECT_EQ(client_field_message(ClientApi::anthropic, "max_tokens: x"), "max_tokens: x");
}

TEST(ResponsesResponse, AChatCompletionBecomesAResponseObject) {
    const std::string chat = read_fixture("openai/response_tool_calls.json");
    int status = 200;
    std::string content_type = "application/json";
    std::string body = chat;
    const Egress egress(ClientApi::openai_responses, 1);
    egress.whole(status, content_type, body);
    EXPECT_EQ(status, 200);
    expect_golden("responses/response_tool_calls.responses.json", body);
    const json::object o = json::parse(body).as_object();
    EXPECT_EQ(o.at("object"), "response");
    EXPECT_EQ(o.at("id"), "resp_chatcmpl-BcQ8ko2nz9B7");
    EXPECT_EQ(o.at("created_at"), 1748496646);  // the upstream's, not the door's
    EXPECT_EQ(o.at("status"), "completed");
    const json::array& output = o.at("output").as_array();
    ASSERT_EQ(output.size(), 1u);  // no text: no message item
    EXPECT_EQ(output[0].at("type"), "function_call");
    EXPECT_EQ(output[0].at("call_id"), "call_qOfTGgDrItLORNfC6VwUbyLL");
    EXPECT_EQ(output[0].at("arguments"), R"({"location":"Shanghai"})");
    const json::object& usage = o.at("usage").as_object();
    EXPECT_EQ(usage.at("input_tokens"), 91);
    EXPECT_EQ(usage.at("output_tokens"), 14);
    EXPECT_EQ(usage.at("total_tokens"), 105);
    EXPECT_EQ(usage.at("input_tokens_details").at("cached_tokens"), 0);
    EXPECT_EQ(usage.at("output_tokens_details").at("reasoning_tokens"), 0);
}

TEST(ResponsesResponse, ALengthFinishIsIncompleteAndErrorsStayOpenAiErrors) {
    ChatResponse r;
    r.id = "x";
    r.model = "m";
    r.text = "Hel";
    r.finish_reason = FinishReason::length;
    r.usage.prompt_tokens = 5;
    r.usage.output_tokens = 3;
    const json::object o = json::parse(emit_responses_response(r, 42)).as_object();
    EXPECT_EQ(o.at("status"), "incomplete");
    EXPECT_EQ(o.at("incomplete_details").at("reason"), "max_output_tokens");
    EXPECT_EQ(o.at("created_at"), 42);
    const json::object& message = o.at("output").at(0).as_object();
    EXPECT_EQ(message.at("type"), "message");
    EXPECT_EQ(message.at("role"), "assistant");
    EXPECT_EQ(message.at("content").at(0).at("type"), "output_text");
    EXPECT_EQ(message.at("content").at(0).at("text"), "Hel");
    EXPECT_TRUE(message.at("content").at(0).at("annotations").as_array().empty());

    const Egress egress(ClientApi::openai_responses);
    int status = 429;
    std::string content_type = "application/json";
    std::string body = read_fixture("openai/error_rate_limit.json");
    const std::string before = body;
    egress.whole(status, content_type, body);
    EXPECT_EQ(status, 429);
    EXPECT_EQ(body, before);
}

TEST(ResponsesStream, TextEventsInTheDocumentedOrder) {
    const std::string out = through_door(read_fixture("openai/stream_basic.sse"));
    expect_golden("responses/stream_basic.responses.sse", out);
    const auto events = events_of(out);
    const std::vector<std::string> expected{
        "response.created",           "response.in_progress",
        "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.completed"};
    EXPECT_EQ(types_of(events), expected);
    EXPECT_EQ(events[0].at("response").at("status"), "in_progress");
    EXPECT_EQ(events[0].at("response").at("created_at"), 1700000000);
    EXPECT_EQ(events[4].at("delta"), "Hello");
    EXPECT_EQ(events[4].at("item_id"), events[2].at("item").at("id"));
    const std::string text = "Hello! How can I help you today?\nAsk away.";
    EXPECT_EQ(events[7].at("text").as_string(), text);
    const json::object& done = events.back().at("response").as_object();
    EXPECT_EQ(done.at("status"), "completed");
    EXPECT_EQ(done.at("output").at(0).at("content").at(0).at("text").as_string(), text);
    EXPECT_EQ(done.at("usage").at("input_tokens"), 1220);
    EXPECT_EQ(done.at("usage").at("input_tokens_details").at("cached_tokens"), 1024);
    EXPECT_EQ(done.at("usage").at("output_tokens"), 12);
}

TEST(ResponsesStream, FunctionCallsAreItemsWithArgumentDeltas) {
    const std::string out = through_door(read_fixture("openai/stream_tool_calls.sse"));
    expect_golden("responses/stream_tool_calls.responses.sse", out);
    const auto events = events_of(out);
    const std::vector<std::string> expected{"response.created",
                                            "response.in_progress",
                                            "response.output_item.added",
                                            "response.function_call_arguments.delta",
                                            "response.function_call_arguments.delta",
                                            "response.function_call_arguments.done",
                                            "response.output_item.done",
                                            "response.output_item.added",
                                            "response.function_call_arguments.delta",
                                            "response.function_call_arguments.done",
                                            "response.output_item.done",
                                            "response.completed"};
    EXPECT_EQ(types_of(events), expected);
    EXPECT_EQ(events[2].at("item").at("call_id"), "call_files");
    EXPECT_EQ(events[2].at("item").at("name"), "list_files");
    EXPECT_EQ(events[7].at("output_index"), 1);
    EXPECT_EQ(events[9].at("arguments"), R"({"location": "Paris"})");
    const json::array& output = events.back().at("response").at("output").as_array();
    ASSERT_EQ(output.size(), 2u);
    EXPECT_EQ(output[0].at("arguments"), R"({"path": "."})");
    EXPECT_EQ(output[1].at("status"), "completed");
}

TEST(ResponsesStream, AnErrorIsAnErrorEventThenResponseFailed) {
    const std::string out = through_door(read_fixture("openai/stream_error.sse"));
    expect_golden("responses/stream_error.responses.sse", out);
    const auto events = events_of(out);
    ASSERT_GE(events.size(), 2u);
    const json::object& error = events[events.size() - 2];
    EXPECT_EQ(error.at("type"), "error");
    EXPECT_EQ(error.at("code"), "server_error");
    const json::object& failed = events.back().at("response").as_object();
    EXPECT_EQ(events.back().at("type"), "response.failed");
    EXPECT_EQ(failed.at("status"), "failed");
    EXPECT_EQ(failed.at("error").at("code"), "server_error");
}

TEST(ResponsesStream, ACutStreamFailsAndHeartbeatsStayComments) {
    Egress egress(ClientApi::openai_responses);
    std::string out;
    egress.stream(": keep-alive\n\n", out);
    EXPECT_EQ(out, ": keep-alive\n\n");
    out.clear();
    egress.stream("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi", out);
    egress.end(out);
    const auto events = events_of(out);
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().at("type"), "response.failed");
    EXPECT_EQ(events[events.size() - 2].at("code"), "upstream_error");
}

TEST(ResponsesStream, AnEmptyAnswerIsAnEmptyMessage) {
    ResponsesStreamEncoder encoder(StreamMeta{});
    std::string out;
    StreamDelta role = StreamDelta::make(StreamDelta::Kind::role);
    role.id = "c";
    role.name = "m";
    encoder.encode(role, out);
    encoder.finish(out);
    encoder.finish(out);  // idempotent
    const auto events = events_of(out);
    ASSERT_EQ(events.size(), 8u);
    EXPECT_EQ(events.back().at("response").at("output").at(0).at("content").at(0).at("text"), "");
    EXPECT_EQ(events.back().at("response").at("id"), "resp_c");
}

}  // namespace
}  // namespace tokenradar::dialect
