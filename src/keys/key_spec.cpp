#include <tokenradar/keys/key_spec.hpp>

#include <tokenradar/core/labels.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <set>

namespace tokenradar::keys {
namespace {

namespace json = boost::json;

Error bad(std::string message) { return Error(Errc::bad_request, std::move(message)); }

Result<std::int64_t> limit_of(const json::value& v, std::string_view field) {
    if (const auto* i = v.if_int64(); i != nullptr && *i >= 0 && *i <= kMaxLimit) return *i;
    if (const auto* u = v.if_uint64();
        u != nullptr && *u <= static_cast<std::uint64_t>(kMaxLimit)) {
        return static_cast<std::int64_t>(*u);
    }
    return bad(
        fmt::format("{}: expected an integer from 0 to {} (0 = no limit)", field, kMaxLimit));
}

}  // namespace

Result<KeySpec> parse_key_spec(std::string_view body) {
    boost::system::error_code ec;
    json::parse_options options;
    options.max_depth = 4;
    const json::value doc = json::parse(body, ec, {}, options);
    if (ec) return bad("body: expected a JSON object (" + ec.message() + ")");
    const json::object* obj = doc.if_object();
    if (obj == nullptr) return bad("body: expected a JSON object");
    KeySpec spec;
    bool named = false;
    bool has_period = false;
    for (const auto& [name, value] : *obj) {
        if (name == "name") {
            const auto* s = value.if_string();
            if (s == nullptr || !is_simple_name(*s)) {
                return bad(fmt::format("name: expected {}", kSimpleNameRule));
            }
            spec.name = std::string(*s);
            named = true;
        } else if (name == "models") {
            const auto* a = value.if_array();
            if (a == nullptr) return bad("models: expected an array of model names");
            if (a->size() > kMaxModels) {
                return bad(fmt::format("models: at most {} names", kMaxModels));
            }
            std::set<std::string_view> seen;
            for (const auto& m : *a) {
                const auto* s = m.if_string();
                if (s == nullptr || s->empty() || s->size() > 128) {
                    return bad("models: expected model names of 1-128 bytes");
                }
                if (!seen.insert(std::string_view(*s)).second) {
                    return bad(fmt::format("models: '{}' is listed twice", std::string_view(*s)));
                }
                spec.models.emplace_back(*s);
            }
        } else if (name == "rpm" || name == "tpm" || name == "budget_tokens") {
            auto limit = limit_of(value, name);
            if (!limit) return limit.error();
            (name == "rpm" ? spec.rpm : name == "tpm" ? spec.tpm : spec.budget_tokens) = *limit;
        } else if (name == "budget_period") {
            const auto* s = value.if_string();
            if (s == nullptr) return bad("budget_period: expected \"day\" or \"month\"");
            auto period = parse_budget_period(*s);
            if (!period) return period.error();
            spec.budget_period = *period;
            has_period = true;
        } else {
            return bad(
                fmt::format("{}: unknown field (expected name, models, rpm, tpm, budget_tokens, "
                            "budget_period)",
                            std::string_view(name).substr(0, 64)));
        }
    }
    if (!named) return bad(fmt::format("name: required ({})", kSimpleNameRule));
    if (spec.budget_tokens > 0 && !has_period) {
        return bad("budget_period: required with budget_tokens (\"day\" or \"month\")");
    }
    if (spec.budget_tokens == 0 && has_period) {
        return bad("budget_period: given without budget_tokens");
    }
    return spec;
}

std::string key_spec_json(const KeySpec& spec) {
    json::array models;
    for (const auto& m : spec.models) models.emplace_back(m);
    json::object o{{"name", spec.name},
                   {"models", std::move(models)},
                   {"rpm", spec.rpm},
                   {"tpm", spec.tpm},
                   {"budget_tokens", spec.budget_tokens}};
    // Only with a budget: parse_key_spec refuses a period without one.
    if (spec.budget_period != BudgetPeriod::none)
        o["budget_period"] = to_string(spec.budget_period);
    return json::serialize(o);
}

}  // namespace tokenradar::keys
