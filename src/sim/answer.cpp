#include "answer.hpp"

#include "rng.hpp"

#include <tokenradar/sim/tokens.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace tokenradar::sim {
namespace {

namespace json = boost::json;

constexpr int kMaxDepth = 8;           // nested schemas deeper than this get null
constexpr std::int64_t kMaxItems = 3;  // minItems honoured up to this many example items

std::string escaped(std::string_view text) {
    std::string quoted = json::serialize(json::string_view(text));
    return quoted.substr(1, quoted.size() - 2);
}

const json::object* as_object(const json::value* v) {
    return v == nullptr ? nullptr : v->if_object();
}

const json::value* member(const json::object& o, std::string_view key) {
    return o.if_contains(key);
}

// The schema's type: its "type" (the first non-null one of a list), else inferred.
std::string_view type_of(const json::object& schema) {
    if (const json::value* t = member(schema, "type")) {
        if (const json::string* s = t->if_string()) return *s;
        if (const json::array* list = t->if_array()) {
            std::string_view first;
            for (const json::value& item : *list) {
                if (const json::string* s = item.if_string()) {
                    if (*s != "null") return *s;
                    first = *s;
                }
            }
            return first;
        }
    }
    if (member(schema, "properties") != nullptr) return "object";
    if (member(schema, "items") != nullptr) return "array";
    return "string";
}

// A string the words may fill: no constraint on its form or length.
bool free_string(const json::object& schema) {
    return type_of(schema) == "string" && member(schema, "enum") == nullptr &&
           member(schema, "const") == nullptr && member(schema, "format") == nullptr &&
           member(schema, "pattern") == nullptr && member(schema, "maxLength") == nullptr &&
           member(schema, "anyOf") == nullptr && member(schema, "oneOf") == nullptr;
}

std::optional<double> number_at(const json::object& schema, std::string_view key) {
    const json::value* v = member(schema, key);
    if (v == nullptr || !v->is_number()) return std::nullopt;
    return v->to_number<double>();
}

// A number inside [minimum, maximum] (exclusive bounds stepped over), 1 when unbounded.
double bounded_number(const json::object& schema, bool integer) {
    double low = -std::numeric_limits<double>::infinity();
    double high = std::numeric_limits<double>::infinity();
    const double step = integer ? 1.0 : 0.5;
    if (auto v = number_at(schema, "minimum")) low = *v;
    if (auto v = number_at(schema, "exclusiveMinimum")) low = std::max(low, *v + step);
    if (auto v = number_at(schema, "maximum")) high = *v;
    if (auto v = number_at(schema, "exclusiveMaximum")) high = std::min(high, *v - step);
    double value = std::clamp(1.0, low, std::max(low, high));
    if (integer) value = std::ceil(value);
    return value;
}

std::string string_for_format(const json::object& schema) {
    std::string value = "sim";
    if (const json::value* f = member(schema, "format"); f != nullptr && f->is_string()) {
        const std::string_view format = f->get_string();
        if (format == "date-time") value = "2024-01-01T00:00:00Z";
        if (format == "date") value = "2024-01-01";
        if (format == "time") value = "00:00:00Z";
        if (format == "email") value = "sim@example.com";
        if (format == "uri" || format == "url") value = "https://example.com/";
        if (format == "uuid") value = "00000000-0000-4000-8000-000000000000";
    }
    if (auto min = number_at(schema, "minLength");
        min && *min > static_cast<double>(value.size())) {
        value.append(static_cast<std::size_t>(std::min(*min, 4096.0)) - value.size(), 'x');
    }
    if (auto max = number_at(schema, "maxLength");
        max && *max >= 0 && *max < static_cast<double>(value.size())) {
        value.resize(static_cast<std::size_t>(*max));
    }
    return value;
}

class ExampleWriter {
  public:
    explicit ExampleWriter(std::string_view filler) : filler_(filler) {}

    void value(const json::value* schema_value, int depth) {
        const json::object* schema = as_object(schema_value);
        if (schema == nullptr) {
            // `true` / absent accept anything: a string the words may fill.
            string_value(json::object{});
            return;
        }
        if (depth > kMaxDepth) {
            out_ += "null";
            return;
        }
        if (const json::value* c = member(*schema, "const")) {
            out_ += json::serialize(*c);
            return;
        }
        if (const json::array* e =
                member(*schema, "enum") ? member(*schema, "enum")->if_array() : nullptr;
            e != nullptr && !e->empty()) {
            out_ += json::serialize(e->front());
            return;
        }
        for (std::string_view key : {"anyOf", "oneOf", "allOf"}) {
            if (const json::value* alt = member(*schema, key);
                alt != nullptr && alt->is_array() && !alt->get_array().empty()) {
                value(&alt->get_array().front(), depth + 1);
                return;
            }
        }
        const std::string_view type = type_of(*schema);
        if (type == "object") {
            object_value(*schema, depth);
        } else if (type == "array") {
            out_ += '[';
            const std::int64_t count = std::clamp<std::int64_t>(
                static_cast<std::int64_t>(number_at(*schema, "minItems").value_or(0)), 0,
                kMaxItems);
            for (std::int64_t i = 0; i < count; ++i) {
                if (i > 0) out_ += ',';
                value(member(*schema, "items"), depth + 1);
            }
            out_ += ']';
        } else if (type == "integer") {
            out_ += std::to_string(static_cast<std::int64_t>(bounded_number(*schema, true)));
        } else if (type == "number") {
            const double v = bounded_number(*schema, false);
            out_ += v == std::floor(v) && std::abs(v) < 1e15
                        ? std::to_string(static_cast<std::int64_t>(v))
                        : json::serialize(json::value(v));
        } else if (type == "boolean") {
            out_ += "true";
        } else if (type == "null") {
            out_ += "null";
        } else {
            string_value(*schema);
        }
    }

    std::string take(std::size_t& filler_at) {
        filler_at = filler_at_;
        return std::move(out_);
    }

  private:
    void string_value(const json::object& schema) {
        out_ += '"';
        if (filler_at_ == std::string::npos && free_string(schema)) {
            filler_at_ = out_.size();
            out_ += escaped(filler_);
        } else {
            out_ += escaped(string_for_format(schema));
        }
        out_ += '"';
    }

    void object_value(const json::object& schema, int depth) {
        const json::object* properties = as_object(member(schema, "properties"));
        // A set, not a search of `keys`: the schema comes from the network, and a long
        // required list must not cost quadratic time.
        std::vector<std::string_view> keys;
        std::unordered_set<std::string_view> seen;
        if (const json::value* required = member(schema, "required");
            required != nullptr && required->is_array()) {
            for (const json::value& key : required->get_array()) {
                if (key.is_string() && seen.insert(key.get_string()).second) {
                    keys.push_back(key.get_string());
                }
            }
        }
        // No required free string: the first declared one carries the words (declared, so
        // valid even under additionalProperties: false).
        bool has_free = false;
        for (std::string_view key : keys) {
            const json::object* p = properties ? as_object(member(*properties, key)) : nullptr;
            has_free = has_free || (p != nullptr && free_string(*p));
        }
        if (!has_free && filler_at_ == std::string::npos && properties != nullptr) {
            for (const auto& [key, p] : *properties) {
                if (p.is_object() && free_string(p.get_object()) && !seen.contains(key)) {
                    keys.push_back(key);
                    break;
                }
            }
        }
        out_ += '{';
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (i > 0) out_ += ',';
            out_ += json::serialize(json::string_view(keys[i]));
            out_ += ':';
            value(properties ? member(*properties, keys[i]) : nullptr, depth + 1);
        }
        out_ += '}';
    }

    std::string_view filler_;
    std::string out_;
    std::size_t filler_at_ = std::string::npos;
};

std::string tool_call_id(std::string_view prefix, Rng& rng) {
    static constexpr std::string_view kAlphabet =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string id(prefix);
    for (int i = 0; i < 24; ++i) id += kAlphabet[rng.next() % kAlphabet.size()];
    return id;
}

// The tool to call, or nullopt for a text answer.
std::optional<std::size_t> choose_tool(const dialect::ChatRequest& request,
                                       const AnswerParams& params, std::optional<ToolCallMode> mode,
                                       Rng& rng) {
    if (request.tools.empty()) return std::nullopt;
    const double u = rng.uniform();
    const auto drawn = static_cast<std::size_t>(
        rng.uniform_int(0, static_cast<std::int64_t>(request.tools.size()) - 1));
    using Mode = dialect::ToolChoice::Mode;
    const Mode choice = request.tool_choice ? request.tool_choice->mode : Mode::automatic;
    switch (choice) {
        case Mode::none:
            return std::nullopt;
        case Mode::function:
            for (std::size_t i = 0; i < request.tools.size(); ++i) {
                if (request.tools[i].name == request.tool_choice->name) return i;
            }
            return drawn;
        case Mode::required:
            return drawn;
        case Mode::automatic:
            break;
    }
    if (mode) return *mode == ToolCallMode::always ? std::optional(drawn) : std::nullopt;
    // A model that just got a tool's result answers it rather than calling again (else an
    // agent loop against a rate-1 profile would never end).
    if (!request.messages.empty() && request.messages.back().role == dialect::Role::tool)
        return std::nullopt;
    if (u < params.tool_call_rate) return drawn;
    return std::nullopt;
}

}  // namespace

std::string example_json(std::string_view schema, std::string_view filler, std::size_t& filler_at) {
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = 64;
    json::value parsed = json::parse(schema, ec, {}, options);
    json::object object_schema{{"type", "object"}};
    const json::value fallback(object_schema);
    const json::value* root = (!ec && parsed.is_object()) ? &parsed : &fallback;
    ExampleWriter writer(filler);
    writer.value(root, 0);
    return writer.take(filler_at);
}

Answer Answer::make(const dialect::ChatRequest& request, const RequestPlan& plan,
                    const AnswerParams& params, std::optional<ToolCallMode> mode,
                    std::string_view tool_call_id_prefix) {
    Answer answer(plan);
    Rng rng(plan.answer_seed);
    std::string schema;
    if (auto tool = choose_tool(request, params, mode, rng)) {
        answer.kind_ = Kind::tool_call;
        answer.call_.name = request.tools[*tool].name;
        if (!tool_call_id_prefix.empty()) answer.call_.id = tool_call_id(tool_call_id_prefix, rng);
        schema = request.tools[*tool].parameters;
    } else if (request.response_format &&
               request.response_format->kind != dialect::ResponseFormat::Kind::text) {
        answer.kind_ = Kind::json;
        schema =
            request.response_format->kind == dialect::ResponseFormat::Kind::json_schema
                ? request.response_format->schema
                : std::string(R"({"type":"object","properties":{"answer":{"type":"string"}}})");
    } else {
        return answer;
    }

    // The words of each chunk, escaped, laid end to end in the free string; without one the
    // JSON text is cut into even byte slices.
    std::vector<std::string> words;
    words.reserve(plan.chunks.size());
    std::string filler;
    for (std::size_t c = 0; c < plan.chunks.size(); ++c) {
        words.push_back(plan.chunk_text(c));
        filler += words.back();
    }
    std::size_t filler_at = std::string::npos;
    answer.json_ = example_json(schema, filler, filler_at);
    const std::size_t chunks = plan.chunks.size();
    answer.ends_.resize(chunks);
    if (filler_at != std::string::npos) {
        std::size_t end = filler_at;
        for (std::size_t c = 0; c < chunks; ++c) {
            end += escaped(words[c]).size();
            answer.ends_[c] = end;
        }
    } else {
        for (std::size_t c = 0; c < chunks; ++c)
            answer.ends_[c] = answer.json_.size() * (c + 1) / chunks;
    }
    if (chunks > 0) answer.ends_.back() = answer.json_.size();
    return answer;
}

std::string Answer::piece(std::size_t chunk) const {
    if (kind_ == Kind::text) return plan_->chunk_text(chunk);
    const std::size_t begin = chunk == 0 ? 0 : ends_.at(chunk - 1);
    return json_.substr(begin, ends_.at(chunk) - begin);
}

std::string Answer::whole() const {
    return kind_ == Kind::text ? join_tokens(plan_->tokens) : json_;
}

dialect::FinishReason Answer::finish_reason() const noexcept {
    switch (kind_) {
        case Kind::tool_call:
            return dialect::FinishReason::tool_calls;
        case Kind::json:
            return dialect::FinishReason::stop;
        case Kind::text:
            break;
    }
    return plan_->finish_reason == FinishReason::stop ? dialect::FinishReason::stop
                                                      : dialect::FinishReason::length;
}

}  // namespace tokenradar::sim
