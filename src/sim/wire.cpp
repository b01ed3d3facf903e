#include "wire.hpp"

#include <tokenradar/core/clock.hpp>
#include <tokenradar/core/ids.hpp>
#include <tokenradar/core/token_estimate.hpp>
#include <tokenradar/dialect/codec.hpp>
#include <tokenradar/dialect/text_completion.hpp>
#include <tokenradar/sim/tokens.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse_query.hpp>
#include <fmt/format.h>

#include <stdexcept>

namespace tokenradar::sim {
namespace {

namespace http = boost::beast::http;
using dialect::Api;

constexpr std::string_view kGeminiPrefix = "/v1beta/models/";

bool iequals_prefix(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    }
    return true;
}

std::string_view header(const net::Request& request, std::string_view name) {
    auto it = request.find(name);
    return it == request.end() ? std::string_view{} : std::string_view(it->value());
}

RouteError route_error(Api api, Errc code, std::string message) {
    return RouteError{api, code, std::move(message)};
}

// The key each API expects, in the header shape it expects. Nullopt when accepted.
std::optional<RouteError> check_key(Api api, const net::Request& request,
                                    std::string_view query_key, std::string_view required) {
    std::string_view key;
    switch (api) {
        case Api::openai:
        case Api::openai_responses: {
            std::string_view auth = header(request, "authorization");
            if (iequals_prefix(auth, "bearer ")) key = auth.substr(7);
            if (key.empty()) {
                return route_error(
                    api, Errc::unauthorized,
                    "You didn't provide an API key. You need to provide your API key "
                    "in an Authorization header using Bearer auth (i.e. "
                    "Authorization: Bearer YOUR_KEY).");
            }
            if (!required.empty() && key != required) {
                return route_error(api, Errc::unauthorized, "Incorrect API key provided.");
            }
            return std::nullopt;
        }
        case Api::anthropic: {
            // The real API takes the key as x-api-key or as Authorization: Bearer;
            // @anthropic-ai/sdk 1.x sends its apiKey only as Bearer. x-api-key wins when
            // both are sent.
            key = header(request, "x-api-key");
            std::string_view auth = header(request, "authorization");
            if (key.empty() && iequals_prefix(auth, "bearer ")) key = auth.substr(7);
            if (key.empty()) {
                return route_error(api, Errc::unauthorized,
                                   "x-api-key header is required (or Authorization: Bearer)");
            }
            if (!required.empty() && key != required) {
                return route_error(api, Errc::unauthorized, "invalid x-api-key");
            }
            return std::nullopt;
        }
        case Api::gemini:
            key = header(request, "x-goog-api-key");
            if (key.empty()) key = query_key;
            if (key.empty()) {
                return route_error(api, Errc::forbidden,
                                   "Method doesn't allow unregistered callers (callers without "
                                   "established identity). Please use API Key or other form of "
                                   "API consumer identity to call this API.");
            }
            if (!required.empty() && key != required) {
                return route_error(api, Errc::bad_request,
                                   "API key not valid. Please pass a valid API key.");
            }
            return std::nullopt;
    }
    return std::nullopt;
}

// /sim/control belongs to no API: the key is accepted in any of their shapes.
std::optional<RouteError> check_control_key(const net::Request& request, std::string_view query_key,
                                            std::string_view required) {
    std::string_view auth = header(request, "authorization");
    auth = iequals_prefix(auth, "bearer ") ? auth.substr(7) : std::string_view{};
    bool any = false;
    for (std::string_view key :
         {auth, header(request, "x-api-key"), header(request, "x-goog-api-key"), query_key}) {
        if (key.empty()) continue;
        any = true;
        if (required.empty() || key == required) return std::nullopt;
    }
    return route_error(Api::openai, Errc::unauthorized,
                       any ? "Incorrect API key provided for /sim/control."
                           : "/sim/control needs the sim's key: Authorization: Bearer KEY, "
                             "x-api-key, x-goog-api-key or ?key=.");
}

using RouteResult = boost::system::result<Route, RouteError>;

// What the sim reads from the query string: Gemini's ?key= and ?alt=sse.
struct QueryParams {
    std::string key;
    bool alt_sse = false;
};

QueryParams read_query(std::string_view target) {
    QueryParams out;
    const std::size_t query_at = target.find('?');
    if (query_at == std::string_view::npos) return out;
    // Boost.URL 1.81's parse_query runs strlen over its argument (found by ASan): give
    // it a NUL-terminated copy, never a view into the request.
    const std::string query(target.substr(query_at + 1));
    auto params = boost::urls::parse_query(query);
    if (params) {
        for (const auto& param : *params) {
            const std::string key = param.key.decode();
            if (key == "key") out.key = param.value.decode();
            if (key == "alt" && param.value.decode() == "sse") out.alt_sse = true;
        }
    }
    return out;
}

// /v1/models is shared by OpenAI and Anthropic: Anthropic SDKs send one of these headers.
bool sends_anthropic_headers(const net::Request& request) {
    return !header(request, "x-api-key").empty() || !header(request, "anthropic-version").empty();
}

// /v1beta/models/{model}: models.get, or :generateContent / :streamGenerateContent?alt=sse.
RouteResult route_gemini_model(std::string_view path, bool get, bool alt_sse) {
    Route route;
    route.api = Api::gemini;
    const std::string_view rest = path.substr(kGeminiPrefix.size());
    const std::size_t colon = rest.rfind(':');
    const std::string_view method = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    if (colon == std::string_view::npos && get && !rest.empty()) {
        route.kind = Route::Kind::model;  // models.get
        route.model = std::string(rest);
    } else if (method != "generateContent" && method != "streamGenerateContent") {
        return route_error(Api::gemini, Errc::not_found,
                           fmt::format("Method not found: {} (expected "
                                       "models/{{model}}:generateContent or "
                                       ":streamGenerateContent)",
                                       path));
    }
    if (route.kind != Route::Kind::model) {
        route.kind = Route::Kind::completion;
        route.model = std::string(rest.substr(0, colon));
        route.stream = method == "streamGenerateContent";
    }
    if (route.stream && !alt_sse) {
        return route_error(Api::gemini, Errc::bad_request,
                           "This simulator streams Server-Sent Events only: add ?alt=sse to "
                           "streamGenerateContent.");
    }
    return route;
}

// The route a path names, before its method and key are checked.
RouteResult route_path(const net::Request& request, std::string_view path, bool get, bool alt_sse) {
    Route route;
    if (path == "/v1/responses") {
        route.api = Api::openai_responses;
        route.kind = Route::Kind::completion;
    } else if (path == "/v1/completions") {
        route.kind = Route::Kind::completion;
        route.text_completion = true;
    } else if (path == "/v1/messages/count_tokens") {
        route.api = Api::anthropic;
        route.kind = Route::Kind::count_tokens;
    } else if (path == "/v1/chat/completions" || path == "/v1/messages" || path == "/v1/models") {
        route.api = path == "/v1/messages" ? Api::anthropic : Api::openai;
        if (path == "/v1/models" && sends_anthropic_headers(request)) route.api = Api::anthropic;
        route.kind = path == "/v1/models" ? Route::Kind::models : Route::Kind::completion;
    } else if (path.starts_with("/v1/models/") && path.size() > 11) {
        // models.retrieve of the OpenAI and Anthropic SDKs.
        route.api = sends_anthropic_headers(request) ? Api::anthropic : Api::openai;
        route.kind = Route::Kind::model;
        route.model = std::string(path.substr(11));
    } else if (path == "/v1beta/models") {
        route.api = Api::gemini;
        route.kind = Route::Kind::models;
    } else if (path.starts_with(kGeminiPrefix)) {
        return route_gemini_model(path, get, alt_sse);
    } else {
        return route_error(
            Api::openai, Errc::not_found,
            fmt::format("Unknown path {} (the sim serves /v1/chat/completions, /v1/completions, "
                        "/v1/responses, "
                        "/v1/messages, /v1beta/models/{{model}}:generateContent, "
                        "/v1/models)",
                        path));
    }
    return route;
}

}  // namespace

void throw_exception_from_error(const RouteError& e, const boost::source_location&) {
    throw std::runtime_error(e.message);
}

boost::system::result<Route, RouteError> route_request(const net::Request& request,
                                                       std::string_view required_key) {
    const std::string_view target(request.target());
    const std::string_view path = target.substr(0, target.find('?'));
    const QueryParams query = read_query(target);
    const bool get = request.method() == http::verb::get;
    const bool post = request.method() == http::verb::post;

    if (get && (path == "/healthz" || path == "/sim/stats")) {
        Route route;
        route.kind = path == "/healthz" ? Route::Kind::health : Route::Kind::stats;
        return route;
    }
    if (path == "/sim/control") {
        if (!get && !post && request.method() != http::verb::delete_) {
            return route_error(Api::openai, Errc::method_not_allowed,
                               fmt::format("Method {} is not allowed on /sim/control (GET, POST, "
                                           "DELETE)",
                                           std::string_view(request.method_string())));
        }
        if (auto refused = check_control_key(request, query.key, required_key)) return *refused;
        Route route;
        route.kind = Route::Kind::control;
        return route;
    }
    auto routed = route_path(request, path, get, query.alt_sse);
    if (!routed) return routed;
    const Route& route = *routed;
    const bool method_ok =
        route.kind == Route::Kind::models || route.kind == Route::Kind::model ? get : post;
    if (!method_ok) {
        return route_error(route.api, Errc::method_not_allowed,
                           fmt::format("Method {} is not allowed on {}",
                                       std::string_view(request.method_string()), path));
    }
    if (route.api == Api::anthropic &&
        (route.kind == Route::Kind::completion || route.kind == Route::Kind::count_tokens) &&
        header(request, "anthropic-version").empty()) {
        if (auto missing = check_key(route.api, request, query.key, required_key)) return *missing;
        return route_error(Api::anthropic, Errc::bad_request,
                           "anthropic-version: header is required");
    }
    if (auto refused = check_key(route.api, request, query.key, required_key)) return *refused;
    return routed;
}

Result<WireRequest> parse_wire_request(const net::Request& request, const Route& route) {
    auto chat = route.text_completion
                    ? dialect::parse_text_completion_request(request.body())
                    : dialect::parse_request(route.api, request.body(), route.model, route.stream);
    if (!chat) return chat.error();
    WireRequest wire;
    wire.api = route.api;
    wire.text_completion = route.text_completion;
    wire.chat = std::move(*chat);
    // OpenAI's (and vLLM's) default for the legacy endpoint, not the profile's.
    constexpr std::int64_t kTextCompletionMaxTokens = 16;
    if (route.text_completion && !wire.chat.max_tokens) {
        wire.chat.max_tokens = kTextCompletionMaxTokens;
    }
    if (route.api != Api::openai) wire.chat.include_usage = true;
    for (const auto& field : request) {
        if (iequals_prefix(field.name_string(), "x-sim-")) {
            wire.sim_headers.emplace_back(field.name_string(), field.value());
        }
    }
    return wire;
}

Result<std::string> count_tokens_json(std::string_view body, const Profile& profile) {
    boost::system::error_code ec;
    boost::json::value parsed = boost::json::parse(body, ec);
    if (ec || !parsed.is_object()) return Error(Errc::bad_request, "expected a JSON object");
    // Counting needs no max_tokens; the Messages parser requires one.
    boost::json::object& o = parsed.as_object();
    if (!o.contains("max_tokens")) o["max_tokens"] = 1;
    auto chat = dialect::parse_request(Api::anthropic, boost::json::serialize(o));
    if (!chat) return chat.error();
    if (!profile.serves(chat->model)) {
        return Error(Errc::not_found, fmt::format("The model '{}' does not exist", chat->model));
    }
    const std::int64_t tokens = estimate_tokens(canonical_prompt(*chat));
    return boost::json::serialize(boost::json::object{{"input_tokens", tokens}});
}

std::string canonical_prompt(const dialect::ChatRequest& request) {
    std::string text;
    for (const auto& tool : request.tools) {
        fmt::format_to(std::back_inserter(text), "tool: {} {} {}\n", tool.name, tool.description,
                       tool.parameters);
    }
    for (const auto& message : request.messages) {
        text += dialect::to_string(message.role);
        text += ": ";
        for (const auto& part : message.content) {
            if (part.kind == dialect::ContentPart::Kind::text) {
                text += part.text;
            } else {
                text += "[image]";  // images are priced per image, not per byte, by real APIs
            }
        }
        for (const auto& call : message.tool_calls) {
            fmt::format_to(std::back_inserter(text), " call {}({})", call.name, call.arguments);
        }
        text += '\n';
    }
    return text;
}

std::string new_response_id(Api api, bool text_completion) {
    switch (api) {
        case Api::openai:
            return new_request_id(text_completion ? "cmpl-" : "chatcmpl-");
        case Api::anthropic:
            return new_request_id("msg_");
        case Api::gemini:
            return new_request_id();
        case Api::openai_responses:
            return new_request_id("resp_");
    }
    return new_request_id();
}

std::string_view tool_call_id_prefix(Api api) {
    switch (api) {
        case Api::openai:
        case Api::openai_responses:
            return "call_";
        case Api::anthropic:
            return "toolu_";
        case Api::gemini:
            return "";
    }
    return "";
}

namespace {

boost::json::object model_entry(Api api, const std::string& model) {
    boost::json::object entry;
    switch (api) {
        case Api::openai:
        case Api::openai_responses:
            entry["id"] = model;
            entry["object"] = "model";
            entry["created"] = 1'700'000'000;
            entry["owned_by"] = "tokenradar-sim";
            break;
        case Api::anthropic:
            entry["type"] = "model";
            entry["id"] = model;
            entry["display_name"] = model;
            entry["created_at"] = "2024-01-01T00:00:00Z";
            break;
        case Api::gemini:
            entry["name"] = "models/" + model;
            entry["displayName"] = model;
            entry["supportedGenerationMethods"] =
                boost::json::array{"generateContent", "streamGenerateContent"};
            break;
    }
    return entry;
}

}  // namespace

std::optional<std::string> model_json(Api api, const Profile& profile, std::string_view model) {
    if (!profile.serves(model)) return std::nullopt;
    return boost::json::serialize(model_entry(api, std::string(model)));
}

std::string models_json(Api api, const Profile& profile) {
    boost::json::array data;
    for (const auto& model : profile.models) data.push_back(model_entry(api, model));
    boost::json::object body;
    if (api == Api::gemini) {
        body["models"] = std::move(data);
    } else if (api == Api::anthropic) {
        body["first_id"] = profile.models.empty() ? "" : profile.models.front();
        body["last_id"] = profile.models.empty() ? "" : profile.models.back();
        body["has_more"] = false;
        body["data"] = std::move(data);
    } else {
        body["object"] = "list";
        body["data"] = std::move(data);
    }
    return boost::json::serialize(body);
}

std::string stats_json(const SimStats& s) {
    boost::json::object o;
    o["requests"] = s.requests;
    o["chunks"] = s.chunks;
    o["running"] = s.running;
    o["queued"] = s.queued;
    boost::json::object lateness;
    lateness["p50_us"] = static_cast<double>(s.lateness_p50_ns) / 1e3;
    lateness["p99_us"] = static_cast<double>(s.lateness_p99_ns) / 1e3;
    lateness["max_us"] = static_cast<double>(s.lateness_max_ns) / 1e3;
    o["lateness"] = std::move(lateness);
    return boost::json::serialize(o);
}

dialect::ChatResponse make_response(const RequestPlan& plan, const Answer& answer, std::string id,
                                    std::string model) {
    dialect::ChatResponse r;
    r.id = std::move(id);
    r.model = std::move(model);
    if (answer.kind() == Answer::Kind::tool_call) {
        dialect::ToolCall call = answer.call();
        call.arguments = answer.whole();
        r.tool_calls.push_back(std::move(call));
    } else {
        r.text = answer.whole();
    }
    r.finish_reason = answer.finish_reason();
    r.usage.prompt_tokens = plan.prompt_tokens;
    r.usage.cached_prompt_tokens = plan.cached_prompt_tokens;
    r.usage.output_tokens = plan.output_tokens;
    r.created = wall_now_us() / 1'000'000;
    return r;
}

StreamWriter::StreamWriter(Api api, const RequestPlan& plan, const Answer& answer, std::string id,
                           std::string model, bool include_usage, bool text_completion)
    : api_(api), plan_(plan), answer_(answer), id_(std::move(id)), model_(std::move(model)) {
    dialect::StreamMeta meta;
    meta.id = id_;
    meta.model = model_;
    meta.created = wall_now_us() / 1'000'000;
    meta.include_usage = include_usage;
    encoder_ = text_completion
                   ? std::make_unique<dialect::TextCompletionStreamEncoder>(std::move(meta))
                   : dialect::make_stream_encoder(api, std::move(meta));
}

dialect::Usage StreamWriter::usage_through(std::size_t tokens) const {
    dialect::Usage usage;
    usage.prompt_tokens = plan_.prompt_tokens;
    usage.cached_prompt_tokens = plan_.cached_prompt_tokens;
    usage.output_tokens = static_cast<std::int64_t>(tokens);
    return usage;
}

void StreamWriter::start(std::string& out) {
    if (started_) return;
    started_ = true;
    auto role = dialect::StreamDelta::make(dialect::StreamDelta::Kind::role);
    role.id = id_;
    role.name = model_;
    encoder_->encode(role, out);
    if (api_ == Api::anthropic) {
        // message_start carries the input usage on the real API.
        auto usage = dialect::StreamDelta::make(dialect::StreamDelta::Kind::usage);
        usage.usage = usage_through(0);
        encoder_->encode(usage, out);
    }
    if (answer_.kind() == Answer::Kind::tool_call) {
        // The call opens with its id and name and no arguments (OpenAI's first tool_calls
        // delta, Anthropic's content_block_start); the arguments follow chunk by chunk.
        auto call = dialect::StreamDelta::make(dialect::StreamDelta::Kind::tool_call);
        call.id = answer_.call().id;  // empty for Gemini, whose calls mostly carry none
        call.name = answer_.call().name;
        encoder_->encode(call, out);
    }
}

void StreamWriter::encode_piece(std::string piece, std::string& out) {
    if (piece.empty()) return;
    if (answer_.kind() == Answer::Kind::tool_call) {
        auto args = dialect::StreamDelta::make(dialect::StreamDelta::Kind::tool_call);
        args.arguments = std::move(piece);
        encoder_->encode(args, out);
    } else {
        encoder_->encode(dialect::StreamDelta::make_text(std::move(piece)), out);
    }
}

void StreamWriter::encode_chunk(std::size_t index, bool malformed, std::string& out) {
    const Chunk& chunk = plan_.chunks[index];
    start(out);
    tokens_sent_ = chunk.first_token + chunk.token_count;
    if (malformed) {
        out += "data: {\"malformed\":\"";
        out += plan_.chunk_text(index);
        out += "\n\n";
        return;
    }
    if (api_ == Api::gemini) {
        // Gemini repeats cumulative usage, through this chunk, on every chunk.
        auto usage = dialect::StreamDelta::make(dialect::StreamDelta::Kind::usage);
        usage.usage = usage_through(static_cast<std::size_t>(tokens_sent_));
        encoder_->encode(usage, out);
    }
    encode_piece(answer_.piece(index), out);
}

void StreamWriter::finish(std::string& out) {
    if (plan_.chunks.empty() && answer_.kind() != Answer::Kind::text) {
        // No tokens to pace: a JSON answer or a call still has to be whole.
        start(out);
        encode_piece(answer_.whole(), out);
    }
    auto finish = dialect::StreamDelta::make(dialect::StreamDelta::Kind::finish);
    finish.finish_reason = answer_.finish_reason();
    encoder_->encode(finish, out);
    auto usage = dialect::StreamDelta::make(dialect::StreamDelta::Kind::usage);
    usage.usage = usage_through(static_cast<std::size_t>(plan_.output_tokens));
    encoder_->encode(usage, out);
    encoder_->finish(out);
}

}  // namespace tokenradar::sim
