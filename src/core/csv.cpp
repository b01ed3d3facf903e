#include <tokenradar/core/csv.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>

#include <cctype>
#include <map>
#include <stdexcept>
#include <utility>

namespace tokenradar {
namespace {

namespace json = boost::json;

// "p50", "p99.9": a quantile's key, which keeps its unit at the end of the column's name.
bool quantile_key(std::string_view key) {
    return key.size() > 1 && key[0] == 'p' && std::isdigit(static_cast<unsigned char>(key[1]));
}

// The column of `key` inside the object named `parent`: ttft_ms.p50 -> ttft_p50_ms,
// ttft_ms.samples -> ttft_samples, cache.miss -> cache_miss.
std::string nested_name(std::string_view parent, std::string_view key) {
    constexpr std::string_view kMs = "_ms";
    if (parent.ends_with(kMs)) {
        const std::string_view stem = parent.substr(0, parent.size() - kMs.size());
        if (quantile_key(key)) return fmt::format("{}_{}{}", stem, key, kMs);
        return fmt::format("{}_{}", stem, key);
    }
    return fmt::format("{}_{}", parent, key);
}

std::string scalar_field(const json::value& v) {
    switch (v.kind()) {
        case json::kind::string:
            return csv_field(v.get_string(), true);
        case json::kind::int64:
            return fmt::format("{}", v.get_int64());
        case json::kind::uint64:
            return fmt::format("{}", v.get_uint64());
        case json::kind::double_:
            return fmt::format("{}", v.get_double());  // as JsonOut wrote it
        case json::kind::bool_:
            return v.get_bool() ? "true" : "false";
        default:
            return {};  // null
    }
}

// The table being built: columns in order of first appearance, rows as (column, field).
class Table {
  public:
    using Row = std::vector<std::pair<std::size_t, std::string>>;

    std::size_t column(const std::string& name) {
        const auto [it, inserted] = columns_.try_emplace(name, header_.size());
        if (inserted) header_.push_back(name);
        return it->second;
    }
    void add(Row row) { rows_.push_back(std::move(row)); }
    [[nodiscard]] std::size_t rows() const noexcept { return rows_.size(); }

    [[nodiscard]] std::string text() const {
        std::string out;
        for (std::size_t i = 0; i < header_.size(); ++i) {
            if (i > 0) out += ',';
            out += csv_field(header_[i], true);
        }
        out += "\r\n";
        std::vector<const std::string*> cells(header_.size());
        for (const Row& row : rows_) {
            std::fill(cells.begin(), cells.end(), nullptr);
            for (const auto& [c, field] : row) cells[c] = &field;
            for (std::size_t i = 0; i < cells.size(); ++i) {
                if (i > 0) out += ',';
                if (cells[i] != nullptr) out += *cells[i];
            }
            out += "\r\n";
        }
        return out;
    }

  private:
    std::vector<std::string> header_;
    std::map<std::string, std::size_t, std::less<>> columns_;
    std::vector<Row> rows_;
};

// The columns of one object's members (named `prefix` + their name), but not the array
// leading to the next level (`skip`). `parent`: the member holding `object` when nested.
void flatten(Table& table, const json::object& object, std::string_view parent,
             std::string_view prefix, std::string_view skip, Table::Row& row) {
    for (const auto& member : object) {
        const std::string_view key = member.key();
        const json::value& v = member.value();
        if (key == skip) continue;
        const std::string name = parent.empty() ? std::string(key) : nested_name(parent, key);
        if (v.is_object()) {
            flatten(table, v.get_object(), name, prefix, {}, row);
        } else if (v.is_array()) {
            std::string joined;  // ids, names: "3;4"; arrays of objects are left out
            bool scalars = true;
            for (const json::value& item : v.get_array()) {
                if (item.is_object() || item.is_array()) scalars = false;
                if (!joined.empty()) joined += ';';
                if (item.is_string()) {
                    joined.append(item.get_string().data(), item.get_string().size());
                } else {
                    joined += scalar_field(item);
                }
            }
            if (scalars) {
                row.emplace_back(table.column(fmt::format("{}{}", prefix, name)),
                                 csv_field(joined, true));
            }
        } else {
            row.emplace_back(table.column(fmt::format("{}{}", prefix, name)), scalar_field(v));
        }
    }
}

void add_rows(Table& table, const CsvShape& shape, std::size_t level, const json::object& object,
              Table::Row inherited) {
    if (level == shape.levels.size()) {
        table.add(std::move(inherited));
        return;
    }
    const CsvLevel& here = shape.levels[level];
    const json::value* items = object.if_contains(here.array);
    if (items == nullptr || !items->is_array()) return;
    for (const json::value& item : items->get_array()) {
        Table::Row row = inherited;
        if (item.is_object()) {
            const std::string_view next =
                level + 1 < shape.levels.size() ? shape.levels[level + 1].array : "";
            flatten(table, item.get_object(), "", here.prefix, next, row);
            add_rows(table, shape, level + 1, item.get_object(), std::move(row));
        } else if (item.is_array() && level + 1 == shape.levels.size()) {
            const json::array& point = item.get_array();
            for (std::size_t i = 0; i < point.size() && i < shape.point_names.size(); ++i) {
                row.emplace_back(table.column(std::string(shape.point_names[i])),
                                 scalar_field(point[i]));
            }
            table.add(std::move(row));
        }
    }
}

}  // namespace

std::string csv_field(std::string_view value, bool text) {
    std::string field;
    if (text && !value.empty() &&
        (value[0] == '=' || value[0] == '+' || value[0] == '-' || value[0] == '@' ||
         value[0] == '\t' || value[0] == '\r')) {
        field += '\'';
    }
    field.append(value);
    if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
    std::string quoted = "\"";
    for (char c : field) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    quoted += '"';
    return quoted;
}

std::string csv_from_json(std::string_view body, const CsvShape& shape) {
    const json::value doc = json::parse(body);
    if (!doc.is_object()) throw std::invalid_argument("csv_from_json: expected a JSON object");
    const json::object& root = doc.get_object();
    Table table;
    if (!shape.values_of.empty()) {
        // {"labels": {"provider": [...], ...}}: one row per value.
        const std::size_t label = table.column("label");
        const std::size_t value = table.column("value");
        const json::value* values = root.if_contains(shape.values_of);
        if (values != nullptr && values->is_object()) {
            for (const auto& member : values->get_object()) {
                if (!member.value().is_array()) continue;
                for (const json::value& v : member.value().get_array()) {
                    table.add({{label, csv_field(member.key(), true)}, {value, scalar_field(v)}});
                }
            }
        }
        return table.text();
    }
    if (shape.levels.empty()) {
        Table::Row row;
        flatten(table, root, "", "", "", row);
        table.add(std::move(row));
        return table.text();
    }
    add_rows(table, shape, 0, root, {});
    if (table.rows() == 0) {
        for (const std::string_view name : shape.empty_header) table.column(std::string(name));
    }
    return table.text();
}

}  // namespace tokenradar
