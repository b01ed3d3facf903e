#pragma once
// Reading TOML configuration (profiles, workloads, gateway config) so that every error names
// the file, the line and the key, and says what was expected. Loading throws ConfigError:
// configuration errors are startup errors, caught once in main.

#include <boost/json/object.hpp>
#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tokenradar {

class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A view of one TOML table plus where it came from. Cheap to copy; keeps the document alive.
class ConfigTable {
  public:
    static ConfigTable load_file(const std::filesystem::path& path);
    static ConfigTable parse(std::string_view text, std::string source_name);

    [[nodiscard]] bool contains(std::string_view key) const;

    // Typed getters. A missing key gives the fallback (or nullopt); a key of the wrong type
    // or out of range throws ConfigError naming file:line and the dotted key.
    std::optional<std::string> optional_string(std::string_view key) const;
    std::string get_string(std::string_view key, std::string_view fallback) const;
    std::string require_string(std::string_view key) const;
    std::optional<double> optional_number(std::string_view key) const;
    double get_number(std::string_view key, double fallback, double min, double max) const;
    double require_number(std::string_view key, double min, double max) const;
    std::int64_t get_integer(std::string_view key, std::int64_t fallback, std::int64_t min,
                             std::int64_t max) const;
    bool get_bool(std::string_view key, bool fallback) const;
    // A duration written as a string ("250ms", "1.5s", "7d"; see duration.hpp).
    std::chrono::nanoseconds get_duration(std::string_view key,
                                          std::chrono::nanoseconds fallback) const;
    std::vector<double> get_numbers(std::string_view key) const;  // empty when missing
    std::vector<std::string> get_strings(std::string_view key) const;

    // A table as a JSON object (strings, integers, floats, booleans, arrays and tables map
    // to their JSON kinds; a date/time fails). For tables passed through to another program
    // as JSON, such as bench's `[extra_body]`.
    std::optional<boost::json::object> json_object(std::string_view key) const;

    std::optional<ConfigTable> table(std::string_view key) const;
    std::vector<ConfigTable> tables(std::string_view key) const;  // an array of tables
    std::vector<std::string> keys() const;

    // Fails on any key not in `known`, so a typo is an error rather than a silent default.
    void reject_unknown_keys(std::initializer_list<std::string_view> known) const;

    [[noreturn]] void fail(std::string_view key, std::string_view expected) const;

    [[nodiscard]] const std::string& source_name() const noexcept { return source_; }

  private:
    ConfigTable(std::shared_ptr<const toml::table> root, const toml::table* table,
                std::string source, std::string prefix);
    const toml::node* node(std::string_view key) const;
    std::string location(const toml::node* n) const;
    std::string dotted(std::string_view key) const;

    std::shared_ptr<const toml::table> root_;
    const toml::table* table_;
    std::string source_;
    std::string prefix_;
};

}  // namespace tokenradar
