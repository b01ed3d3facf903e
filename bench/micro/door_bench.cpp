// What a door of another dialect costs per request (dialect/egress.hpp): the client's request
// of 100 messages (text turns and tool rounds, as an agent's history) turned into the neutral
// model and its Chat Completions equivalent, and a whole answer re-encoded. Issue 30's target:
// under 50 us per 100-message request.
#include <tokenradar/dialect/egress.hpp>

#include <benchmark/benchmark.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace {

using tokenradar::dialect::Api;
using tokenradar::dialect::ClientApi;
namespace json = boost::json;

constexpr int kMessages = 100;

std::string text_of(int i) {
    return fmt::format(
        "Message {}: how long does the first token take when the queue is {} "
        "deep and the prompt shares its first 4k tokens with the last request?",
        i, i % 7);
}

// Anthropic Messages: user / assistant text turns, every fifth assistant turn a tool_use
// answered by a tool_result in the next user turn.
std::string anthropic_body() {
    json::array messages;
    for (int i = 0; i < kMessages; ++i) {
        const bool user = i % 2 == 0;
        if (!user && i % 10 == 5) {
            messages.push_back(json::object{
                {"role", "assistant"},
                {"content", json::array{json::object{
                                {"type", "tool_use"},
                                {"id", fmt::format("toolu_{}", i)},
                                {"name", "get_weather"},
                                {"input", json::object{{"city", "Oslo"}, {"days", 2}}}}}}});
        } else if (user && i % 10 == 6) {
            messages.push_back(json::object{
                {"role", "user"},
                {"content",
                 json::array{json::object{{"type", "tool_result"},
                                          {"tool_use_id", fmt::format("toolu_{}", i - 1)},
                                          {"content", "Sunny, 21 C"}}}}});
        } else {
            messages.push_back(
                json::object{{"role", user ? "user" : "assistant"}, {"content", text_of(i)}});
        }
    }
    return json::serialize(json::object{
        {"model", "fast"},
        {"max_tokens", 256},
        {"stream", true},
        {"system", "You are brief."},
        {"tools",
         json::array{json::object{
             {"name", "get_weather"},
             {"input_schema",
              json::object{
                  {"type", "object"},
                  {"properties", json::object{{"city", json::object{{"type", "string"}}},
                                              {"days", json::object{{"type", "integer"}}}}}}}}}},
        {"messages", std::move(messages)}});
}

// The same conversation as Gemini contents: function calls and responses without ids, as the
// Google GenAI SDK sends them.
std::string gemini_body() {
    json::array contents;
    for (int i = 0; i < kMessages; ++i) {
        const bool user = i % 2 == 0;
        json::object part;
        if (!user && i % 10 == 5) {
            part =
                json::object{{"functionCall",
                              json::object{{"name", "get_weather"},
                                           {"args", json::object{{"city", "Oslo"}, {"days", 2}}}}}};
        } else if (user && i % 10 == 6) {
            part =
                json::object{{"functionResponse",
                              json::object{{"name", "get_weather"},
                                           {"response", json::object{{"result", "Sunny, 21 C"}}}}}};
        } else {
            part = json::object{{"text", text_of(i)}};
        }
        contents.push_back(json::object{{"role", user ? "user" : "model"},
                                        {"parts", json::array{std::move(part)}}});
    }
    const json::object schema{
        {"type", "object"},
        {"properties", json::object{{"city", json::object{{"type", "string"}}},
                                    {"days", json::object{{"type", "integer"}}}}}};
    const json::object declaration{{"name", "get_weather"}, {"parametersJsonSchema", schema}};
    const json::object system{{"parts", json::array{json::object{{"text", "You are brief."}}}}};
    return json::serialize(json::object{
        {"systemInstruction", system},
        {"tools", json::array{json::object{{"functionDeclarations", json::array{declaration}}}}},
        {"contents", std::move(contents)},
        {"generationConfig", json::object{{"maxOutputTokens", 256}}}});
}

// The same conversation as Responses input items: message items, function_call and
// function_call_output items, as the openai SDK sends a replayed history.
std::string responses_body() {
    json::array input;
    for (int i = 0; i < kMessages; ++i) {
        const bool user = i % 2 == 0;
        if (!user && i % 10 == 5) {
            input.push_back(json::object{{"type", "function_call"},
                                         {"call_id", fmt::format("call_{}", i)},
                                         {"name", "get_weather"},
                                         {"arguments", R"({"city":"Oslo","days":2})"}});
        } else if (user && i % 10 == 6) {
            input.push_back(json::object{{"type", "function_call_output"},
                                         {"call_id", fmt::format("call_{}", i - 1)},
                                         {"output", "Sunny, 21 C"}});
        } else {
            input.push_back(
                json::object{{"role", user ? "user" : "assistant"}, {"content", text_of(i)}});
        }
    }
    const json::object schema{
        {"type", "object"},
        {"properties", json::object{{"city", json::object{{"type", "string"}}},
                                    {"days", json::object{{"type", "integer"}}}}}};
    return json::serialize(json::object{
        {"model", "fast"},
        {"instructions", "You are brief."},
        {"max_output_tokens", 256},
        {"stream", true},
        {"tools", json::array{json::object{
                      {"type", "function"}, {"name", "get_weather"}, {"parameters", schema}}}},
        {"input", std::move(input)}});
}

// The door's request step: the client's body -> neutral model + its OpenAI equivalent. Arg 2
// is the reference, what Chat Completions costs for the same conversation (its OpenAI body
// parsed into the neutral model).
std::string openai_body() {
    auto chat = tokenradar::dialect::parse_client_request(Api::anthropic, anthropic_body());
    return chat ? json::serialize(chat->original) : std::string();
}

// Arg 0 Anthropic, 1 Gemini, 2 Chat Completions, 3 Responses.
constexpr ClientApi kDoors[] = {ClientApi::anthropic, ClientApi::gemini, ClientApi::openai,
                                ClientApi::openai_responses};
constexpr std::string_view kDoorNames[] = {"anthropic", "gemini", "openai", "responses"};

void BM_DoorRequest(benchmark::State& state) {
    const auto door = static_cast<std::size_t>(state.range(0));
    const ClientApi api = kDoors[door];
    const std::string body = api == ClientApi::anthropic ? anthropic_body()
                             : api == ClientApi::gemini  ? gemini_body()
                             : api == ClientApi::openai  ? openai_body()
                                                         : responses_body();
    for (auto _ : state) {
        auto chat = tokenradar::dialect::parse_client_request(api, body, "fast", true);
        if (!chat) state.SkipWithError(chat.error().message.c_str());
        benchmark::DoNotOptimize(chat);
    }
    state.SetLabel(
        fmt::format("{} door, {} messages, {} bytes", kDoorNames[door], kMessages, body.size()));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_DoorRequest)->Arg(0)->Arg(1)->Arg(2)->Arg(3);

// The door's answer step for a whole response: a chat.completion -> the client's dialect.
// Arg 0 Anthropic, 1 Gemini, 3 Responses.
void BM_DoorWholeAnswer(benchmark::State& state) {
    const tokenradar::dialect::Egress egress(kDoors[static_cast<std::size_t>(state.range(0))]);
    const std::string completion =
        R"({"id":"chatcmpl-1","object":"chat.completion","created":0,"model":"gpt-4o",)"
        R"("choices":[{"index":0,"message":{"role":"assistant","content":")" +
        text_of(1) + text_of(2) +
        R"("},"finish_reason":"stop"}],"usage":{"prompt_tokens":2000,"completion_tokens":60,)"
        R"("total_tokens":2060}})";
    for (auto _ : state) {
        int status = 200;
        std::string type = "application/json";
        std::string body = completion;
        egress.whole(status, type, body);
        benchmark::DoNotOptimize(body);
    }
}
BENCHMARK(BM_DoorWholeAnswer)->Arg(0)->Arg(1)->Arg(3);

// The door's answer step for a stream: 100 text chunks of the relay's OpenAI stream through
// Egress::stream (SSE parse, OpenAI decode, the door's encoder), per event. Arg as above.
void BM_DoorStreamText(benchmark::State& state) {
    const ClientApi api = kDoors[static_cast<std::size_t>(state.range(0))];
    std::string stream;
    for (int i = 0; i < 100; ++i) {
        stream += fmt::format(
            R"(data: {{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,)"
            R"("model":"gpt-4o","choices":[{{"index":0,"delta":{{"content":" token {}"}},)"
            R"("finish_reason":null}}]}})"
            "\n\n",
            i);
    }
    for (auto _ : state) {
        tokenradar::dialect::Egress egress(api);
        std::string out;
        egress.stream(stream, out);
        benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_DoorStreamText)->Arg(0)->Arg(1)->Arg(3);

}  // namespace
