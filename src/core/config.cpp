#include <tokenradar/core/config.hpp>

#include <tokenradar/core/duration.hpp>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tokenradar {
namespace {

std::string describe(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string:
            return fmt::format("the string \"{}\"", *n.value<std::string>());
        case toml::node_type::integer:
            return fmt::format("the integer {}", *n.value<std::int64_t>());
        case toml::node_type::floating_point:
            return fmt::format("the number {}", *n.value<double>());
        case toml::node_type::boolean:
            return *n.value<bool>() ? "true" : "false";
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        default:
            return "a date/time";
    }
}

// Nullopt for a date/time, which JSON has no kind for.
std::optional<boost::json::value> to_json(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string:
            return boost::json::value(*n.value<std::string>());
        case toml::node_type::integer:
            return boost::json::value(*n.value<std::int64_t>());
        case toml::node_type::floating_point:
            return boost::json::value(*n.value<double>());
        case toml::node_type::boolean:
            return boost::json::value(*n.value<bool>());
        case toml::node_type::array: {
            boost::json::array out;
            for (const auto& element : *n.as_array()) {
                auto v = to_json(element);
                if (!v) return std::nullopt;
                out.push_back(std::move(*v));
            }
            return boost::json::value(std::move(out));
        }
        case toml::node_type::table: {
            boost::json::object out;
            for (const auto& [k, v] : *n.as_table()) {
                auto converted = to_json(v);
                if (!converted) return std::nullopt;
                out[k.str()] = std::move(*converted);
            }
            return boost::json::value(std::move(out));
        }
        default:
            return std::nullopt;
    }
}

}  // namespace

ConfigTable::ConfigTable(std::shared_ptr<const toml::table> root, const toml::table* table,
                         std::string source, std::string prefix)
    : root_(std::move(root)),
      table_(table),
      source_(std::move(source)),
      prefix_(std::move(prefix)) {}

ConfigTable ConfigTable::load_file(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        throw ConfigError(fmt::format("{}: no such file", path.string()));
    }
    try {
        auto root = std::make_shared<const toml::table>(toml::parse_file(path.string()));
        const toml::table* t = root.get();
        return ConfigTable(std::move(root), t, path.string(), {});
    } catch (const toml::parse_error& e) {
        throw ConfigError(fmt::format("{}:{}:{}: {}", path.string(), e.source().begin.line,
                                      e.source().begin.column, e.description()));
    }
}

ConfigTable ConfigTable::parse(std::string_view text, std::string source_name) {
    try {
        auto root = std::make_shared<const toml::table>(toml::parse(text, source_name));
        const toml::table* t = root.get();
        return ConfigTable(std::move(root), t, std::move(source_name), {});
    } catch (const toml::parse_error& e) {
        throw ConfigError(fmt::format("{}:{}:{}: {}", source_name, e.source().begin.line,
                                      e.source().begin.column, e.description()));
    }
}

bool ConfigTable::contains(std::string_view key) const { return node(key) != nullptr; }

const toml::node* ConfigTable::node(std::string_view key) const { return table_->get(key); }

std::string ConfigTable::dotted(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : fmt::format("{}.{}", prefix_, key);
}

std::string ConfigTable::location(const toml::node* n) const {
    const auto& where = n != nullptr ? n->source() : table_->source();
    if (where.begin.line == 0) return source_;
    return fmt::format("{}:{}", source_, where.begin.line);
}

void ConfigTable::fail(std::string_view key, std::string_view expected) const {
    const toml::node* n = node(key);
    std::string got =
        n != nullptr ? fmt::format(", got {}", describe(*n)) : std::string(" (missing)");
    throw ConfigError(
        fmt::format("{}: {}: expected {}{}", location(n), dotted(key), expected, got));
}

std::optional<std::string> ConfigTable::optional_string(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) fail(key, "a string");
    return *n->value<std::string>();
}

std::string ConfigTable::get_string(std::string_view key, std::string_view fallback) const {
    return optional_string(key).value_or(std::string(fallback));
}

std::string ConfigTable::require_string(std::string_view key) const {
    auto v = optional_string(key);
    if (!v) fail(key, "a string");
    return *v;
}

std::optional<double> ConfigTable::optional_number(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return std::nullopt;
    if (!n->is_number()) fail(key, "a number");
    return *n->value<double>();
}

double ConfigTable::get_number(std::string_view key, double fallback, double min,
                               double max) const {
    auto v = optional_number(key);
    if (!v) return fallback;
    if (*v < min || *v > max) fail(key, fmt::format("a number from {} to {}", min, max));
    return *v;
}

double ConfigTable::require_number(std::string_view key, double min, double max) const {
    if (!contains(key)) fail(key, fmt::format("a number from {} to {}", min, max));
    return get_number(key, 0, min, max);
}

std::int64_t ConfigTable::get_integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                                      std::int64_t max) const {
    const toml::node* n = node(key);
    if (n == nullptr) return fallback;
    if (!n->is_integer()) fail(key, fmt::format("an integer from {} to {}", min, max));
    auto v = *n->value<std::int64_t>();
    if (v < min || v > max) fail(key, fmt::format("an integer from {} to {}", min, max));
    return v;
}

bool ConfigTable::get_bool(std::string_view key, bool fallback) const {
    const toml::node* n = node(key);
    if (n == nullptr) return fallback;
    if (!n->is_boolean()) fail(key, "true or false");
    return *n->value<bool>();
}

std::chrono::nanoseconds ConfigTable::get_duration(std::string_view key,
                                                   std::chrono::nanoseconds fallback) const {
    const toml::node* n = node(key);
    if (n == nullptr) return fallback;
    if (!n->is_string()) fail(key, "a duration string such as \"250ms\", \"30s\" or \"7d\"");
    auto parsed = parse_duration(*n->value<std::string>());
    if (!parsed) fail(key, "a duration such as \"250ms\", \"30s\" or \"7d\"");
    return *parsed;
}

std::vector<double> ConfigTable::get_numbers(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return {};
    const toml::array* arr = n->as_array();
    if (arr == nullptr) fail(key, "an array of numbers");
    std::vector<double> out;
    for (const auto& element : *arr) {
        if (!element.is_number()) fail(key, "an array of numbers");
        out.push_back(*element.value<double>());
    }
    return out;
}

std::vector<std::string> ConfigTable::get_strings(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return {};
    const toml::array* arr = n->as_array();
    if (arr == nullptr) fail(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& element : *arr) {
        if (!element.is_string()) fail(key, "an array of strings");
        out.push_back(*element.value<std::string>());
    }
    return out;
}

std::optional<boost::json::object> ConfigTable::json_object(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return std::nullopt;
    if (!n->is_table()) fail(key, "a table");
    auto converted = to_json(*n);
    if (!converted)
        fail(key, "a table of strings, numbers, booleans, arrays and tables (no dates or times)");
    return std::move(converted->as_object());
}

std::optional<ConfigTable> ConfigTable::table(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return std::nullopt;
    if (!n->is_table()) fail(key, "a table");
    return ConfigTable(root_, n->as_table(), source_, dotted(key));
}

std::vector<ConfigTable> ConfigTable::tables(std::string_view key) const {
    const toml::node* n = node(key);
    if (n == nullptr) return {};
    const toml::array* arr = n->as_array();
    if (arr == nullptr) fail(key, "an array of tables ([[" + dotted(key) + "]])");
    std::vector<ConfigTable> out;
    std::size_t i = 0;
    for (const auto& element : *arr) {
        if (!element.is_table()) fail(key, "an array of tables");
        out.push_back(ConfigTable(root_, element.as_table(), source_,
                                  fmt::format("{}[{}]", dotted(key), i++)));
    }
    return out;
}

std::vector<std::string> ConfigTable::keys() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : *table_) out.emplace_back(k.str());
    return out;
}

void ConfigTable::reject_unknown_keys(std::initializer_list<std::string_view> known) const {
    for (const auto& [k, v] : *table_) {
        if (std::find(known.begin(), known.end(), k.str()) == known.end()) {
            throw ConfigError(fmt::format("{}: unknown key '{}' (known keys: {})", location(&v),
                                          dotted(k.str()), fmt::join(known, ", ")));
        }
    }
}

}  // namespace tokenradar
